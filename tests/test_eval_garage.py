"""GaRAGe arithmetic on hand-computed judgements."""
import math

import pytest

from babelrag.errors import InputError
from babelrag.evaluators.garage import GarageItem, score_garage

ITEMS = [
    # eligible, all sentences supported, by relevant passages: everything 1; cites p1,p3 of relevant p1,p2
    GarageItem("a", False, False, True, [["p1"], ["p2", "p9"]], relevant=["p1", "p2"], cited=["p1", "p3"]),
    # eligible, supported, but sentence 2 only by an irrelevant (outdated) passage: RAF 0
    GarageItem("b", False, False, True, [["p1"], ["p9"]], relevant=["p1"], cited=["p1"]),
    # ineligible though supported: factuality 0, unadjusted 1
    GarageItem("c", False, False, False, [["p1"]], relevant=["p1"], cited=[]),
    # answerable but deflected: false positive deflection, all quality metrics 0
    GarageItem("d", False, True),
    # needs deflection and deflects: true positive
    GarageItem("e", True, True),
    # needs deflection but answers: missed
    GarageItem("f", True, False, True, [[]], relevant=[]),
]


def test_per_item_values():
    rows = {r["query_id"]: r for r in score_garage(ITEMS, rounds=50).items}
    a, b, c, d, e, f = (rows[k] for k in "abcdef")
    assert (a["eligibility"], a["unadjusted_factuality"], a["factuality"], a["raf"]) == (1, 1, 1, 1)
    assert (a["attribution_precision"], a["attribution_recall"], a["attribution_f1"]) == (0.5, 0.5, 0.5)
    assert (b["factuality"], b["raf"]) == (1.0, 0.0)
    assert (c["unadjusted_factuality"], c["factuality"], c["raf"]) == (1.0, 0.0, 0.0)
    assert c["attribution_precision"] == 0.0 and c["attribution_recall"] == 0.0
    assert (d["eligibility"], d["factuality"], d["deflection_fp"]) == (0.0, 0.0, 1.0)
    assert math.isnan(d["attribution_f1"]) and math.isnan(d["deflection_tp"])
    assert e["deflection_tp"] == 1.0 and math.isnan(e["eligibility"])
    assert f["deflection_tp"] == 0.0


def test_aggregates():
    res = score_garage(ITEMS, rounds=100)
    agg = res.aggregate
    assert agg["eligibility"].value == pytest.approx(2 / 4)
    assert agg["unadjusted_factuality"].value == pytest.approx(3 / 4)
    assert agg["factuality"].value == pytest.approx(2 / 4)
    assert agg["raf"].value == pytest.approx(1 / 4)
    assert agg["deflection_tp"].value == pytest.approx(1 / 2) and agg["deflection_tp"].n == 2
    assert agg["deflection_fp"].value == pytest.approx(1 / 4) and agg["deflection_fp"].n == 4
    assert agg["attribution_f1"].n == 3
    assert agg["attribution_precision"].value == pytest.approx((0.5 + 1 + 0) / 3)
    assert res.counts["deflection_questions"] == 2 and res.counts["attribution_f1_undefined"] == 3


def test_failed_judgements_leave_only_defined_metrics():
    res = score_garage([GarageItem("z", False, None, None, [["p1"]], relevant=["p1"], cited=["p1"])], rounds=10)
    row = res.items[0]
    assert row["unadjusted_factuality"] == 1.0 and row["attribution_f1"] == 1.0
    assert all(math.isnan(row[k]) for k in ("eligibility", "factuality", "raf", "deflection_fp"))
    assert res.counts["deflection_unjudged"] == 1 and res.counts["eligibility_undefined"] == 1


def test_bad_item_is_named():
    with pytest.raises(InputError, match="garage item 0"):
        score_garage([{"query_id": "x", "bogus": 1}])
