"""Metric registry (lm-eval style) and the result shape every scorer returns.

Names map to ``"module:attr"`` strings, so importing this module (or listing metrics for
``babelrag --help``) imports no metric module and none of their heavy dependencies. A metric module
marks its scorers with ``@register("name")``; the decorator checks the name is in the lazy table so a
typo cannot silently create a second, undiscoverable metric.

Every scorer returns a :class:`ScoreResult`: per-item records (a flat dict of named scores per query
id, MIRAGE-style) plus aggregates with a bootstrap confidence interval over questions.
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from babelrag.errors import ConfigError
from babelrag.stats import Estimate, bootstrap_ci

Scorer = Callable[..., "ScoreResult"]

_PKG = "babelrag.evaluators"

# name -> "module:attr". Extend with register_lazy() from plug-ins.
_LAZY: dict[str, str] = {
    "rage.citations": f"{_PKG}.citations:score_citations",
    "rage.random_citations": f"{_PKG}.citations:score_random_citations",
    "mirage.heuristics": f"{_PKG}.mirage:score_heuristics",
    "xrag.panel": f"{_PKG}.xrag:score_panel",
    "garage": f"{_PKG}.garage:score_garage",
    "ragas.faithfulness": f"{_PKG}.ragas:score_faithfulness",
    "ragas.answer_relevance": f"{_PKG}.ragas:score_answer_relevance",
    "ragas.context_relevance": f"{_PKG}.ragas:score_context_relevance",
}
_LOADED: dict[str, Scorer] = {}


def register(name: str) -> Callable[[Scorer], Scorer]:
    """Decorator marking ``fn`` as the scorer for ``name`` (which must be in the lazy table)."""

    def deco(fn: Scorer) -> Scorer:
        target = _LAZY.get(name)
        here = f"{fn.__module__}:{fn.__qualname__}"
        if target is None:
            _LAZY[name] = here  # a plug-in registering itself eagerly
        elif target != here:
            raise ConfigError(f"metric {name!r} is declared as {target} but {here} registers it")
        _LOADED[name] = fn
        return fn

    return deco


def register_lazy(name: str, target: str) -> None:
    """Declare a metric by import path without importing it (for plug-ins)."""
    if ":" not in target:
        raise ConfigError(f"metric target must look like 'module:function', got {target!r}")
    if name in _LAZY and _LAZY[name] != target:
        raise ConfigError(f"metric {name!r} is already declared as {_LAZY[name]}")
    _LAZY[name] = target


def names() -> list[str]:
    """All declared metric names (no imports happen)."""
    return sorted(_LAZY)


def get(name: str) -> Scorer:
    """The scorer for ``name``, importing its module on first use."""
    if name in _LOADED:
        return _LOADED[name]
    target = _LAZY.get(name)
    if target is None:
        raise ConfigError(f"unknown metric {name!r}; known metrics: {', '.join(names())}")
    module_name, attr = target.split(":", 1)
    module = importlib.import_module(module_name)
    fn = getattr(module, attr, None)
    if fn is None:
        raise ConfigError(f"metric {name!r}: {module_name} has no attribute {attr!r}")
    _LOADED[name] = fn
    return fn


@dataclass
class ScoreResult:
    """Per-item records plus aggregates; ``counts`` holds skips/errors so nothing vanishes silently."""

    metric: str
    items: list[dict[str, Any]]
    aggregate: dict[str, Estimate]
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "aggregate": {k: v.as_dict() for k, v in self.aggregate.items()},
            "counts": dict(self.counts),
            "items": self.items,
        }


def _finite(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    return isinstance(value, (int, float)) and math.isfinite(value)


def summarise(
    items: Sequence[Mapping[str, Any]],
    keys: Iterable[str],
    rounds: int = 1000,
    seed: int = 0,
    counts: dict[str, int] | None = None,
) -> tuple[dict[str, Estimate], dict[str, int]]:
    """Mean of each key over items with a percentile bootstrap CI over questions.

    Items whose value is missing/NaN for a key are left out of that key's mean and counted as
    ``<key>_undefined`` (never silently averaged as zero).
    """
    counts = dict(counts or {})
    agg: dict[str, Estimate] = {}
    for key in keys:
        vals = [float(it[key]) for it in items if _finite(it.get(key))]
        missing = len(items) - len(vals)
        if missing:
            counts[f"{key}_undefined"] = counts.get(f"{key}_undefined", 0) + missing
        agg[key] = bootstrap_ci(vals, rounds=rounds, seed=seed)
    return agg, counts


def make_result(
    metric: str,
    items: list[dict[str, Any]],
    keys: Iterable[str],
    rounds: int = 1000,
    seed: int = 0,
    counts: dict[str, int] | None = None,
) -> ScoreResult:
    """Build a ScoreResult from per-item dicts (each must carry ``query_id``)."""
    for i, it in enumerate(items):
        if "query_id" not in it:
            raise ValueError(f"{metric}: item {i} has no 'query_id'")
    agg, counts = summarise(items, keys, rounds=rounds, seed=seed, counts=counts)
    return ScoreResult(metric=metric, items=items, aggregate=agg, counts=counts)
