"""Bradley-Terry ratings from pairwise battles with bootstrap confidence intervals (FastChat-style).

Same model as FastChat's ``compute_mle_elo``: P(a beats b) = sigmoid(theta_a - theta_b), ties count
as half a win for each side, unpenalised maximum likelihood, reported on the Elo scale
``rating = scale * theta / ln(base) + init``. Differences from refitting a logistic regression on
every expanded battle: battles are compressed to unique (model_a, model_b, outcome) rows with
counts; a bootstrap round resamples those counts with one multinomial draw (identical in
distribution to resampling battles with replacement); and all rounds are fitted together with a
batched Newton method on the weighted log-likelihood. The scale is fixed by centring (mean rating =
``init``) or, with ``anchor``, by pinning one model's rating to ``init``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from babelrag.errors import InputError

OUTCOMES = ("model_a", "model_b", "tie")
_WIN_SHARE = np.array([1.0, 0.0, 0.5])  # share of a win credited to model_a per outcome


@dataclass(frozen=True)
class Battle:
    """One judged comparison; ``winner`` is "model_a", "model_b" or "tie"."""

    model_a: str
    model_b: str
    winner: str


@dataclass(frozen=True)
class CompressedBattles:
    """Unique (a, b, outcome) rows with counts, models indexed by position in ``models``."""

    models: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray  # index into OUTCOMES
    count: np.ndarray

    @property
    def n_battles(self) -> int:
        return int(self.count.sum())


def compress(battles: Iterable[Battle | tuple[str, str, str]]) -> CompressedBattles:
    """Count unique (model_a, model_b, outcome) rows; rejects self-battles and unknown outcomes."""
    counter: dict[tuple[str, str, int], int] = {}
    for k, bt in enumerate(battles):
        a, b, w = (bt.model_a, bt.model_b, bt.winner) if isinstance(bt, Battle) else bt
        if w not in OUTCOMES:
            raise InputError(f"battle {k}: winner {w!r} must be one of {OUTCOMES}")
        if a == b:
            raise InputError(f"battle {k}: model {a!r} plays itself; drop self-battles before fitting")
        key = (a, b, OUTCOMES.index(w))
        counter[key] = counter.get(key, 0) + 1
    if not counter:
        raise InputError("no battles to fit a Bradley-Terry model on")
    models = tuple(sorted({m for a, b, _ in counter for m in (a, b)}))
    pos = {m: i for i, m in enumerate(models)}
    keys = list(counter)
    return CompressedBattles(
        models=models,
        a=np.array([pos[k[0]] for k in keys]),
        b=np.array([pos[k[1]] for k in keys]),
        outcome=np.array([k[2] for k in keys]),
        count=np.array([counter[k] for k in keys], dtype=float),
    )


def _pair_maps(cb: CompressedBattles) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Map unique rows onto unordered pairs i<j: wins-of-i weight and battle weight matrices (U x P)."""
    lo, hi = np.minimum(cb.a, cb.b), np.maximum(cb.a, cb.b)
    pair_keys, pair_idx = np.unique(lo * len(cb.models) + hi, return_inverse=True)
    i, j = pair_keys // len(cb.models), pair_keys % len(cb.models)
    share_a = _WIN_SHARE[cb.outcome]
    share_lo = np.where(cb.a == lo, share_a, 1.0 - share_a)
    u, p = len(cb.count), len(pair_keys)
    win_map = np.zeros((u, p))
    n_map = np.zeros((u, p))
    win_map[np.arange(u), pair_idx] = share_lo
    n_map[np.arange(u), pair_idx] = 1.0
    return i, j, win_map, n_map


