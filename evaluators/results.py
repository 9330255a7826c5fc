"""The result shape every metric returns: per-item records plus aggregates with confidence intervals.

Per-item records are a flat dict of named scores per query id (MIRAGE-style); aggregates are means with a
percentile bootstrap CI over questions. A value that is undefined for an item (None/NaN) is left out of
its mean and counted as ``<key>_undefined`` — never averaged as zero.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from babelrag.stats import Estimate, bootstrap_ci


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


def merge_results(metric: str, parts: Sequence[ScoreResult]) -> ScoreResult:
    """One result from several scorers of one metric (e.g. Ragas' three): items joined by query id,
    aggregates and counts side by side (a key two parts share is an error, not an overwrite)."""
    items: dict[str, dict[str, Any]] = {}
    aggregate: dict[str, Estimate] = {}
    counts: dict[str, int] = {}
    for part in parts:
        for row in part.items:
            items.setdefault(row["query_id"], {}).update(row)
        for key, est in part.aggregate.items():
            if key in aggregate:
                raise ValueError(f"{metric}: aggregate {key!r} comes from two scorers")
            aggregate[key] = est
        for key, n in part.counts.items():
            counts[key] = counts.get(key, 0) + n
    return ScoreResult(metric=metric, items=list(items.values()), aggregate=aggregate, counts=counts)
