"""`babelrag plan` against what the run then does: the shipped sample corpus, every LLM call answered over real
HTTP by the scripted demo brain (tests/test_demo_e2e.py), endpoint prices set.

Tolerances (docs/plan.md): calls within 25 % per stage and in total (read from run_report.json's usage
counters); prompt tokens within 25 % per stage of the same rule applied to the prompts the server really
received (characters / 4 + 8 per message: the scripted server counts words, not a model tokenizer, so its
reported token counts are compared only as a ceiling: completion tokens at most the plan's max_tokens
figure, recorded cost at most the plan's ceiling cost).
"""
from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from babelrag.cli import app
from babelrag.construct.plan import Assumptions, Plan, make_plan, message_tokens
from babelrag.demo import demo_config
from babelrag.errors import ConfigError
from babelrag.pipeline import run_pipeline
from babelrag.testing.scripted_server import ScriptedServer
from tests.test_demo_e2e import DemoBrain

pytestmark = pytest.mark.slow  # ingest + index + pairs of the sample corpus, then the whole build (~2 min)

TOLERANCE = 0.25
PRICE_IN, PRICE_OUT = 0.5, 1.5  # USD per 1k tokens
STAGE_OF_ROUTE = {"relevance": "relevance", "summary": "questions", "simple_qa": "questions",
                  "crossdoc": "questions", "answer": "questions", "translate_qa": "questions",
                  "answer_single": "filters", "judge_answer": "filters", "answer_closed": "filters",
                  "well_formed": "filters", "translate_article": "instances"}


