"""Failed items are never "done" (issue 32, item 1): items whose LLM calls got no answer are stored as failed, the
run exits 3 saying where, and a plain re-run retries exactly them; an endpoint that keeps failing is given up on
after ``max_consecutive_failures`` calls in a row instead of costing every item its retries.

Driven through the real pipeline, LLM client and scripted HTTP server with a small asking stage
(tests/helpers/asking_stage.py); the same on the shipped sample corpus is in tests/test_chaos.py."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from babelrag import llm_session
from babelrag.config import config_from_dict
from babelrag.errors import IncompleteRunError
from babelrag.pipeline import run_pipeline
from babelrag.records import Article, ErrorRecord
from babelrag.shards import ShardWriter
from babelrag.store import BuildStore
from babelrag.testing.scripted_server import Faults, ScriptedServer
from tests.helpers import asking_stage, counting_stage

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fresh_runner():
    llm_session.reset()
    yield
    llm_session.reset()


def config(build: Path, base_url: str, **endpoint):
    ep = {"base_url": base_url, "model": "scripted", "cache_namespace": "scripted", "max_concurrency": 4,
          "retry_backoff_s": 0.0, "retry_backoff_max_s": 0.0, **endpoint}
    return config_from_dict({"project": {"build_dir": str(build)},
                             "llm": {"endpoints": {"generator": ep}, "progress": False}})


def asked(srv: ScriptedServer) -> list[str]:
    """The item each chat request the server saw was for."""
    return [e["last_user"].split("number ", 1)[1].split(" ", 1)[0] for e in srv.log if e["path"] == "chat"]


def test_failed_items_are_retried_by_a_plain_rerun_and_end_equal_to_a_clean_run(tmp_path):
    stages = (asking_stage.SPEC,)
    with ScriptedServer(asking_stage.reply) as srv:
        run_pipeline(config(tmp_path / "clean", srv.base_url), stages=stages)
        llm_session.reset()

        build = tmp_path / "flaky"
        srv.set_faults(Faults(rate_500=0.6, seed=3))
        with pytest.raises(IncompleteRunError) as info:  # 60 % HTTP 500, two tries per item: some items fail
            run_pipeline(config(build, srv.base_url, max_retries=1, max_consecutive_failures=0), stages=stages)
        store = BuildStore(build)
        failed = sorted(e.item_id for e in store.read_errors("ask"))
        assert failed and len(failed) < len(asking_stage.item_ids())
        message = str(info.value)
        assert info.value.exit_code == 3
        assert f"incomplete: {len(failed)} items failed — ask: {len(failed)} (server_error {len(failed)})" in message
        assert "run the same command again to retry exactly the failed items" in message
        manifest = store.manifest("ask")
        assert manifest.counts["failed"] == len(failed) and manifest.counts["failed_reasons"] == {
            "server_error": len(failed)}

        srv.set_faults(Faults())  # the endpoint recovers
        srv.reset_log()
        llm_session.reset()
        report = run_pipeline(config(build, srv.base_url), stages=stages)  # the same plain command
        assert sorted(asked(srv)) == failed  # exactly the failed items went out again, nothing else
        assert report.stages[0].status == "ran" and not report.stages[0].failed
        assert "retrying" in report.stages[0].note

        clean = BuildStore(tmp_path / "clean")
        for name in ("records.parquet", "errors.parquet"):
            assert (store.stage_dir("ask") / name).read_bytes() == (clean.stage_dir("ask") / name).read_bytes()
        assert store.read_errors("ask") == []

        srv.reset_log()
        llm_session.reset()
        third = run_pipeline(config(build, srv.base_url), stages=stages)
        assert third.stages[0].status == "cached" and srv.log == []  # now complete: nothing left to retry


def test_an_endpoint_that_hangs_is_given_up_after_n_calls_in_a_row(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTING_STAGE_N", "3")
    stages = (asking_stage.SPEC, counting_stage.SPEC)
    build = tmp_path / "build"
    # every call hangs past the client's timeout; without giving up, each of the 12 items would try 7 times
    with ScriptedServer(asking_stage.reply, faults=Faults(rate_hang=1.0, hang_s=5.0)) as srv:
        with pytest.raises(IncompleteRunError) as info:
            run_pipeline(config(build, srv.base_url, timeout_s=0.2, max_retries=6, max_concurrency=2,
                                max_consecutive_failures=4), stages=stages)
        calls = srv.count("chat")
    assert calls <= 4 + 2, f"{calls} calls went out to an endpoint given up on after 4 failures in a row"
    message = str(info.value)
    assert "incomplete: 12 items failed" in message and "endpoint_down" in message
    assert f"stopped after ask: endpoint 'generator' ({srv.base_url}) failed 4 calls in a row (last: timeout" in message
    store = BuildStore(build)
    assert {e.reason for e in store.read_errors("ask")} <= {"timeout", "endpoint_down"}
    assert store.manifest("count") is None  # later stages do not run against a dead endpoint

    llm_session.reset()
    with ScriptedServer(asking_stage.reply) as healthy:  # it is back (at another address: same namespace)
        report = run_pipeline(config(build, healthy.base_url), stages=stages)
        assert healthy.count("chat") == 12
    assert [s.status for s in report.stages] == ["ran", "ran"]
    assert len(store.read("ask", Article)) == 12 and store.read_errors("ask") == []


def test_a_failed_item_is_not_done_for_the_next_writer_but_a_final_error_is(tmp_path):
    writer = ShardWriter(tmp_path / "p", Article, "fp", shard_size=1)
    writer.add_error(ErrorRecord(id="s:a", stage="s", item_id="a", reason="server_error"))
    writer.add_error(ErrorRecord(id="s:b", stage="s", item_id="b", reason="summary:timeout"))
    writer.add_error(ErrorRecord(id="s:c", stage="s", item_id="c", reason="invalid_json"))
    writer.add_error(ErrorRecord(id="s:d", stage="s", item_id="d", reason="leakage"))
    assert writer.has("a") and writer.has("b")  # within its run a failed item is not tried again
    writer.flush()
    again = ShardWriter(tmp_path / "p", Article, "fp")
    assert [again.has(i) for i in "abcd"] == [False, False, True, True]


CLI_SCRIPT = """
import sys
from babelrag.cli import main
from babelrag.stage import add_stage
from tests.helpers.asking_stage import SPEC
add_stage(SPEC)
sys.argv = ["babelrag", "construct", sys.argv[2], "-c", sys.argv[1]]
main()
"""


def test_the_cli_exits_3_and_says_what_failed_and_how_to_resume(tmp_path):
    with ScriptedServer(asking_stage.reply, faults=Faults(rate_500=1.0)) as srv:
        cfg = tmp_path / "babelrag.yaml"
        cfg.write_text(f"project: {{build_dir: {tmp_path / 'build'}}}\n"
                       f"llm: {{progress: false, endpoints: {{generator: {{base_url: '{srv.base_url}', model: m, "
                       f"max_retries: 0, max_consecutive_failures: 0}}}}}}\n", encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "ASKING_STAGE_N": "3"}
        proc = subprocess.run([sys.executable, "-c", CLI_SCRIPT, str(cfg), "ask"], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
    status = subprocess.run([sys.executable, "-c", CLI_SCRIPT, str(cfg), "status"], env={**env, "COLUMNS": "200"},
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr[-3000:]
    tail = proc.stderr.strip().splitlines()[-2:]
    assert "ask: 3 (server_error 3)" in "\n".join(tail) or "ask: 3 (server_error 3)" in proc.stderr
    assert "run the same command again to retry exactly the failed items" in tail[-1]
    assert status.returncode == 0 and "current, 3 failed" in status.stdout + status.stderr


def test_a_build_that_still_has_failed_items_is_not_released(tmp_path):
    from babelrag.release.build import refuse_failed_items
    from babelrag.stage import add_stage, remove_stage

    build = tmp_path / "build"
    add_stage(asking_stage.SPEC)  # declared, as a plug-in's stage would be
    try:
        with ScriptedServer(asking_stage.reply, faults=Faults(rate_500=1.0)) as srv:
            with pytest.raises(IncompleteRunError):
                run_pipeline(config(build, srv.base_url, max_retries=0, max_consecutive_failures=0),
                             stages=(asking_stage.SPEC,))
        with pytest.raises(IncompleteRunError, match=r"still has failed items \(ask: 12\); run `babelrag run` again"):
            refuse_failed_items(BuildStore(build))
    finally:
        remove_stage(asking_stage.SPEC.name)
