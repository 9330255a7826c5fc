"""The runner: atomic stage folders, skip-if-unchanged, --force, and resume after kill -9."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from babelrag.config import config_from_dict
from babelrag.errors import StageError
from babelrag.pipeline import Pipeline
from babelrag.records import Article
from babelrag.hashing import sha256_file
from babelrag.store import RECORDS_FILE, BuildStore
from tests.helpers.counting_stage import SPEC

ROOT = Path(__file__).resolve().parents[1]


def make_pipeline(tmp_path, **project):
    cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "build"), **project}})
    return Pipeline(cfg, stages=(SPEC,))


def test_stage_writes_records_errors_and_manifest(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTING_STAGE_N", "30")
    report = make_pipeline(tmp_path).run()
    store = BuildStore(tmp_path / "build")
    records = store.read("count", Article)
    errors = store.read_errors("count")
    # i % 7 == 3 -> 3, 10, 17, 24 are errors
    assert [e.item_id for e in errors] == ["a00003", "a00010", "a00017", "a00024"]
    assert len(records) == 26 and records == sorted(records, key=lambda r: r.id)
    manifest = store.manifest("count")
    assert manifest.counts == {"in": 30, "out": 26, "errors": 4, "skipped": {"seven": 4}, "resumed": 0}
    assert manifest.output_fingerprint == sha256_file(store.stage_dir("count") / RECORDS_FILE)
    assert report.stages[0].status == "ran"
    assert not (tmp_path / "build" / ".partial" / "count").exists()
    # the stored dataset has exact Arrow types from the record model
    ds = store.load_dataset("count")
    assert ds.features["title_entities"].feature.dtype == "string"


def test_rerun_skips_unchanged_and_force_redoes(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTING_STAGE_N", "12")
    make_pipeline(tmp_path).run()
    second = make_pipeline(tmp_path).run()
    assert second.stages[0].status == "cached"
    forced = make_pipeline(tmp_path).run(force=["count"])
    assert forced.stages[0].status == "ran"
    changed = make_pipeline(tmp_path, seed=99).run()  # its config section changed
    assert changed.stages[0].status == "ran"


def test_unknown_stage_is_a_clear_error(tmp_path):
    with pytest.raises(StageError, match="unknown stage 'nope'"):
        make_pipeline(tmp_path).run(force=["nope"])


def test_missing_upstream_is_a_clear_error(tmp_path):
    cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "b")}})
    with pytest.raises(StageError, match="stage 'ingest' has no finished output"):
        Pipeline(cfg).run(only=["pairs"])


RUN_SCRIPT = """
import sys
from babelrag.config import config_from_dict
from babelrag.pipeline import Pipeline
from tests.helpers.counting_stage import SPEC
cfg = config_from_dict({"project": {"build_dir": sys.argv[1]}})
Pipeline(cfg, stages=(SPEC,)).run()
"""


def run_child(build: Path, n: int, delay: float) -> subprocess.Popen:
    env = {**os.environ, "COUNTING_STAGE_N": str(n), "COUNTING_STAGE_DELAY": str(delay), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", RUN_SCRIPT, str(build)], env=env, cwd=ROOT)


def test_kill_9_mid_stage_then_rerun_gives_identical_output(tmp_path):
    n = 60
    reference = tmp_path / "reference"
    assert run_child(reference, n, 0).wait(timeout=120) == 0

    build = tmp_path / "killed"
    child = run_child(build, n, 0.05)
    partial = build / ".partial" / "count"
    deadline = time.time() + 60
    while time.time() < deadline and len(list(partial.glob("shard-*.records.parquet"))) < 3:
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    shards = len(list(partial.glob("shard-*.records.parquet")))
    assert shards >= 3, "the child should have written shards before being killed"
    assert not (build / "count" / "manifest.json").exists(), "no stage output may appear before it finishes"

    assert run_child(build, n, 0).wait(timeout=120) == 0
    manifest = json.loads((build / "count" / "manifest.json").read_text())
    assert manifest["counts"]["resumed"] >= 3 * 5 - 1  # finished shards were kept, not redone
    assert manifest["counts"]["out"] == n - len([i for i in range(n) if i % 7 == 3])
    ref_bytes = (reference / "count" / RECORDS_FILE).read_bytes()
    assert (build / "count" / RECORDS_FILE).read_bytes() == ref_bytes
    assert (build / "count" / "errors.parquet").read_bytes() == (reference / "count" / "errors.parquet").read_bytes()


def test_run_report_shows_llm_calls_tokens_and_cost():
    from rich.console import Console

    from babelrag.pipeline import RunReport, StageReport

    report = RunReport([
        StageReport("ingest", "ran", 185, 181, seconds=9.9),
        StageReport("questions", "ran", 4, 4, llm_usage={"calls": 23, "cached": 2, "prompt_tokens": 12845,
                                                         "completion_tokens": 1404, "cost": 0.0123}),
    ])
    console = Console(width=200, record=True)
    console.print(report.render())
    text = console.export_text()
    row = next(line for line in text.splitlines() if "questions" in line)
    assert "23 (2 cached)" in row and "12,845/1,404" in row and "0.0123" in row
    ingest = next(line for line in text.splitlines() if "ingest" in line)
    assert "12,845" not in ingest and ingest.count("-") >= 3  # no LLM use: dashes, not zeros


def test_status_shows_a_stage_downstream_of_a_stale_one_as_waiting(tmp_path, monkeypatch):
    """A stage's fingerprint holds its inputs' output fingerprints, which change only when the input re-runs:
    after a config change makes `count` stale, `after` must not read `current` (issue 38)."""
    from babelrag.stage import StageSpec

    monkeypatch.setenv("COUNTING_STAGE_N", "8")
    after = StageSpec("after", "tests.helpers.counting_stage:run", "Article", ("count",), ("ner",))
    unrelated = StageSpec("unrelated", "tests.helpers.counting_stage:run", "Article", (), ("ner",))
    stages = (SPEC, after, unrelated)

    def pipe(seed):
        return Pipeline(config_from_dict({"project": {"build_dir": str(tmp_path / "build"), "seed": seed}}),
                        stages=stages)

    assert pipe(1).states() == {"count": "not built", "after": "not built", "unrelated": "not built"}
    pipe(1).run()
    assert pipe(1).states() == {"count": "current", "after": "current", "unrelated": "current"}
    assert pipe(2).is_current(after)  # its own fingerprint still matches: what `status` used to show
    assert pipe(2).states() == {"count": "stale", "after": "stale (waits on count)", "unrelated": "current"}
