"""XRAG panel vote, language rule, per-group accuracy and kappa vs sklearn."""
import pytest
from sklearn.metrics import cohen_kappa_score

from babelrag.errors import ConfigError, InputError
from babelrag.evaluators.xrag import XragItem, majority_vote, score_panel


def test_majority_and_tie_policies():
    assert majority_vote([True, True, False]).verdict is True
    assert majority_vote([False, None, False]).verdict is False
    tie = [False, True]
    assert majority_vote(tie, "incorrect").verdict is False
    assert majority_vote(tie, "correct").verdict is True
    assert majority_vote(tie, "first").verdict is False
    assert majority_vote([None, True, False], "first").verdict is True  # first judge that voted
    v = majority_vote([None, None])
    assert v.verdict is None and v.abstained == 2
    assert majority_vote([True, False, None, None]).tie
    with pytest.raises(ConfigError, match="tie_policy"):
        majority_vote([True], "coin")


LANGS = ("en", "de", "zh")


def _items():
    return [
        XragItem("q1", "mono", "de", "Berlin ist die Hauptstadt von Deutschland.", [True, True, False], human=True),
        # panel says correct, but the answer is in English: incorrect
        XragItem("q2", "mono", "de", "Berlin is the capital of Germany.", [True, True, True], human=False),
        XragItem("q3", "mono", "zh", "柏林是德国的首都。", [True, False], human=True),  # tie -> incorrect
        XragItem("q4", "multi", "de", "Das weiß ich nicht genau, leider.", [None, None, None]),  # no verdict
        XragItem("q5", "multi", "de", "Der Vertrag wurde im Mai unterzeichnet.", [False, False, True], human=False),
    ]


def test_score_panel_hand_computed():
    res = score_panel(_items(), languages=LANGS, rounds=200)
    rows = {r["query_id"]: r for r in res.items}
    assert rows["q1"]["correct"] is True
    assert rows["q2"]["panel_correct"] is True and rows["q2"]["correct"] is False
    assert rows["q2"]["detected_language"] == "en"
    assert rows["q3"]["tie"] and rows["q3"]["correct"] is False
    assert rows["q4"]["correct"] is None
    assert res.counts["no_verdict"] == 1 and res.counts["wrong_language"] == 1 and res.counts["ties"] == 1
    assert res.aggregate["accuracy"].value == pytest.approx(1 / 4)  # q1 only, of 4 with a verdict
    assert res.aggregate["accuracy"].n == 4
    assert res.aggregate["language_correct"].value == pytest.approx(4 / 5)
    assert res.aggregate["accuracy[mono/de]"].value == pytest.approx(1 / 2)
    assert res.aggregate["accuracy[mono/zh]"].value == 0.0
    assert res.aggregate["accuracy[multi/de]"].value == 0.0 and res.aggregate["accuracy[multi/de]"].n == 1
    assert res.aggregate["language_correct[mono/de]"].value == pytest.approx(1 / 2)


def test_tie_policy_changes_only_ties():
    res = score_panel(_items(), tie_policy="correct", languages=LANGS, rounds=50)
    assert {r["query_id"]: r["correct"] for r in res.items}["q3"] is True
    assert res.aggregate["accuracy"].value == pytest.approx(2 / 4)


def test_kappa_vs_human_matches_sklearn():
    res = score_panel(_items(), languages=LANGS, rounds=300)
    pairs = [(r["correct"], r["human"]) for r in res.items if r["human"] is not None and r["correct"] is not None]
    expected = cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs])
    assert res.aggregate["kappa_vs_human"].value == pytest.approx(expected)
    assert res.aggregate["kappa_vs_human"].n == 4
    assert res.aggregate["agreement_vs_human"].value == pytest.approx(3 / 4)


def test_kappa_random_labels_matches_sklearn():
    import random

    rng = random.Random(4)
    items = []
    for k in range(40):
        votes = [rng.random() < 0.6 for _ in range(3)]
        items.append(XragItem(f"q{k}", "mono", "en", "x", votes, human=rng.random() < 0.5, detected_language="en"))
    res = score_panel(items, languages=LANGS, rounds=100)
    a = [r["correct"] for r in res.items]
    b = [r["human"] for r in res.items]
    assert res.aggregate["kappa_vs_human"].value == pytest.approx(cohen_kappa_score(a, b))


def test_items_without_votes_are_named():
    with pytest.raises(InputError, match="q9"):
        score_panel([XragItem("q9", "mono", "en", "x", [])], languages=LANGS)


def test_language_outside_the_expected_set_is_not_forced_into_it():
    # French answer to a German question: with the default candidate set, detected as French
    res = score_panel([XragItem("f", "mono", "de", "La réunion a eu lieu à Bruxelles la semaine dernière.", [True])],
                      rounds=10)
    assert res.items[0]["detected_language"] == "fr" and res.items[0]["correct"] is False
