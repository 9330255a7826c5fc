"""Evaluators: metrics of the seed papers behind a lazy registry (see registry.py, docs/evaluators.md)."""
