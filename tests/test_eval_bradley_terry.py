"""Bradley-Terry fit and bootstrap on hand-computed cases and against sklearn's logistic regression."""
import math

import numpy as np
import pytest

from babelrag.errors import InputError
from babelrag.evaluators.bradley_terry import Battle, bradley_terry, compress


def _battles(spec):
    out = []
    for (a, b, w), n in spec.items():
        out += [Battle(a, b, w)] * n
    return out


def test_two_models_closed_form():
    # A beats B 3 times, B beats A once: theta_A - theta_B = ln 3 -> Elo gap 400*log10(3).
    res = bradley_terry(_battles({("A", "B", "model_a"): 3, ("A", "B", "model_b"): 1}), rounds=0)
    assert res.theta[0] - res.theta[1] == pytest.approx(math.log(3), abs=1e-9)
    assert res.rating[0] - res.rating[1] == pytest.approx(400 * math.log10(3), abs=1e-6)
    assert res.rating.mean() == pytest.approx(1000.0)


def test_ties_are_half_wins_and_orientation_does_not_matter():
    # A: 2 wins + 1 tie = 2.5 of 3; B: 0.5 -> odds 5. Written with both orientations.
    spec = {("A", "B", "model_a"): 1, ("B", "A", "model_b"): 1, ("B", "A", "tie"): 1}
    res = bradley_terry(_battles(spec), rounds=0)
    assert res.theta[0] - res.theta[1] == pytest.approx(math.log(5), abs=1e-9)
    even = bradley_terry(_battles({("A", "B", "tie"): 4, ("A", "B", "model_a"): 1, ("B", "A", "model_a"): 1}), rounds=0)
    assert even.theta == pytest.approx([0.0, 0.0], abs=1e-12)


def test_three_model_chain_matches_hand_solution():
    # A-B: 2:1, B-C: 2:1, no A-C games -> theta_A - theta_B = theta_B - theta_C = ln 2 exactly.
    spec = {("A", "B", "model_a"): 2, ("A", "B", "model_b"): 1, ("B", "C", "model_a"): 2, ("C", "B", "model_a"): 1}
    res = bradley_terry(_battles(spec), rounds=0)
    assert res.theta == pytest.approx([math.log(2), 0.0, -math.log(2)], abs=1e-9)
    assert [r["model"] for r in res.leaderboard()] == ["A", "B", "C"]


def test_anchor_pins_rating():
    spec = {("A", "B", "model_a"): 3, ("A", "B", "model_b"): 1}
    res = bradley_terry(_battles(spec), rounds=50, anchor="B")
    assert res.rating[1] == pytest.approx(1000.0)
    assert res.low[1] == pytest.approx(1000.0) and res.high[1] == pytest.approx(1000.0)
    with pytest.raises(InputError, match="anchor"):
        bradley_terry(_battles(spec), anchor="Z")


def _random_battles(seed, m=6, per_pair=30, tie=0.15):
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, m)
    out = []
    for a in range(m):
        for b in range(a + 1, m):
            for _ in range(per_pair):
                x, y = (a, b) if rng.random() < 0.5 else (b, a)
                p = 1 / (1 + math.exp(-(strength[x] - strength[y])))
                w = "tie" if rng.random() < tie else ("model_a" if rng.random() < p else "model_b")
                out.append((f"m{x}", f"m{y}", w))
    return out


def test_point_estimate_matches_sklearn_expanded_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    battles = _random_battles(1)
    res = bradley_terry(battles, rounds=0)
    pos = {m: k for k, m in enumerate(res.models)}
    n, m = len(battles), len(res.models)
    x = np.zeros((n, m))
    x[np.arange(n), [pos[a] for a, _, _ in battles]] = math.log(10)
    x[np.arange(n), [pos[b] for _, b, _ in battles]] = -math.log(10)
    w = np.array([w for *_, w in battles])
    y = np.concatenate([(w == "model_a") | (w == "tie"), w == "model_a"]).astype(float)  # FastChat duplication
    lr = LogisticRegression(fit_intercept=False, C=np.inf, solver="newton-cg", tol=1e-12, max_iter=1000)
    lr.fit(np.concatenate([x, x]), y)
    ref = 400 * lr.coef_[0]
    ref = ref - ref.mean() + 1000
    assert np.abs(ref - res.rating).max() < 1e-6


def test_bootstrap_ci_is_seeded_and_brackets_point():
    battles = _random_battles(2)
    a = bradley_terry(battles, rounds=300, seed=5)
    b = bradley_terry(battles, rounds=300, seed=5)
    c = bradley_terry(battles, rounds=300, seed=6)
    assert np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high)
    assert not np.array_equal(a.low, c.low)
    assert np.all(a.low < a.rating) and np.all(a.rating < a.high)
    assert a.unconverged_rounds == 0 and a.n_battles == len(battles)


def test_bootstrap_width_matches_battle_resampling():
    """Multinomial count resampling == resampling battles: compare CI widths with a slow loop."""
    battles = _random_battles(3, m=3, per_pair=40)
    fast = bradley_terry(battles, rounds=600, seed=0)
    rng = np.random.default_rng(1)
    draws = []
    for _ in range(300):
        sample = [battles[k] for k in rng.integers(0, len(battles), len(battles))]
        draws.append(bradley_terry(sample, rounds=0).rating)
    slow_low, slow_high = np.quantile(np.array(draws), [0.025, 0.975], axis=0)
    assert np.allclose(fast.high - fast.low, slow_high - slow_low, rtol=0.2)


def test_unbounded_ratings_raise_unless_regularised():
    spec = {("A", "B", "model_a"): 3, ("B", "C", "model_a"): 2, ("C", "B", "model_a"): 1}
    with pytest.raises(InputError, match="never lose"):
        bradley_terry(_battles(spec), rounds=0)
    res = bradley_terry(_battles(spec), rounds=20, l2=0.1)
    assert res.leaderboard()[0]["model"] == "A"


def test_bad_battles_are_named():
    with pytest.raises(InputError, match="battle 1"):
        compress([("A", "B", "model_a"), ("A", "B", "draw")])
    with pytest.raises(InputError, match="plays itself"):
        compress([("A", "A", "tie")])
    with pytest.raises(InputError, match="no battles"):
        compress([])


def test_invariant_to_order_orientation_and_duplication():
    battles = _random_battles(7, m=5, per_pair=12)
    base = bradley_terry(battles, rounds=0).rating
    flip = {"model_a": "model_b", "model_b": "model_a", "tie": "tie"}
    swapped = [(b, a, flip[w]) for a, b, w in reversed(battles)]
    assert np.allclose(bradley_terry(swapped, rounds=0).rating, base, atol=1e-9)
    assert np.allclose(bradley_terry(battles * 3, rounds=0).rating, base, atol=1e-9)
    wide = bradley_terry(battles, rounds=200, seed=1)
    narrow = bradley_terry(battles * 4, rounds=200, seed=1)
    assert np.all(narrow.high - narrow.low < wide.high - wide.low)
