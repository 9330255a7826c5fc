"""Small statistics shared by annotation agreement and evaluators (one implementation each).

Kept numpy-only so that importing it is cheap; tests compare against sklearn/scipy.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np


def raw_agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Share of items on which two annotators gave the same label."""
    if len(a) != len(b):
        raise ValueError(f"label lists differ in length: {len(a)} vs {len(b)}")
    if not a:
        return float("nan")
    return sum(x == y for x, y in zip(a, b)) / len(a)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa for two annotators (same definition as sklearn.metrics.cohen_kappa_score).

    When both annotators use a single identical label throughout, expected agreement is 1 and
    kappa is undefined; we return 1.0 if they agree perfectly (as raters are indistinguishable), which
    is the convention callers expect for "complete agreement", and document it here.
    """
    if len(a) != len(b):
        raise ValueError(f"label lists differ in length: {len(a)} vs {len(b)}")
    n = len(a)
    if n == 0:
        return float("nan")
    p_o = raw_agreement(a, b)
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb.get(k, 0) for k in ca) / (n * n)
    if p_e >= 1.0:
        return 1.0 if p_o >= 1.0 else 0.0
    return (p_o - p_e) / (1.0 - p_e)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float:
    """Fleiss' kappa; ``ratings[i]`` is the list of labels item i received (same count per item).

    Matches statsmodels.stats.inter_rater.fleiss_kappa on the aggregated count table.
    """
    if not ratings:
        return float("nan")
    n_raters = {len(r) for r in ratings}
    if len(n_raters) != 1:
        raise ValueError(f"every item needs the same number of ratings, got {sorted(n_raters)}")
    m = n_raters.pop()
    if m < 2:
        raise ValueError("Fleiss' kappa needs at least 2 ratings per item")
    categories = sorted({label for r in ratings for label in r}, key=repr)
    index = {c: j for j, c in enumerate(categories)}
    table = np.zeros((len(ratings), len(categories)))
    for i, r in enumerate(ratings):
        for label in r:
            table[i, index[label]] += 1
    n_items = table.shape[0]
    p_j = table.sum(axis=0) / (n_items * m)
    p_i = (np.square(table).sum(axis=1) - m) / (m * (m - 1))
    p_bar = p_i.mean()
    p_e = np.square(p_j).sum()
    if p_e >= 1.0:
        return 1.0 if p_bar >= 1.0 else 0.0
    return float((p_bar - p_e) / (1.0 - p_e))


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a bootstrap confidence interval."""

    value: float
    low: float
    high: float
    n: int

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "ci_low": self.low, "ci_high": self.high, "n": self.n}


def bootstrap_ci(
    values: Sequence[float],
    statistic: Callable[[np.ndarray], float] = np.mean,
    rounds: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Estimate:
    """Percentile bootstrap over items (questions); seeded so reports are reproducible."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        nan = float("nan")
        return Estimate(nan, nan, nan, 0)
    point = float(statistic(arr))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.size, size=(rounds, arr.size))
    if statistic is np.mean:
        stats = arr[idx].mean(axis=1)
    else:
        stats = np.array([statistic(arr[row]) for row in idx])
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return Estimate(point, float(low), float(high), int(arr.size))


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b (ties handled), equal to scipy.stats.kendalltau's default."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size != b.size:
        raise ValueError(f"rankings differ in length: {a.size} vs {b.size}")
    if a.size < 2:
        return float("nan")
    i, j = np.triu_indices(a.size, k=1)
    da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    concordant_minus_discordant = float((da * db).sum())
    n_a, n_b = float((da != 0).sum()), float((db != 0).sum())
    if n_a == 0 or n_b == 0:
        return float("nan")
    return concordant_minus_discordant / np.sqrt(n_a * n_b)
