"""A stage's LLM usage in its manifest and the run report is what that stage did in this run, also when the
process's shared runner is replaced between two runs (another build, or a changed LLM setting): the usage was
the new runner's totals minus the old runner's, which gave negative call counts (found when two builds ran in
one test process: ``relevance: calls -4``)."""
from __future__ import annotations

import json

import pytest

from babelrag.demo import demo_config
from babelrag.pipeline import run_pipeline
from babelrag.testing.scripted_server import ScriptedServer
from tests.test_demo_e2e import DemoBrain

pytestmark = pytest.mark.slow  # ingest + index + pairs of the sample corpus, then relevance twice


def _relevance_usage(build_dir) -> dict:
    report = json.loads((build_dir / "run_report.json").read_text())
    return next(s["llm_usage"] for s in report["stages"] if s["stage"] == "relevance")


def test_a_new_runner_mid_process_never_subtracts_the_old_runners_usage(tmp_path):
    with ScriptedServer(DemoBrain()) as srv:
        cfg = demo_config(tmp_path, srv.base_url, "scripted", 4, "sample")
        run_pipeline(cfg, until="relevance")
        first = _relevance_usage(cfg.build_dir)
        asked = srv.count("chat")
        assert first["calls"] == asked > 0

        # a run-only LLM setting changes: the stages stay current, the process gets a new runner (its own
        # ledger); relevance is forced, so its answers come from the LLM cache and nothing is paid
        cfg.llm.endpoints["generator"].max_concurrency += 1
        run_pipeline(cfg, until="relevance", force=["relevance"])
        again = _relevance_usage(cfg.build_dir)
    assert srv.count("chat") == asked  # nothing asked twice
    assert again["calls"] == 0 and again["cached"] == first["items"] > 0, (first, again)
