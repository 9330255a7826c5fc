"""Judges calibrated by human verdicts: agreement statistics against published worked examples, the
prediction-powered estimate on a synthetic biased judge, and ``babelrag evaluate calibrate`` end to end."""
import json
import random

import pytest
import yaml

from babelrag.errors import InputError
from babelrag.evaluators.calibration import HumanVerdict, JudgedItem, calibrate, verdicts_from_triples
from babelrag.stats import clt_mean, cohen_kappa, fleiss_kappa, krippendorff_alpha, ppi_mean
from babelrag.testing.scripted_server import ScriptedServer
from tests.test_eval_run_contract import _cli, _write_release, strict_load
from tests.test_eval_runner import _instances, brain

N = None


def test_cohen_kappa_wikipedia_worked_example():
    # Wikipedia, "Cohen's kappa", simple example: 50 grant proposals read by A and B;
    # 20 yes/yes, 5 yes(A)/no(B), 10 no(A)/yes(B), 15 no/no -> p_o = 0.7, p_e = 0.5, kappa = 0.4
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_fleiss_kappa_wikipedia_worked_example():
    # Wikipedia, "Fleiss' kappa", worked example: 14 raters put 10 subjects into 5 categories; kappa = 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    ratings = [[cat for cat, count in enumerate(row) for _ in range(count)] for row in table]
    assert fleiss_kappa(ratings) == pytest.approx(0.210, abs=5e-4)


def test_krippendorff_alpha_published_worked_examples():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: nominal data, 4 observers,
    # 12 units, missing values -> alpha = 0.743
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3]
    c = [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N]
    assert krippendorff_alpha(list(zip(a, b, c, d))) == pytest.approx(0.743, abs=5e-4)
    # Wikipedia, "Krippendorff's alpha", example: 3 coders, 15 units, nominal -> alpha = 0.691
    rows = [[N, N, N, N, N, 3, 4, 1, 2, 1, 1, 3, 3, N, 3],
            [1, N, 2, 1, 3, 3, 4, 3, N, N, N, N, N, N, N],
            [N, N, 2, 1, 3, 4, 4, N, 2, 1, 1, 3, 3, N, 4]]
    assert krippendorff_alpha(list(zip(*rows))) == pytest.approx(0.691, abs=5e-4)


def _biased_population(n_items=2000, human_rate=0.5, extra=0.4, seed=3):
    """Humans find ``human_rate`` of the answers correct; the judge agrees on those and also calls
    ``extra`` of the wrong ones correct (human 0.5 -> judge about 0.7: 20 points too lenient)."""
    rng = random.Random(seed)
    human = [rng.random() < human_rate for _ in range(n_items)]
    judge = [h or rng.random() < extra for h in human]
    return human, judge


def test_prediction_powered_estimate_recovers_the_human_rate_that_the_biased_judge_misses():
    human, judge = _biased_population()
    truth = sum(human) / len(human)
    labelled = set(random.Random(7).sample(range(len(human)), 200))  # a random sample gets human labels
    items = [JudgedItem(f"q{k}", "m", j, {"lenient": j}) for k, j in enumerate(judge)]
    # (instance id, model, verdict) triples: the shape the Argilla answer-judgement pull hands over
    verdicts = verdicts_from_triples([(f"q{k}", "m", human[k]) for k in sorted(labelled)], "argilla")
    report = calibrate(items, verdicts)["models"]["m"]
    naive = report["accuracy"]["judge"]["value"]
    ppi = report["accuracy"]["prediction_powered"]
    assert naive == pytest.approx(sum(judge) / len(judge)) and naive > truth + 0.15
    assert ppi["ci_low"] <= truth <= ppi["ci_high"]
    assert not (ppi["ci_low"] <= naive <= ppi["ci_high"])
    assert ppi["labelled"] == 200 and ppi["unlabelled"] == 1800
    assert ppi["rectifier"] == pytest.approx(sum(judge[k] - human[k] for k in labelled) / 200)
    # the judge's agreement with the humans is measured on the 200 labelled answers
    lenient = report["agreement"]["lenient"]
    assert lenient["n"] == 200 and 0.5 < lenient["cohen_kappa"] < 0.75
    # PPI is narrower than the humans alone when the judge is informative
    human_only = report["accuracy"]["human_only"]
    assert ppi["ci_high"] - ppi["ci_low"] < human_only["ci_high"] - human_only["ci_low"]


def test_ppi_with_every_answer_labelled_is_the_human_mean():
    est = ppi_mean([], [1, 1, 0, 1], [1, 0, 0, 1])
    mean, low, high = clt_mean([1, 0, 0, 1])
    assert (est.value, est.low, est.high) == pytest.approx((mean, low, high)) and est.value == 0.5


