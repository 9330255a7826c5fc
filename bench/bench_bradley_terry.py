"""Bradley-Terry + bootstrap: babelrag's batched fit vs FastChat's per-round logistic regression.

Workload (issue 8): 20 models x 100 queries x all 190 pairs = 19,000 battles (10 % ties), 1,000
bootstrap rounds. Baseline, measured in the same run: FastChat's ``get_bootstrap_result`` shape —
resample battles with replacement, expand each battle into two rows (ties = one win each), refit
``LogisticRegression(fit_intercept=False, penalty=None, tol=1e-6)`` per round. The baseline is timed on
``--baseline-rounds`` rounds (default 30) and scaled linearly to 1,000 (each round is an independent
fit of the same size, so per-round cost is flat); the script says so in its output.

Point estimates are compared with a tightly converged reference fit (newton-cg, tol 1e-12) of the
same expanded data, both centred to mean rating 1000 on the Elo scale (400 / ln 10 per logit).

    .venv/bin/python bench/bench_bradley_terry.py [--rounds 1000] [--baseline-rounds 30]
"""
from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

from babelrag.evaluators.bradley_terry import bradley_terry


def make_battles(n_models: int, n_queries: int, seed: int) -> list[tuple[str, str, str]]:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 0.8, n_models)
    names = [f"model-{k:02d}" for k in range(n_models)]
    out = []
    for a in range(n_models):
        for b in range(a + 1, n_models):
            for _ in range(n_queries):
                x, y = (a, b) if rng.random() < 0.5 else (b, a)  # randomised position
                p = 1.0 / (1.0 + math.exp(-(strength[x] - strength[y])))
                w = "tie" if rng.random() < 0.1 else ("model_a" if rng.random() < p else "model_b")
                out.append((names[x], names[y], w))
    return out


def expanded(battles, models):
    """FastChat's design matrix: one row per battle, duplicated; ties = one win for each side."""
    pos = {m: k for k, m in enumerate(models)}
    n = len(battles)
    x = np.zeros((n, len(models)))
    x[np.arange(n), [pos[a] for a, _, _ in battles]] = math.log(10)
    x[np.arange(n), [pos[b] for _, b, _ in battles]] = -math.log(10)
    w = np.array([w for *_, w in battles])
    y = np.concatenate([(w == "model_a") | (w == "tie"), w == "model_a"]).astype(float)
    return np.concatenate([x, x]), y


def centred(coef: np.ndarray) -> np.ndarray:
    r = 400.0 * coef
    return r - r.mean() + 1000.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--baseline-rounds", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from sklearn.linear_model import LogisticRegression

    battles = make_battles(args.models, args.queries, args.seed)
    print(f"{len(battles)} battles, {args.models} models, {args.rounds} bootstrap rounds")

    t0 = time.perf_counter()
    ours = bradley_terry(battles, rounds=args.rounds, seed=args.seed)
    t_ours = time.perf_counter() - t0
    print(f"babelrag batched Newton: {t_ours:.2f} s for fit + {args.rounds} rounds "
          f"({ours.unconverged_rounds} unconverged)")

    x, y = expanded(battles, ours.models)
    n = len(battles)
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn's penalty=None deprecation notice
        for _ in range(args.baseline_rounds):
            idx = rng.integers(0, n, n)
            rows = np.concatenate([idx, idx + n])
            LogisticRegression(fit_intercept=False, penalty=None, tol=1e-6).fit(x[rows], y[rows])
    t_base = (time.perf_counter() - t0) / args.baseline_rounds * args.rounds
    print(f"FastChat-style LR refit: {t_base:.2f} s for {args.rounds} rounds "
          f"(measured on {args.baseline_rounds} rounds, scaled linearly)")

    ref = LogisticRegression(fit_intercept=False, C=np.inf, solver="newton-cg", tol=1e-12, max_iter=1000)
    ref.fit(x, y)
    gap = float(np.abs(centred(ref.coef_[0]) - ours.rating).max())
    print(f"max |rating difference| vs converged sklearn fit: {gap:.2e} (target < 1e-6)")
    print(f"speed-up ratio (baseline / ours): {t_base / t_ours:.1f}x (target >= 5x); "
          f"ours {'within' if t_ours <= 10 else 'OVER'} the 10 s budget")


if __name__ == "__main__":
    main()
