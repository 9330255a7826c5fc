"""Reports: leaderboard order and files, provenance in JSON, offline HTML, readable PNGs."""
import csv
import json
import re

from babelrag.evaluators.bradley_terry import bradley_terry
from babelrag.evaluators.report import (
    ReportInputs,
    leaderboard_rows,
    markdown_table,
    rank_table,
    run_info,
    write_report,
)
from babelrag.stats import Estimate

SCORES = {
    "model-a": {"accuracy": Estimate(0.6, 0.5, 0.7, 100), "citation_f1": Estimate(0.4, 0.3, 0.5, 100)},
    "model-b": {"accuracy": Estimate(0.8, 0.7, 0.9, 100)},
    "model-c": {"accuracy": Estimate(float("nan"), float("nan"), float("nan"), 0)},
}
ACC = {
    "model-a": {"de": Estimate(0.5, 0.4, 0.6, 50), "zh": Estimate(0.7, 0.6, 0.8, 50)},
    "model-b": {"de": Estimate(0.9, 0.8, 0.95, 50), "zh": Estimate(0.6, 0.5, 0.7, 50)},
}


def test_leaderboard_order_and_missing_values():
    rows = leaderboard_rows(SCORES, "accuracy")
    assert [r["model"] for r in rows] == ["model-b", "model-a", "model-c"]
    assert rows[0]["citation_f1"] is None and rows[1]["citation_f1_ci_low"] == 0.3
    md = markdown_table(rows)
    assert "| 1 | model-b | 0.800 [0.700, 0.900] | – |" in md


def test_rank_table_ties_share_rank():
    assert rank_table({"a": {"x": 0.5}, "b": {"x": 0.5}, "c": {"x": 0.9}}) == {"a": {"x": 2}, "b": {"x": 2}, "c": {"x": 1}}


def test_write_report_files(tmp_path):
    bt = bradley_terry([("model-a", "model-b", "model_b")] * 3 + [("model-a", "model-b", "model_a")], rounds=50)
    info = run_info("demo/xrag", "abc123", {"tie_policy": "incorrect"})
    paths = write_report(tmp_path, ReportInputs(
        title="Demo", info=info, scores=SCORES, sort_by="accuracy",
        views={"xrag": {"accuracy_by_language": ACC,
                        "wrong_language": {"model-a": {"de": 0.1, "zh": 0.3}, "model-b": {"de": 0.0, "zh": 0.05}}},
               "mirage": {"bradley_terry": bt.leaderboard()}},
        extra={"items": {"model-a": [{"query_id": "q1", "accuracy": 1.0}]}},
    ))
    data = json.loads(paths["json"].read_text())
    assert data["run"]["dataset_revision"] == "abc123"
    assert data["run"]["library_version"] != "" and re.match(r"^([0-9a-f]{40}(-dirty)?|unknown)$", data["run"]["git_hash"])
    assert [r["model"] for r in data["leaderboard"]] == ["model-b", "model-a", "model-c"]
    assert data["bradley_terry"][0]["model"] == "model-b"
    with paths["csv"].open() as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["model"] == "model-b" and float(rows[0]["accuracy"]) == 0.8
    page = paths["html"].read_text()
    assert page.count("data:image/png;base64,") == 4
    assert not re.search(r"(src|href)=\"(https?:|//)", page)  # opens offline
    import matplotlib.image as mpimg

    for key, p in paths.items():
        if key.startswith("plot:"):
            img = mpimg.imread(p)
            assert img.shape[0] > 100 and img.shape[1] > 100
    assert not list(tmp_path.rglob(".*"))  # no temp files left behind


def test_run_info_in_repo_has_hash():
    info = run_info("x", "rev")
    assert info.git_hash != "" and info.created.endswith("+00:00")
