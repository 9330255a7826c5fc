"""A hard LLM budget (issue 35, item 2): ``llm.max_cost_usd`` stops a run cleanly before any call that could
take the build's spend past it; a re-run with a higher cap continues without paying again for what was done.

Driven through the CLI, the real pipeline, LLM client and the scripted HTTP server (prices set on its
endpoint), with the small asking stage of tests/helpers/asking_stage.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from babelrag import llm_session
from babelrag.config import config_from_dict
from babelrag.errors import ConfigError, IncompleteRunError
from babelrag.llm.budget import Budget, BudgetExhausted, prompt_token_bound
from babelrag.llm.settings import LLMSettings
from babelrag.pipeline import run_pipeline
from babelrag.records import Article
from babelrag.store import BuildStore
from babelrag.testing.scripted_server import Faults, ScriptedServer
from tests.helpers import asking_stage, counting_stage

ROOT = Path(__file__).resolve().parents[1]
PRICES = {"price_per_1k_input": 1.0, "price_per_1k_output": 10.0, "max_tokens": 16}


@pytest.fixture(autouse=True)
def fresh_runner():
    llm_session.reset()
    yield
    llm_session.reset()


def endpoint(base_url: str) -> dict:
    return {"base_url": base_url, "model": "scripted", "cache_namespace": "scripted", "max_concurrency": 4,
            "retry_backoff_s": 0.0, **PRICES}


def config(build: Path, base_url: str, **llm):
    return config_from_dict({"project": {"build_dir": str(build)},
                             "llm": {"endpoints": {"generator": endpoint(base_url)}, "progress": False, **llm}})


def asked(srv: ScriptedServer) -> list[str]:
    """The item each chat request the server saw was for."""
    return [e["last_user"].split("number ", 1)[1].split(" ", 1)[0] for e in srv.log if e["path"] == "chat"]


CLI_SCRIPT = """
import sys
from babelrag.cli import main
from babelrag.stage import add_stage
from tests.helpers.asking_stage import SPEC
add_stage(SPEC)
sys.argv = ["babelrag", "construct", "ask", "-c", sys.argv[1]]
main()
"""


def write_config(path: Path, build: Path, base_url: str, cap: float) -> Path:
    ep = ", ".join(f"{k}: {v}" for k, v in endpoint(base_url).items() if k != "base_url")
    path.write_text(f"project: {{build_dir: {build}}}\n"
                    f"llm: {{progress: false, max_cost_usd: {cap}, endpoints: {{generator: "
                    f"{{base_url: '{base_url}', {ep}}}}}}}\n", encoding="utf-8")
    return path


def test_a_low_cap_stops_the_run_cleanly_and_a_higher_cap_finishes_it_without_paying_twice(tmp_path, monkeypatch):
    """The cap is for the build: the first run (CLI) stops at it with exit 3 naming cap and spend, commits
    what it finished and the rest as failed items, records the spend; a re-run with the same cap pays
    nothing and runs no later stage; one with a higher cap asks only for the items left, and the runs
    together cost what one uncapped run costs."""
    monkeypatch.setenv("COUNTING_STAGE_N", "3")
    with ScriptedServer(asking_stage.reply) as srv:
        # what the whole stage costs without a cap (another build, same server)
        full = run_pipeline(config(tmp_path / "uncapped", srv.base_url), stages=(asking_stage.SPEC,))
        full_cost = full.stages[0].llm_usage["cost"]
        per_call = full_cost / 12
        srv.reset_log()
        llm_session.reset()

        build = tmp_path / "build"
        # room for a few calls at their reservations (prompt bytes + max_tokens: ~7x what a call here costs)
        cap = round(full_cost * 0.8, 4)
        cfg = write_config(tmp_path / "babelrag.yaml", build, srv.base_url, cap)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "COUNTING_STAGE_N": "3"}
        proc = subprocess.run([sys.executable, "-c", CLI_SCRIPT, str(cfg)], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        first = asked(srv)
    assert proc.returncode == 3, proc.stderr[-3000:]
    store = BuildStore(build)
    done = sorted(a.id for a in store.read("ask", Article))
    left = sorted(e.item_id for e in store.read_errors("ask"))
    assert done and left and sorted(done + left) == asking_stage.item_ids()
    assert {e.reason for e in store.read_errors("ask")} == {"budget"}
    assert sorted(first) == done  # every answered call is committed; no call went out for the items left
    manifest = store.manifest("ask")
    assert manifest.counts["failed_reasons"] == {"budget": len(left)}
    message = " ".join(proc.stderr.split())  # rich wraps long lines
    assert f"the budget llm.max_cost_usd = ${cap:g} is used up" in message
    spent = manifest.llm_usage["cost"]
    assert f"${spent:.4f} spent on this build" in message
    assert f"ask: {len(left)} (budget {len(left)})" in message
    assert f"LLM spend on this build: ${spent:.4f} (${spent:.4f} in this run); cap ${cap:g}" in " ".join(
        (proc.stdout + proc.stderr).split())  # under the run report's table
    assert spent <= cap and spent == pytest.approx(per_call * len(done))
    report = json.loads(store.run_report_path.read_text())
    assert report["budget"]["max_cost_usd"] == cap and report["budget"]["spent_usd"] == pytest.approx(spent)
    assert report["budget"]["stopped_scopes"] == ["*"]
    assert json.loads(store.llm_spend_path.read_text())["total_usd"] == pytest.approx(spent)

    # the same cap again: the spend of the first run counts, so nothing new fits and nothing is paid
    with ScriptedServer(asking_stage.reply) as srv:
        with pytest.raises(IncompleteRunError, match=r"llm\.max_cost_usd = \$[0-9.]+ is used up") as info:
            run_pipeline(config(build, srv.base_url, max_cost_usd=cap),
                         stages=(asking_stage.SPEC, counting_stage.SPEC))
        assert asked(srv) == [] and "not run: count" in str(info.value)
        assert store.manifest("count") is None  # the later stage does not run past the cap
        llm_session.reset()

        # a higher cap: only the items left go out, each once; the build is complete
        report = run_pipeline(config(build, srv.base_url, max_cost_usd=full_cost * 2),
                              stages=(asking_stage.SPEC, counting_stage.SPEC))
        second = asked(srv)
    assert sorted(second) == left
    assert Counter(first + second) == Counter(asking_stage.item_ids())  # no request paid twice
    assert [s.status for s in report.stages] == ["ran", "ran"]
    assert sorted(a.id for a in store.read("ask", Article)) == asking_stage.item_ids()
    assert report.budget["spent_usd"] == pytest.approx(full_cost)
    assert report.budget["spent_this_run_usd"] == pytest.approx(per_call * len(left))


def test_calls_in_flight_together_never_take_the_spend_past_the_cap(tmp_path, monkeypatch):
    """Eight calls in flight at once (each held ~0.1 s by the server): the reservations keep the spend under
    the cap although several calls were paid for at the same time."""
    monkeypatch.setenv("ASKING_STAGE_N", "40")
    with ScriptedServer(asking_stage.reply, faults=Faults(latency_s=0.1)) as srv:
        full = run_pipeline(config(tmp_path / "uncapped", srv.base_url), stages=(asking_stage.SPEC,))
        full_cost = full.stages[0].llm_usage["cost"]
        srv.reset_log()
        llm_session.reset()
        cfg = config(tmp_path / "b", srv.base_url, max_cost_usd=round(full_cost * 0.75, 4))
        cfg.llm.endpoints["generator"].max_concurrency = 8
        with pytest.raises(IncompleteRunError, match="is used up"):
            run_pipeline(cfg, stages=(asking_stage.SPEC,))
        log = [e for e in srv.log if e["path"] == "chat"]
    spent = BuildStore(tmp_path / "b").manifest("ask").llm_usage["cost"]
    assert 0 < spent <= cfg.llm.max_cost_usd
    overlapping = max(sum(1 for o in log if o["t"] <= e["t"] < o["t_end"]) for e in log)
    assert overlapping > 1, "the calls never overlapped: the test did not exercise calls in flight"


def test_cached_answers_cost_nothing_and_need_no_budget(tmp_path):
    """A forced re-run of a finished stage is answered from the LLM cache: it runs with a cap the build's
    spend has already reached, and the spend does not grow."""
    with ScriptedServer(asking_stage.reply) as srv:
        build = tmp_path / "build"
        first = run_pipeline(config(build, srv.base_url), stages=(asking_stage.SPEC,))
        spent = first.budget["spent_usd"]
        srv.reset_log()
        llm_session.reset()
        again = run_pipeline(config(build, srv.base_url, max_cost_usd=spent), stages=(asking_stage.SPEC,),
                             force=["ask"])
        assert srv.log == []
    assert again.stages[0].status == "ran" and not again.stages[0].failed
    assert again.budget["spent_usd"] == pytest.approx(spent) and again.budget["spent_this_run_usd"] == 0


def test_a_per_stage_cap_stops_its_stage_only(tmp_path):
    """``max_cost_usd_per_stage`` caps the named stage (and its dotted sub-stages); other stages are not
    counted against it."""
    with ScriptedServer(asking_stage.reply) as srv:
        with pytest.raises(IncompleteRunError) as info:
            run_pipeline(config(tmp_path / "b", srv.base_url, max_cost_usd_per_stage={"ask": 0.3}),
                         stages=(asking_stage.SPEC,))
        assert "llm.max_cost_usd_per_stage.ask = $0.3 is used up" in str(info.value)
        llm_session.reset()
        report = run_pipeline(config(tmp_path / "c", srv.base_url, max_cost_usd_per_stage={"eval": 0.3}),
                              stages=(asking_stage.SPEC,))
    assert not report.stages[0].failed and report.budget["max_cost_usd_per_stage"] == {"eval": 0.3}
    # a misspelt stage would cap nothing: refused before any call
    with pytest.raises(ConfigError, match=r"max_cost_usd_per_stage names \['aks'\], which cover no LLM calls"):
        run_pipeline(config(tmp_path / "d", "http://127.0.0.1:1", max_cost_usd_per_stage={"aks": 0.3}),
                     stages=(asking_stage.SPEC,))


def test_the_reservation_rule_never_lets_calls_in_flight_pass_the_cap():
    """A call starts only when spend + reservations in flight + its own reservation fit; it waits while only
    calls in flight are in the way and is refused once the spend alone leaves no room."""
    budget = Budget(LLMSettings(max_cost_usd=1.0, max_cost_usd_per_stage={"eval": 0.5}))
    a = budget.reserve("questions", 0.6)
    assert a is not None
    assert budget.reserve("questions", 0.6) is None  # would fit once the first settles cheaper: wait
    budget.settle(a, "questions", 0.1)
    b = budget.reserve("questions", 0.6)
    assert b is not None
    budget.settle(b, "questions", 0.6)  # spent 0.7
    with pytest.raises(BudgetExhausted, match=r"llm\.max_cost_usd = \$1 is used up"):
        budget.reserve("questions", 0.31)
    with pytest.raises(BudgetExhausted):  # the cap is closed for the run, even for a call that would fit
        budget.reserve("questions", 0.01)
    with pytest.raises(BudgetExhausted, match="max_cost_usd"):
        budget.reserve("eval.answer.m1", 0.01)  # the whole-run cap covers every stage
    assert prompt_token_bound(["日本"]) == 6 + 16 * 2  # bytes, not characters: never fewer than the tokens


def test_the_cap_keys_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="max_cost_usd"):
        config(tmp_path, "http://127.0.0.1:1", max_cost_usd=0)
    with pytest.raises(ConfigError, match="positive amount"):
        config(tmp_path, "http://127.0.0.1:1", max_cost_usd_per_stage={"questions": -1})


def test_evaluate_run_stops_at_the_cap_and_a_higher_cap_finishes_without_paying_twice(tmp_path):
    """``evaluate run`` calls models and judges through the same LLM layer: the same cap applies (the build's
    ledger), the run (CLI) exits 3 naming it after writing the partial report, and a re-run with a higher
    cap completes with every request sent once."""
    import yaml

    from babelrag.config import load_config
    from babelrag.evaluators.execution import evaluate_release
    from tests.test_eval_run_contract import _cli, _config, _split_release
    from tests.test_eval_runner import brain

    release, _, _ = _split_release(tmp_path)

    def configure(server, build: str, **llm) -> Path:
        path = _config(tmp_path, server)
        cfg = yaml.safe_load(path.read_text())
        cfg["project"]["build_dir"] = str(tmp_path / build)
        for ep in cfg["llm"]["endpoints"].values():
            ep.update(price_per_1k_input=0.1, price_per_1k_output=1.0, max_tokens=16)
        cfg["llm"].update(llm)
        path.write_text(yaml.safe_dump(cfg))
        return path

    def sent(server) -> list[str]:
        return [e["key"] for e in server.log if e.get("status") == 200]

    with ScriptedServer(brain) as srv:
        evaluate_release(load_config(configure(srv, "uncapped")), release, out_dir=tmp_path / "u")
        full = json.loads((tmp_path / "uncapped" / "llm_spend.json").read_text())["total_usd"]
        srv.reset_log()

        cap = round(full * 0.9, 4)  # room for the first calls at their reservations, not for all
        res = _cli("evaluate", "run", release, "-c", configure(srv, "build", max_cost_usd=cap), "--out", tmp_path / "e")
        first = sent(srv)
        assert res.returncode == 3, res.stderr[-3000:]
        message = " ".join(res.stderr.split())
        assert "the LLM budget stopped the evaluation" in message
        assert f"the budget llm.max_cost_usd = ${cap:g} is used up" in message
        spent = json.loads((tmp_path / "build" / "llm_spend.json").read_text())["total_usd"]
        assert 0 < spent <= cap and first, (full, cap, spent)

        srv.reset_log()
        evaluate_release(load_config(configure(srv, "build", max_cost_usd=full * 2)), release, out_dir=tmp_path / "e")
        second = sent(srv)
    assert not set(first) & set(second) and len(set(second)) == len(second)  # no request paid twice
    assert json.loads((tmp_path / "build" / "llm_spend.json").read_text())["total_usd"] == pytest.approx(full)