def test_unknown_or_repeated_human_verdicts_are_named():
    items = [JudgedItem("q1", "m", True, {}), JudgedItem("q2", "m", False, {})]
    with pytest.raises(InputError, match="h.jsonl:2: no scored answer of model 'm' to instance 'q9'"):
        calibrate(items, [HumanVerdict("q1", "m", True, "h.jsonl:1"), HumanVerdict("q9", "m", True, "h.jsonl:2")])
    with pytest.raises(InputError, match="a second verdict on model 'm', instance 'q1'"):
        calibrate(items, [HumanVerdict("q1", "m", True), HumanVerdict("q1", "m", False)])
    with pytest.raises(InputError, match="argilla #1: verdict on 'm'/'q2' must be true or false, got 'yes'"):
        verdicts_from_triples([("q1", "m", True), ("q2", "m", "yes")], "argilla")


def lenient_brain(body):
    """The judge ``judge-lenient`` calls every answer correct; everything else as the shared brain."""
    user = body["messages"][-1]["content"]
    if body["model"] == "judge-lenient" and "Candidate answer:" in user:
        return {"correct": True, "reason": "lenient"}
    return brain(body)


def test_calibrate_cli_on_an_evaluation_with_a_lenient_judge(tmp_path):
    release = tmp_path / "release"
    _write_release(release, {"test": _instances()})
    with ScriptedServer(lenient_brain) as srv:
        ep = {"base_url": srv.base_url, "timeout_s": 5, "max_retries": 0}
        cfg = tmp_path / "babelrag.yaml"
        cfg.write_text(yaml.safe_dump({
            "project": {"name": "t", "build_dir": str(tmp_path / "build"), "seed": 5},
            "llm": {"endpoints": {"good": {**ep, "model": "served-good"}, "weak": {**ep, "model": "served-weak"},
                                  "judge-1": {**ep, "model": "judge-a"}, "lenient": {**ep, "model": "judge-lenient"}},
                    "default_endpoint": "good", "progress": False},
            "evaluate": {"models": ["good", "weak"], "judges": ["lenient", "judge-1"], "out_dir": "eval",
                         "metrics": ["xrag"]}}))
        res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "ev", "--rounds", "20")
        assert res.returncode == 0, res.stderr
    # humans judged four answers of each model: the good model's are right, the weak model's wrong
    human = tmp_path / "human.jsonl"
    ids = sorted(i.id for i in _instances())[:4]
    human.write_text("".join(json.dumps({"instance_id": i, "model": m, "human": m == "good"}) + "\n"
                             for m in ("good", "weak") for i in ids))
    res = _cli("evaluate", "calibrate", tmp_path / "ev", "--human", human)
    assert res.returncode == 0, res.stderr
    report = strict_load(tmp_path / "ev" / "calibration.json")
    weak = report["models"]["weak"]
    # the panel (lenient + strict judge, ties count as incorrect) calls the weak answers wrong; the lenient
    # judge alone disagrees with every human verdict on them
    assert weak["agreement"]["lenient"] == {"n": 4, "agreement": 0.0, "cohen_kappa": 0.0,
                                            "krippendorff_alpha": pytest.approx(-0.75)}
    assert weak["agreement"]["judge-1"]["agreement"] == 1.0 and weak["agreement"]["panel"]["n"] == 4
    assert weak["accuracy"]["prediction_powered"]["value"] == 0.0
    assert report["models"]["good"]["accuracy"]["prediction_powered"]["value"] == 1.0
    assert "weak: judge accuracy 0.000 (n=6), human-corrected 0.000" in res.stdout
    assert "lenient: agreement 0.000, Cohen's kappa 0.000" in res.stdout

    # the same verdicts as the Argilla answer-judgement pull writes them (decisions file, one undecided row)
    decisions = tmp_path / "answer_judgement.decisions.jsonl"
    decisions.write_text("".join(json.dumps({"id": f"{m}:{i}", "human_verdict": "correct" if m == "good" else
                                             "incorrect"}) + "\n" for m in ("good", "weak") for i in ids)
                         + json.dumps({"id": f"good:{sorted(i.id for i in _instances())[5]}", "human_verdict": None})
                         + "\n")
    res = _cli("evaluate", "calibrate", tmp_path / "ev", "--human", decisions, "--out", tmp_path / "from_argilla.json")
    assert res.returncode == 0, res.stderr
    assert strict_load(tmp_path / "from_argilla.json")["models"] == report["models"]

    human.write_text(json.dumps({"instance_id": ids[0], "model": "good", "human": "yes"}) + "\n")
    res = _cli("evaluate", "calibrate", tmp_path / "ev", "--human", human, "--out", tmp_path / "c.json")
    assert res.returncode == 2 and f"{human}:1: human must be true or false, got 'yes'" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "c.json").exists()
