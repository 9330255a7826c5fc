"""Release: validate a finished build, split it, and write a Hub-layout dataset folder with its card.

Also exports (XRAG-compatible JSONL, RAGE/BEIR folders) and loaders that read external benchmarks
(XRAG, GaRAGe, BEIR) into our records. Every heavy import stays inside functions.
"""
