"""MIRAGE heuristics, pairwise battles and surrogate on hand-computed cases."""
import numpy as np
import pytest
from scipy.stats import kendalltau

from babelrag.evaluators.bradley_terry import bradley_terry
from babelrag.evaluators.mirage import (
    HeuristicItem,
    Matchup,
    all_matchups,
    average_precision_at_k,
    bleu,
    fit_surrogate,
    judge_battles,
    model_features,
    recall_at_k,
    rouge_l,
    score_heuristics,
)
from babelrag.stats import kendall_tau


def test_map_depends_on_citation_order_not_set():
    rel = {1, 3}
    assert average_precision_at_k([1, 3, 2], rel, 3) == pytest.approx(1.0)
    assert average_precision_at_k([1, 2, 3], rel, 3) == pytest.approx((1 + 2 / 3) / 2)
    assert average_precision_at_k([2, 1, 3], rel, 3) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert average_precision_at_k([1, 1, 3], rel, 3) == pytest.approx(1.0)  # repeats collapse


def test_recall_and_map_truncate_at_k_and_conventions():
    assert recall_at_k([2, 1, 3], {1, 3}, 1) == 0.0
    assert recall_at_k([1, 2, 3], {1, 3}, 1) == 0.5
    assert recall_at_k([1, 2, 3], {1, 3}, 3) == 1.0
    assert average_precision_at_k([1, 2], {1, 3}, 1) == 1.0  # normalised by min(k, |R|) = 1
    # no relevant documents: undefined (left out of the mean), whatever is cited
    assert recall_at_k([], set(), 5) is None and average_precision_at_k([2], set(), 5) is None
    assert recall_at_k([], {1}, 5) == 0.0


def test_rouge_l_hand_computed():
    # LCS("the cat sat", "the cat was sat") = 3: P = 1, R = 3/4 -> F1 = 6/7
    assert rouge_l("The cat sat.", "the cat was sat") == pytest.approx(6 / 7)
    # CJK per character: 我爱北京 vs 我在北京 -> LCS 3 of 4 each side
    assert rouge_l("我爱北京", "我在北京") == pytest.approx(0.75)
    assert rouge_l("", "x") == 0.0 and rouge_l("a b", "c d") == 0.0


def test_bleu_bounds_and_cjk():
    assert bleu("the cat sat on the mat", "the cat sat on the mat") == pytest.approx(1.0)
    assert bleu("巴黎是法国的首都", "巴黎是法国的首都", "zh") == pytest.approx(1.0)
    assert bleu("", "x") == 0.0
    assert 0.0 < bleu("the cat sat on a mat", "the cat sat on the mat") < 1.0


def test_score_heuristics_rows():
    items = [
        HeuristicItem("q1", "Berlin ist die Hauptstadt von Deutschland [2][1].", "Berlin ist die Hauptstadt.", "de", 4, (1,)),
        {"query_id": "q2", "answer": "Berlin is the capital of Germany.", "reference": "Berlin ist die Hauptstadt.",
         "language": "de", "n_docs": 4, "relevant": (1,)},
    ]
    res = score_heuristics(items, k=2, languages=("en", "de"), rounds=50)
    q1, q2 = res.items
    assert q1["language_share"] == 1.0 and q2["language_share"] == 0.0
    assert q1["citation_recall@k"] == 1.0 and q1["citation_map@k"] == 0.5  # relevant doc cited second
    assert q2["citation_recall@k"] == 0.0
    assert q1["rouge_l"] == pytest.approx(2 * (4 / 6) * 1 / (4 / 6 + 1))  # LCS 4 of 6 / 4 tokens
    assert res.aggregate["language_share"].value == 0.5


def test_judge_battles_both_orders_and_position_bias():
    mus = [Matchup("q", "A", "long answer here", "B", "short")]
    fair = judge_battles(mus, lambda q, f, s: "first" if len(f) > len(s) else "second")
    assert [b.winner for b in fair.battles] == ["model_a", "model_a"]
    assert (fair.consistent, fair.inconsistent) == (1, 0)
    biased = judge_battles(mus, lambda q, f, s: "first")
    assert sorted(b.winner for b in biased.battles) == ["model_a", "model_b"]
    assert biased.inconsistent == 1
    broken = judge_battles(mus, lambda q, f, s: "no idea" if f.startswith("long") else "tie")
    assert broken.failed == 1 and [b.winner for b in broken.battles] == ["tie"]


def test_all_matchups_only_shared_queries():
    mus = all_matchups({"B": {"q1": "b1", "q2": "b2"}, "A": {"q1": "a1"}, "C": {"q2": "c2"}})
    assert [(m.model_a, m.model_b, m.query_id) for m in mus] == [("A", "B", "q1"), ("B", "C", "q2")]


def test_kendall_tau_matches_scipy_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, y = rng.integers(0, 4, 12), rng.integers(0, 4, 12)
        assert kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic)


def test_surrogate_ranks_held_out_models():
    rng = np.random.default_rng(0)
    models = [f"m{k}" for k in range(12)]
    quality = np.linspace(0, 1, 12)
    # per-query features: rouge_l tracks quality, answer_length is noise
    per_query = {
        m: [{"rouge_l": q + rng.normal(0, 0.02), "answer_length": rng.normal(50, 5)} for _ in range(20)]
        for m, q in zip(models, quality)
    }
    feats = model_features(per_query, keys=("rouge_l", "answer_length"))
    target = dict(zip(models, 1000 + 300 * quality))
    res = fit_surrogate(feats, target, n_folds=4, seed=0, n_estimators=50)
    pred = [res.predicted[m] for m in models]
    assert res.kendall_tau == pytest.approx(kendalltau(pred, list(target.values())).statistic)
    assert res.kendall_tau > 0.7
    assert res.feature_importance["rouge_l"] > res.feature_importance["answer_length"]


def test_end_to_end_battles_to_bt():
    # judge prefers higher heuristic rouge; three models with clear order
    answers = {"good": {"q1": "the cat sat on the mat"}, "mid": {"q1": "the cat sat"}, "bad": {"q1": "dogs"}}
    ref = "the cat sat on the mat"
    score = {a: rouge_l(a, ref) for m in answers.values() for a in m.values()}

    def judge(q, f, s):
        return "tie" if score[f] == score[s] else ("first" if score[f] > score[s] else "second")

    jb = judge_battles(all_matchups(answers), judge)
    # add one upset per pair so the MLE is finite
    from babelrag.evaluators.bradley_terry import Battle

    upsets = [Battle("mid", "good", "model_a"), Battle("bad", "mid", "model_a"), Battle("bad", "good", "model_a")]
    res = bradley_terry(jb.battles * 3 + upsets, rounds=0)
    assert [r["model"] for r in res.leaderboard()] == ["good", "mid", "bad"]


def test_model_features_skip_nan_and_reject_empty():
    from babelrag.errors import InputError

    feats = model_features({"m": [{"f": 1.0}, {"f": float("nan")}, {"f": 3.0}]}, keys=("f",))
    assert feats == {"m": {"f": 2.0}}
    with pytest.raises(InputError, match="'f'"):
        model_features({"m": [{"f": float("nan")}]}, keys=("f",))


def _lcs_table(a, b):
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def test_bit_parallel_lcs_equals_dynamic_programming():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from babelrag.evaluators.mirage import _lcs

    tokens = st.lists(st.sampled_from(list("abcde")), max_size=40)

    @settings(max_examples=300, deadline=None)
    @given(tokens, tokens)
    def check(a, b):
        assert _lcs(a, b) == _lcs_table(a, b)

    check()
