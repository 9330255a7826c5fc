"""Small statistics shared by annotation agreement and evaluators (one implementation each).

Kept numpy-only so that importing it is cheap; tests compare against sklearn/scipy.
"""
from __future__ import annotations

from collections import Counter
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Optional

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


def krippendorff_alpha(units: Sequence[Sequence[Optional[Hashable]]]) -> float:
    """Krippendorff's alpha for nominal labels; ``units[u]`` holds every coder's value for unit u (None =
    that coder gave none). Units with fewer than two values are not pairable and are left out (Krippendorff
    2011, "Computing Krippendorff's Alpha-Reliability": coincidence matrix, alpha = 1 - D_o / D_e).
    NaN when no unit is pairable; 1.0 when every pairable value is the same label (no variation to explain)."""
    coincidences: Counter = Counter()
    for unit in units:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            continue
        for i, c in enumerate(values):
            for j, k in enumerate(values):
                if i != j:
                    coincidences[(c, k)] += 1.0 / (m - 1)
    if not coincidences:
        return float("nan")
    n_c: Counter = Counter()
    for (c, _), w in coincidences.items():
        n_c[c] += w
    n = sum(n_c.values())
    observed = sum(w for (c, k), w in coincidences.items() if c != k)
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k)
    if expected == 0:
        return 1.0 if observed == 0 else 0.0
    return float(1.0 - (n - 1) * observed / expected)


@dataclass(frozen=True)
class PPIMean:
    """A prediction-powered estimate of a mean with its CLT confidence interval (Angelopoulos et al. 2023)."""

    value: float
    low: float
    high: float
    labelled: int  # n: items with a human label (they correct the judge)
    unlabelled: int  # N: items only the judge scored
    judge_mean: float  # the judge's mean on the unlabelled items (before correction)
    rectifier: float  # mean of (judge - human) on the labelled items: the judge's bias

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "ci_low": self.low, "ci_high": self.high, "labelled": self.labelled,
                "unlabelled": self.unlabelled, "judge_mean": self.judge_mean, "rectifier": self.rectifier}


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def clt_mean(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): the classical normal-approximation interval (NaN bounds below two values)."""
    arr = np.asarray(values, dtype=float)
    nan = float("nan")
    if arr.size == 0:
        return nan, nan, nan
    mean = float(arr.mean())
    if arr.size < 2:
        return mean, nan, nan
    half = _z(confidence) * math.sqrt(float(arr.var(ddof=1)) / arr.size)
    return mean, mean - half, mean + half


def ppi_mean(judge_unlabelled: Sequence[float], judge_labelled: Sequence[float], human: Sequence[float],
             confidence: float = 0.95) -> PPIMean:
    """Prediction-powered mean (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic 2023, Science 382: "Prediction-
    powered inference", the mean-estimation case): theta = mean(f on the N unlabelled) - mean(f - Y on the n
    labelled), interval theta +- z * sqrt(var(f)/N + var(f - Y)/n). The two sets are disjoint, as in the paper,
    so the two terms are independent; with no unlabelled item it is the classical mean of the human labels."""
    f_u = np.asarray(judge_unlabelled, dtype=float)
    f_l, y = np.asarray(judge_labelled, dtype=float), np.asarray(human, dtype=float)
    if f_l.size != y.size:
        raise ValueError(f"judge and human labels differ in length: {f_l.size} vs {y.size}")
    nan = float("nan")
    if y.size < 2:
        return PPIMean(nan, nan, nan, int(y.size), int(f_u.size), nan, nan)
    rect = f_l - y
    z = _z(confidence)
    if f_u.size == 0:
        value, var = float(y.mean()), float(y.var(ddof=1)) / y.size
        judge_mean = nan
    else:
        judge_mean = float(f_u.mean())
        value = judge_mean - float(rect.mean())
        var = (float(f_u.var(ddof=1)) / f_u.size if f_u.size > 1 else 0.0) + float(rect.var(ddof=1)) / y.size
    half = z * math.sqrt(var)
    return PPIMean(value, value - half, value + half, int(y.size), int(f_u.size), judge_mean, float(rect.mean()))


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
