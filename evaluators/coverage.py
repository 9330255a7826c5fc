"""Coverage: how many of the scored instances each system answered, and what an unanswered one scores.

A system is scored on every instance of the split, not on the ones it chose (or managed) to answer: an
instance missing from an ``--answers`` file, or whose generation call failed, is *unanswered* and counts
as wrong in every score (its worst value: accuracy 0, citation recall 0, a lost battle, ...). Otherwise a
system answering 2 easy questions out of 20 would rank above one answering all 20. The leaderboard shows
each system's coverage (answered / total) and results.json warns about every system below 100 %.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from babelrag.evaluators.results import ScoreResult, summarise


@dataclass(frozen=True)
class Coverage:
    """One system's answered instances out of the instances scored."""

    model: str
    answered: int
    total: int

    @property
    def unanswered(self) -> int:
        return self.total - self.answered

    @property
    def share(self) -> float:
        return self.answered / self.total if self.total else 0.0

    def cell(self) -> str:
        """``2/20``: what the leaderboard shows."""
        return f"{self.answered}/{self.total}"

    def warning(self) -> str:
        return (f"model {self.model!r} answered {self.answered} of {self.total} instances ({self.share:.0%}): "
                f"the {self.unanswered} unanswered count as wrong in every score")


def coverage(answers: Sequence[Any], total: int) -> dict[str, Coverage]:
    """Per model: answers that are answers (``ok``) out of ``total`` instances scored."""
    answered = Counter(a.model for a in answers if a.ok)
    models = sorted({a.model for a in answers})
    return {m: Coverage(m, answered[m], total) for m in models}


def coverage_warnings(cov: dict[str, Coverage]) -> list[str]:
    return [c.warning() for c in cov.values() if c.answered < c.total]


def with_unanswered_rows(result: ScoreResult, rows: list[dict[str, Any]], keys: Sequence[str], rounds: int,
                         seed: int) -> ScoreResult:
    """``result`` (a ScoreResult over the answered items) with ``rows`` for the unanswered ones added and
    the aggregates of ``keys`` recomputed over all of them (their ``_undefined`` counts too)."""
    if not rows:
        return result
    result.items.extend({**r, "unanswered": True} for r in rows)
    aggregate, undefined = summarise(result.items, keys, rounds=rounds, seed=seed)
    result.aggregate.update(aggregate)
    for key in keys:
        result.counts.pop(f"{key}_undefined", None)
    result.counts.update(undefined)
    result.counts["unanswered"] = result.counts.get("unanswered", 0) + len(rows)
    return result
