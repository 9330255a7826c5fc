"""``evaluate run --judge-repeats N``: each judge is asked again (new samples, never cache copies), its
self-consistency and the panel's Fleiss' kappa land in results.json and the report; a re-run pays nothing."""
import yaml

from babelrag.testing.scripted_server import ScriptedServer
from tests.test_eval_run_contract import _cli, _write_release, strict_load
from tests.test_eval_runner import _instances, brain


class FlakyBrain:
    """``judge-flaky`` flips its verdict on the questions numbered (1) when asked with seed 2 (its second
    repeat); ``judge-a`` never changes its mind. Records the sampling of every judge request."""

    def __init__(self):
        self.judge_requests = []

    def __call__(self, body):
        user = body["messages"][-1]["content"]
        reply = brain(body)
        if body["model"].startswith("judge") and "Candidate answer:" in user:
            self.judge_requests.append((body["model"], body.get("seed"), body.get("temperature")))
            if body["model"] == "judge-flaky" and body.get("seed") == 2 and "(1)" in user:
                reply = {"correct": not reply["correct"], "reason": "changed its mind"}
        return reply


def _config(tmp_path, srv):
    ep = {"base_url": srv.base_url, "timeout_s": 5, "max_retries": 0}
    cfg = tmp_path / "babelrag.yaml"
    cfg.write_text(yaml.safe_dump({
        "project": {"name": "t", "build_dir": str(tmp_path / "build"), "seed": 5},
        "llm": {"endpoints": {"good": {**ep, "model": "served-good"}, "weak": {**ep, "model": "served-weak"},
                              "judge-1": {**ep, "model": "judge-a"}, "flaky": {**ep, "model": "judge-flaky"}},
                "default_endpoint": "good", "progress": False},
        "evaluate": {"models": ["good", "weak"], "judges": ["judge-1", "flaky"], "out_dir": "eval",
                     "metrics": ["xrag"]}}))
    return cfg


def test_judge_repeats_measure_self_consistency_and_panel_agreement(tmp_path):
    release = tmp_path / "release"
    _write_release(release, {"test": _instances()})
    scripted = FlakyBrain()
    with ScriptedServer(scripted) as srv:
        cfg = _config(tmp_path, srv)
        res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "ev", "--rounds", "20",
                   "--judge-repeats", "3")
        assert res.returncode == 0, res.stderr
        # 12 answers (2 models x 6 instances): one scoring vote + 3 repeats per judge, each a real request
        flaky = [r for r in scripted.judge_requests if r[0] == "judge-flaky"]
        assert len(flaky) == 12 * 4
        assert sorted({(seed, temp) for _, seed, temp in flaky}) == [(0, 0.0), (1, 0.7), (2, 0.7), (3, 0.7)]
        data = strict_load(tmp_path / "ev" / "results.json")
        rel = data["judge_reliability"]
        # the flaky judge changed its verdict on the 4 answers to questions (1) in its second repeat
        assert rel["self_consistency"]["judges"]["flaky"]["self_consistency"] == 8 / 12
        assert rel["self_consistency"]["judges"]["judge-1"]["self_consistency"] == 1.0
        assert rel["self_consistency"]["judges"]["flaky"]["temperature"] == 0.7
        assert "not cached copies" in rel["self_consistency"]["note"]
        # the scoring votes of both judges agree on every answer: good right, weak wrong
        assert rel["panel"] == {"judges": ["judge-1", "flaky"], "fleiss_kappa": 1.0, "items": 12, "left_out": 0}
        assert data["run"]["settings"]["judge_repeats"] == 3
        page = (tmp_path / "ev" / "report.html").read_text()
        assert "Judge reliability" in page and "Fleiss' κ = 1.000 over 12 answers" in page
        assert "<td>flaky</td><td>3</td><td>0.700</td><td>0.667</td>" in page

        # a re-run reads every repeat back from the response cache: no judge is asked again
        before = len(scripted.judge_requests)
        res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "ev2", "--rounds", "20",
                   "--judge-repeats", "3")
        assert res.returncode == 0, res.stderr
        assert len(scripted.judge_requests) == before
        assert strict_load(tmp_path / "ev2" / "results.json")["judge_reliability"] == rel

        res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "bad", "--judge-repeats", "0")
        assert res.returncode == 2 and "repeats must be 2 or more" in res.stderr and "Traceback" not in res.stderr


def test_one_judge_has_no_panel_agreement(tmp_path):
    from babelrag.evaluators.judge_reliability import panel_agreement

    assert panel_agreement([{"j": True}], ["j"])["fleiss_kappa"] is None
    got = panel_agreement([{"a": True, "b": True}, {"a": False, "b": None}, {"a": False, "b": False}], ["a", "b"])
    assert got == {"judges": ["a", "b"], "fleiss_kappa": 1.0, "items": 2, "left_out": 1}