class MeasuringBrain(DemoBrain):
    """The demo brain, also adding up each stage's prompts by the plan's token rule."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: Counter = Counter()
        self.sent_lock = threading.Lock()

    def __call__(self, body: dict):
        msgs, user = body["messages"], [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        system = next((m["content"] for m in msgs if m["role"] == "system"), "")
        route = next((name for name, test, _ in self.routes() if test(system, user)), None)
        with self.sent_lock:
            self.sent[STAGE_OF_ROUTE.get(route, "?")] += message_tokens(msgs)
        return super().__call__(body)


def priced_config(tmp: Path, base_url: str):
    cfg = demo_config(tmp, base_url, "scripted", 4, "sample")
    endpoint = cfg.llm.endpoints["generator"]
    endpoint.price_per_1k_input, endpoint.price_per_1k_output = PRICE_IN, PRICE_OUT
    endpoint.max_concurrency, endpoint.rpm = 4, 30
    return cfg


@pytest.fixture(scope="module")
def planned_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plan")
    brain = MeasuringBrain()
    with ScriptedServer(brain) as srv:
        cfg = priced_config(tmp, srv.base_url)
        before = make_plan(cfg)  # builds ingest, index and pairs; no LLM call
        assert srv.count("chat") == 0
        # the plan priced 30 requests a minute; the run itself needs no such limit (it made the run ~2 min long)
        endpoint = cfg.llm.endpoints["generator"]
        endpoint.rpm = None
        run_pipeline(cfg)
        endpoint.rpm = 30
        after = make_plan(cfg)  # the finished build: counts read from it
    assert not brain.unknown, brain.unknown
    report = json.loads((cfg.build_dir / "run_report.json").read_text())
    usage = {s["stage"]: s["llm_usage"] for s in report["stages"]}
    return cfg, before, after, usage, brain


def within(estimate: float, actual: float) -> bool:
    return abs(estimate - actual) <= TOLERANCE * max(actual, 1)


def test_plan_estimates_the_calls_of_the_run(planned_run):
    cfg, before, _, usage, brain = planned_run
    plan = before.to_dict()
    estimated = {s["stage"]: s["calls"] for s in plan["stages"]}
    made = {stage: u.get("calls", 0) for stage, u in usage.items()}
    assert made["relevance"] and made["questions"] and made["filters"] and made["instances"]  # all paid stages ran
    for stage in estimated:
        assert within(estimated[stage], made.get(stage, 0)), (stage, estimated, made)
    assert within(plan["total"]["calls"], sum(made.values())), (plan["total"], made)
    # every prompt the run asked is in the plan, none it did not ask
    asked = {STAGE_OF_ROUTE[r] for r in brain.calls if r in STAGE_OF_ROUTE}
    assert asked == {s for s, n in estimated.items() if n}
    # per prompt, the default assumptions (every pair related, every question kept, every attempt answered)
    # make the plan a ceiling: no prompt is asked more often than planned
    per_prompt = Counter()
    for s in plan["stages"]:
        for st in s["steps"]:
            prompt_id = st["prompt"].split("@")[0]
            per_prompt["relevance" if prompt_id == "construct.pair_relevance" else prompt_id.split(".")[1]] += st["calls"]
    for route, n in brain.calls.items():
        if route in STAGE_OF_ROUTE:
            assert n <= per_prompt[route], (route, n, per_prompt)


def test_plan_measures_prompt_sizes_and_bounds_completion_and_cost(planned_run):
    cfg, before, _, usage, brain = planned_run
    for s in before.to_dict()["stages"]:
        stage = s["stage"]
        assert within(s["prompt_tokens"], brain.sent[stage]), (stage, s["prompt_tokens"], brain.sent)
        got = usage.get(stage, {})
        assert got.get("completion_tokens", 0) <= s["completion_tokens_max"], (stage, got, s)
        assert got.get("cost", 0) <= s["cost_usd_max"] + 1e-9, (stage, got, s)
        # cost is the endpoint's prices applied to the plan's tokens
        expected = s["prompt_tokens"] / 1000 * PRICE_IN + s["completion_tokens"] / 1000 * PRICE_OUT
        assert s["cost_usd"] == pytest.approx(expected, rel=1e-3, abs=1e-6)
    total = before.to_dict()["total"]
    assert total["cost_usd"] > 0 and total["cost_usd_max"] >= total["cost_usd"]


def test_wall_time_follows_the_endpoint_limits(planned_run):
    cfg, before, _, _, _ = planned_run
    for s in before.stages:  # 30 requests a minute bind before 4 at a time at 2 s each
        assert s.wall_s == pytest.approx(s.total("calls") / 30 * 60)
    # no RPM limit, 64 at a time: the chain's five steps still wait for each other (2 s each)
    endpoint = cfg.llm.endpoints["generator"]
    endpoint.rpm, endpoint.max_concurrency = None, 64
    try:
        fast = {s.stage: s for s in make_plan(cfg).stages}
    finally:
        endpoint.rpm, endpoint.max_concurrency = 30, 4
    assert fast["questions"].wall_s == pytest.approx(5 * 2.0)
    assert fast["relevance"].wall_s == pytest.approx(2.0)


def test_plan_of_a_finished_build_reads_its_counts(planned_run):
    cfg, _, after, usage, _ = planned_run
    plan = after.to_dict()
    assert all(s["state"] == "current" for s in plan["stages"])
    assert plan["to_run"]["calls"] == 0  # a run of this build makes no call
    for s in plan["stages"]:
        stage = s["stage"]
        if usage.get(stage, {}).get("calls"):
            assert s["recorded"]["calls"] == usage[stage]["calls"]
            assert within(s["calls"], usage[stage]["calls"]), (stage, s["calls"], usage[stage])
    relevance = next(s for s in plan["stages"] if s["stage"] == "questions")
    assert "related pairs" in json.dumps(relevance["steps"])  # from the verdicts, not the assumed share


def test_assumptions_change_the_estimate(planned_run):
    cfg, before, _, _, _ = planned_run
    half = make_plan(cfg, Assumptions(pass_share=0.9, answer_share=0.0))
    flt = {s.stage: s for s in half.stages}["filters"]
    assert {st.prompt.split("@")[0] for st in flt.steps} == {"filters.answer_single", "filters.answer_closed"}
    assert flt.total("calls") < {s.stage: s for s in before.stages}["filters"].total("calls")
    assert half.to_dict()["assumptions"]["pass_share"] == 0.9


def test_cli_plan_json_is_strict_and_the_table_names_the_stages(planned_run, tmp_path):
    import yaml

    cfg, before, _, _, _ = planned_run
    path = tmp_path / "babelrag.yaml"
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json", exclude={"base_dir"})))
    res = CliRunner().invoke(app, ["plan", "-c", str(path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    assert [s["stage"] for s in data["stages"]] == ["ingest", "relevance", "questions", "filters", "distractors",
                                                    "instances"]
    assert data["assumptions"]["relevant_share"] == 1.0 and "characters / 4" in data["token_rule"]
    res = CliRunner().invoke(app, ["plan", "-c", str(path)])
    assert res.exit_code == 0 and "babelrag plan" in res.output and "assumptions:" in res.output
    # --max-pairs plans the run `babelrag run --max-pairs 2` would make: 4 pairs checked, 2 turned into questions
    res = CliRunner().invoke(app, ["plan", "-c", str(path), "--json", "--max-pairs", "2"])
    assert res.exit_code == 0, res.output
    steps = {st["prompt"].split("@")[0]: st["calls"] for s in json.loads(res.stdout)["stages"] for st in s["steps"]}
    assert steps["construct.pair_relevance"] == 4 and steps["questions.crossdoc"] == 2, steps
    res = CliRunner().invoke(app, ["plan", "-c", str(path), "--assume", "pass_share=2"])
    assert res.exit_code != 0 and isinstance(res.exception, ConfigError)
    assert "plan" in CliRunner().invoke(app, ["--help"]).output


def test_assumptions_parse_rejects_unknown_keys():
    assert Assumptions.parse(["relevant_share=0.4", "latency_s=5"]) == Assumptions(relevant_share=0.4, latency_s=5)
    with pytest.raises(ConfigError, match="KEY one of"):
        Assumptions.parse(["relevance=0.4"])
    assert isinstance(Plan([], Assumptions()).to_dict()["total"]["calls"], int)


def test_plan_never_builds_a_cheap_stage_that_would_call_an_endpoint(tmp_path):
    from babelrag.errors import InputError
    from babelrag.store import BuildStore

    cfg = demo_config(tmp_path, "http://127.0.0.1:9/v1", "scripted", 4, "sample")
    cfg.ner.backend = "llm"  # ingest would ask the endpoint for title entities
    with pytest.raises(InputError, match="--until pairs") as err:
        make_plan(cfg)
    assert err.value.exit_code == 2 and "ner.backend is llm" in str(err.value)
    assert BuildStore(cfg.build_dir).manifest("ingest") is None  # nothing was built
