"""Freshness: ``evaluate run --after/--before`` scores only instances whose supporting articles were all
published inside the window (a model's training cutoff), and says what it left out and why."""
import pytest

from babelrag.errors import InputError
from babelrag.evaluators.answers import read_answers
from babelrag.freshness import DateWindow, date_range, select
from tests.test_eval_run_contract import _cli, released, strict_load
from tests.test_eval_runner import _instances

# supporting-article dates per instance id (de and zh instances of three questions)
DATES = {
    "i0de": ["2023-05-01", "2023-06-02"],  # old: before any cutoff we test
    "i0zh": ["2024-07-01", "2024-09-15"],  # fresh
    "i1de": ["2024-05-20", "2024-08-01"],  # straddles the cutoff: one article is old -> left out
    "i1zh": ["2024-12-31", "2025-02-01"],  # fresh, but not before 2025-01-01
    "i2de": [],  # no dates at all (and its supporting documents have none): undated
    "i2zh": ["2024-10-10", ""],  # one supporting date missing: undated
}


def _dated():
    out = []
    for inst in _instances():
        days = DATES[inst.id]
        docs = [d.model_copy(update={"published": ""}) if inst.id == "i2de" else d for d in inst.documents]
        out.append(inst.model_copy(update={"dates": days, "documents": docs}))
    return out


def test_after_scores_only_instances_newer_than_the_cutoff_and_records_the_selection(eval_server, tmp_path):
    release, cfg = released(tmp_path, eval_server, _dated())
    res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "a", "--rounds", "20",
               "--after", "2024-06-30")
    assert res.returncode == 0, res.stderr
    assert {a.instance_id for a in read_answers(tmp_path / "a" / "answers.jsonl")} == {"i0zh", "i1zh"}
    data = strict_load(tmp_path / "a" / "results.json")
    assert data["selection"] == {
        "published": {"after": "2024-06-30", "before": None, "bounds": "exclusive"},
        "instances_considered": 6, "instances_selected": 2, "left_out": {"outside_window": 2, "undated": 2}}
    assert data["coverage"]["good"] == {"answered": 2, "instances": 2}  # a selection, not a coverage loss
    assert not data["warnings"]
    assert "published after 2024-06-30: 2 of 6 instances" in data["run"]["selection"]
    assert "selection: published after 2024-06-30: 2 of 6 instances (2 outside the window, 2 without supporting " \
           "dates left out)" in (tmp_path / "a" / "report.html").read_text()

    res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "b", "--rounds", "20",
               "--after", "2024-06-30", "--before", "2025-01-01")
    assert res.returncode == 0, res.stderr
    assert {a.instance_id for a in read_answers(tmp_path / "b" / "answers.jsonl")} == {"i0zh"}
    assert strict_load(tmp_path / "b" / "results.json")["selection"]["left_out"] == {"outside_window": 3, "undated": 2}

    # without a window every instance is scored, undated ones too, and no selection is recorded
    res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "c", "--rounds", "20")
    assert res.returncode == 0, res.stderr
    assert len(read_answers(tmp_path / "c" / "answers.jsonl")) == 6
    assert "selection" not in strict_load(tmp_path / "c" / "results.json")


def test_a_window_with_no_instance_or_a_bad_date_is_a_clear_error(eval_server, tmp_path):
    release, cfg = released(tmp_path, eval_server, _dated())
    res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "x", "--after", "2026-01-01")
    assert res.returncode == 2 and "all its supporting articles published after 2026-01-01" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "x").exists()
    res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "y", "--after", "30/06/2024")
    assert res.returncode == 2 and "--after: '30/06/2024' is not a date; write it as YYYY-MM-DD" in res.stderr
    assert not (tmp_path / "y").exists()


def test_answers_file_is_narrowed_to_the_window(eval_server, tmp_path):
    import json

    release, cfg = released(tmp_path, eval_server, _dated())
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"instance_id": i.id, "model": "ext", "answer": i.answer}) + "\n"
                               for i in _dated()), encoding="utf-8")
    res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "a", "--rounds", "20",
               "--answers", answers, "--after", "2024-06-30")
    assert res.returncode == 0, res.stderr
    data = strict_load(tmp_path / "a" / "results.json")
    assert data["coverage"]["ext"] == {"answered": 2, "instances": 2}
    assert data["selection"]["instances_selected"] == 2


def test_window_rules_and_date_range():
    insts = _dated()
    sel = select(insts, DateWindow.parse("2023-06-01", "2024-12-31"))
    # i0de has an article from 2023-05-01 (before the window); i1zh one from 2024-12-31 (not strictly before)
    assert [i.id for i in sel.kept] == ["i0zh", "i1de"] and (sel.out_of_range, sel.undated) == (2, 2)
    assert len(select(insts, DateWindow()).kept) == 6  # an open window keeps undated instances too
    rng = date_range(insts)
    assert (str(rng.first), str(rng.last), rng.dated, rng.undated) == ("2023-05-01", "2025-02-01", 4, 2)
    with pytest.raises(InputError, match="holds no day"):
        DateWindow.parse("2024-06-30", "2024-07-01")
