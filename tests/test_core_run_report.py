"""The run report: skips and kept-with-a-note apart, a failing stage present in run_report.json, progress
lines in a log (output off a terminal)."""
import io
import json

import pytest
from rich.console import Console

from babelrag.config import config_from_dict
from babelrag.console import track
from babelrag.errors import StageError
from babelrag.pipeline import run_pipeline
from babelrag.store import BuildStore
from tests.helpers.report_stages import AFTER, FAILING, SORTING


def _config(tmp_path):
    return config_from_dict({"project": {"build_dir": str(tmp_path / "build")}})


def _log_console():
    return Console(file=io.StringIO(), force_terminal=False, width=160)


def test_skipped_and_kept_with_a_note_are_counted_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("BABELRAG_PROGRESS_EVERY_S", "0")
    console = _log_console()
    report = run_pipeline(_config(tmp_path), console=console, stages=(SORTING,))
    stage = report.stages[0]
    assert (stage.count_in, stage.count_out) == (6, 5)
    assert stage.skipped == {"empty": 1} and stage.kept_with_note == {"no-entities": 3}
    saved = json.loads((tmp_path / "build" / "run_report.json").read_text())["stages"][0]
    assert saved["skipped"] == {"empty": 1} and saved["kept_with_note"] == {"no-entities": 3}
    assert BuildStore(tmp_path / "build").manifest("sorting").counts["kept_with_note"] == {"no-entities": 3}
    text = console.file.getvalue()
    assert "kept with note" in text and "no-entities=3" in text and "empty=1" in text
    # progress went to the log as lines, one per item at interval 0
    lines = [line for line in text.splitlines() if line.startswith("sorting articles: ")]
    assert [line.split(": ")[1].split(" ")[0] for line in lines] == ["1/6", "2/6", "3/6", "4/6", "5/6", "6/6"]
    cached = run_pipeline(_config(tmp_path), stages=(SORTING,)).stages[0]
    assert cached.status == "cached" and cached.kept_with_note == {"no-entities": 3}


def test_a_failing_stage_is_in_run_report_json(tmp_path):
    with pytest.raises(StageError, match="corpus folder"):
        run_pipeline(_config(tmp_path), stages=(SORTING, FAILING, AFTER))
    saved = json.loads((tmp_path / "build" / "run_report.json").read_text())["stages"]
    assert [(s["stage"], s["status"]) for s in saved] == [("sorting", "ran"), ("failing", "failed"),
                                                         ("after", "not-run")]
    assert "corpus folder /data/x is empty" in saved[1]["note"] and saved[2]["note"] == "failing failed"
    assert BuildStore(tmp_path / "build").manifest("failing") is None  # nothing half-written


def test_progress_off_a_terminal_prints_lines_at_the_interval(monkeypatch):
    console = _log_console()
    assert list(track(range(3), 3, "work", console, every_s=3600)) == [0, 1, 2]
    assert console.file.getvalue() == ""  # quicker than the interval: silent
    clock = iter([0.0, 10.0, 40.0, 50.0, 75.0])
    monkeypatch.setattr("babelrag.console.time.monotonic", lambda: next(clock))
    assert list(track(range(4), 4, "work", console, every_s=30)) == [0, 1, 2, 3]
    assert console.file.getvalue().splitlines() == ["work: 2/4 (50%), 0.05/s, 40 s elapsed, about 40 s left",
                                                   "work: 4/4 (100%), 0.05/s, 75 s elapsed, about 0 s left"]
    assert list(track(range(2), None, "x", None)) == [0, 1]  # no console: no output at all


def test_a_new_stage_version_reruns_once_and_says_why(tmp_path):
    from dataclasses import replace

    run_pipeline(_config(tmp_path), stages=(SORTING,))
    v2 = replace(SORTING, version="2", changes=(("2", "translations are typed nested records"),))
    console = _log_console()
    again = run_pipeline(_config(tmp_path), console=console, stages=(v2,)).stages[0]
    assert again.status == "ran"
    assert again.note == "output made by version 1, now 2: translations are typed nested records"
    assert "sorting re-runs once: output made by version 1, now 2" in console.file.getvalue()
    assert BuildStore(tmp_path / "build").manifest("sorting").version == "2"
    third = run_pipeline(_config(tmp_path), stages=(v2,)).stages[0]
    assert third.status == "cached" and "version" not in third.note



def test_a_manifest_from_before_versions_were_recorded_gets_the_reason_once(tmp_path):
    from dataclasses import replace

    from babelrag.records import Article
    from tests.helpers.qa_fixtures import seed_stage

    seed_stage(tmp_path / "build", "sorting", [], Article)  # a manifest without a version
    v3 = replace(SORTING, version="3", changes=(("3", "published is a date"),))
    assert run_pipeline(_config(tmp_path), stages=(v3,)).stages[0].note == "output made before version 3: published is a date"
    seed_stage(tmp_path / "other", "sorting", [], Article)
    plain = run_pipeline(config_from_dict({"project": {"build_dir": str(tmp_path / "other")}}), stages=(SORTING,))
    assert plain.stages[0].note == ""  # no reason declared: nothing to say