def _fit_batched(
    i: np.ndarray, j: np.ndarray, wins: np.ndarray, n: np.ndarray, m: int,
    l2: float = 0.0, tol: float = 1e-10, max_iter: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """Newton's method for R independent BT fits at once; returns (theta R x M, converged R).

    ``wins``/``n`` are R x P (wins of i over j, battles between i and j). The sum-to-zero gauge is
    fixed by adding the all-ones matrix / m to the (negative) Hessian, which leaves the step inside
    the mean-zero subspace because the gradient is orthogonal to the ones vector.
    """
    r = wins.shape[0]
    theta = np.zeros((r, m))
    rows = np.arange(m)
    converged = np.zeros(r, dtype=bool)
    inc = np.zeros((len(i), m))  # signed incidence: +1 at i, -1 at j
    inc[np.arange(len(i)), i] = 1.0
    inc[np.arange(len(i)), j] = -1.0
    for _ in range(max_iter):
        d = theta[:, i] - theta[:, j]
        p = 1.0 / (1.0 + np.exp(-np.clip(d, -60.0, 60.0)))
        resid = wins - n * p
        grad = resid @ inc
        v = n * p * (1.0 - p)
        hess = np.zeros((r, m, m))
        hess[:, i, j] = -v
        hess[:, j, i] = -v
        # + 1e-9: keeps rounds whose resample has no finite MLE solvable (they end unconverged);
        # it does not move the fixed point, where the gradient is zero.
        hess[:, rows, rows] += v @ np.abs(inc) + l2 + 1e-9
        hess += 1.0 / m
        grad -= l2 * theta
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        big = np.abs(step).max(axis=1, keepdims=True)
        step *= np.minimum(1.0, 4.0 / np.maximum(big, 1e-300))  # damp wild first steps
        theta += step
        theta -= theta.mean(axis=1, keepdims=True)
        converged = big[:, 0] < tol
        if converged.all():
            break
    return theta, converged


def _check_identifiable(models: Sequence[str], i: np.ndarray, j: np.ndarray, wins: np.ndarray, n: np.ndarray) -> None:
    """The MLE is finite iff the 'has beaten' graph is strongly connected (Zermelo/Ford)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    m = len(models)
    src = np.concatenate([i[wins > 0], j[(n - wins) > 0]])
    dst = np.concatenate([j[wins > 0], i[(n - wins) > 0]])
    graph = coo_matrix((np.ones(len(src)), (src, dst)), shape=(m, m))
    k, labels = connected_components(graph, directed=True, connection="strong")
    if k > 1:
        groups = [sorted(models[x] for x in np.flatnonzero(labels == g)) for g in range(k)]
        raise InputError(
            "Bradley-Terry ratings are unbounded: some models never lose (or never win) against the "
            f"others (groups {groups}); add battles or pass l2 > 0 to regularise"
        )


@dataclass(frozen=True)
class BTResult:
    """Ratings on the Elo scale with bootstrap percentile intervals."""

    models: tuple[str, ...]
    theta: np.ndarray  # natural-log strengths, mean zero
    rating: np.ndarray
    low: np.ndarray
    high: np.ndarray
    rounds: int
    n_battles: int
    unconverged_rounds: int

    def leaderboard(self) -> list[dict[str, Any]]:
        order = np.argsort(-self.rating, kind="stable")
        return [
            {
                "rank": k + 1, "model": self.models[x], "rating": float(self.rating[x]),
                "ci_low": float(self.low[x]), "ci_high": float(self.high[x]), "theta": float(self.theta[x]),
            }
            for k, x in enumerate(order)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds, "n_battles": self.n_battles,
            "unconverged_rounds": self.unconverged_rounds, "leaderboard": self.leaderboard(),
        }


def bradley_terry(
    battles: Iterable[Battle | tuple[str, str, str]] | CompressedBattles,
    rounds: int = 1000,
    seed: int = 0,
    scale: float = 400.0,
    base: float = 10.0,
    init: float = 1000.0,
    anchor: str | None = None,
    l2: float = 0.0,
    confidence: float = 0.95,
) -> BTResult:
    """Fit BT on all battles, then ``rounds`` bootstrap refits; CIs are percentile quantiles."""
    cb = battles if isinstance(battles, CompressedBattles) else compress(battles)
    m = len(cb.models)
    if anchor is not None and anchor not in cb.models:
        raise InputError(f"anchor model {anchor!r} has no battles; models: {', '.join(cb.models)}")
    i, j, win_map, n_map = _pair_maps(cb)
    counts = cb.count[None, :]
    wins, n = counts @ win_map, counts @ n_map
    if l2 <= 0:
        _check_identifiable(cb.models, i, j, wins[0], n[0])
    theta, _ = _fit_batched(i, j, wins, n, m, l2=l2)
    to_rating = scale / math.log(base)

    def ratings(th: np.ndarray) -> np.ndarray:
        shift = th[..., cb.models.index(anchor)][..., None] if anchor is not None else 0.0
        return to_rating * (th - shift) + init

    point = ratings(theta)[0]
    low = high = point.copy()
    unconverged = 0
    if rounds > 0:
        rng = np.random.default_rng(seed)
        total = cb.n_battles
        sampled = rng.multinomial(total, cb.count / total, size=rounds).astype(float)
        boot, conv = _fit_batched(i, j, sampled @ win_map, sampled @ n_map, m, l2=l2)
        unconverged = int((~conv).sum())
        alpha = (1.0 - confidence) / 2.0
        low, high = np.quantile(ratings(boot), [alpha, 1.0 - alpha], axis=0)
    return BTResult(cb.models, theta[0], point, low, high, rounds, cb.n_battles, unconverged)
