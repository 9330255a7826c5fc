"""Human verdicts correct the judges (issue 37, item 4): the panel's verdict is written to answers.jsonl
(the annotators' hint), human answer-judgement decisions give each judge's kappa in results.json and the
report, and forced-choice decisions feed ``compare_variants`` without reshaping by hand."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from babelrag.annotate import merge, projects, samples
from babelrag.annotate.settings import AnnotateSettings
from babelrag.cli import app
from babelrag.evaluators.answers import read_answers
from babelrag.evaluators.contrastive import compare_variants, human_pairs
from babelrag.evaluators.release_reader import load_instances
from babelrag.records import ContrastivePair
from babelrag.testing.scripted_server import ScriptedServer
from tests.test_eval_release_e2e import eval_config, release_brain, release_folder  # noqa: F401 (fixture)


def test_judges_are_measured_against_human_verdicts(tmp_path, release_folder):  # noqa: F811
    instances = load_instances(release_folder)
    brain = release_brain(instances)

    def panel(body):  # judge-2 says "correct" to everything: it disagrees with humans on the weak answers
        if body["model"] == "judge-b" and "Gold answer:" in body["messages"][-1]["content"]:
            return {"correct": True, "reason": "lenient"}
        return brain(body)

    with ScriptedServer(panel) as srv:
        cfg = eval_config(tmp_path, srv.base_url, metrics=("xrag",))
        res = CliRunner().invoke(app, ["evaluate", "run", str(release_folder), "-c", str(cfg), "--out",
                                       str(tmp_path / "eval"), "--rounds", "50"])
        assert res.exit_code == 0, res.output
        answers = read_answers(tmp_path / "eval" / "answers.jsonl")
        # before: judge_verdict was never written (0 of 64 in the run)
        assert answers and all(a.judge_verdict in ("correct", "incorrect") for a in answers)
        assert {a.model: a.judge_verdict for a in answers if a.model == "good"} == {"good": "correct"}
        # humans (the annotate pull decisions file): the good answers are correct, the weak ones not
        decisions = tmp_path / "answer_judgement.decisions.jsonl"
        decisions.write_text("".join(json.dumps({"id": a.id, "human_verdict": "correct" if a.model == "good" else
                                                 "incorrect", "annotators": []}) + "\n" for a in answers))
        made = tmp_path / "made.jsonl"  # the same answers as an answers file (same ids: model:instance)
        made.write_text("".join(json.dumps({"instance_id": a.instance_id, "model": a.model, "answer": a.answer,
                                            "doc_order": a.doc_order}) + "\n" for a in answers))
        res = CliRunner().invoke(app, ["evaluate", "run", str(release_folder), "-c", str(cfg), "--out",
                                       str(tmp_path / "eval2"), "--rounds", "50", "--answers", str(made),
                                       "--human", str(decisions)])
        assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "eval2" / "results.json").read_text())
    per_judge = data["judge_vs_human"]["judges"]
    assert data["judge_vs_human"]["human_labels"] == len(answers)
    assert per_judge["judge-1"]["kappa"]["value"] == 1.0 and per_judge["judge-1"]["items"] == len(answers)
    assert per_judge["judge-2"]["kappa"]["value"] == 0.0  # always "correct": no agreement beyond chance
    agg = data["metrics"]["good"]["xrag"]["aggregate"]
    assert "kappa_vs_human[judge-1]" in agg and "kappa_vs_human" in agg
    assert "Kappa vs human[judge-2]" in (tmp_path / "eval2" / "report.html").read_text()


def test_forced_choice_decisions_feed_compare_variants():
    rows = samples.contrastive_pairs(6)
    pairs = [ContrastivePair.model_validate(r) for r in rows]
    records = [{"record_id": r.id, "metadata": r.metadata}
               for r in projects.build_records("forced_choice", rows, AnnotateSettings())]
    # both annotators pick the better side, except on cp2 where both pick the worse one
    responses = []
    for rec in records:
        pos = rec["metadata"]["better_position"]
        pick = pos if rec["record_id"] != "cp2" else ("B" if pos == "A" else "A")
        responses += [{"dataset": "ds", "record_id": rec["record_id"], "annotator": w, "status": "submitted",
                       "updated_at": "t", "values": {"choice": pick}} for w in ("ana", "jonas")]
    decisions = merge.forced_choice_outcomes(responses, records, 2)
    fed = human_pairs(pairs, decisions)["faithfulness"]
    by = {p["pair_id"]: p for p in fed}
    for p in pairs:
        expected = p.better if p.id != "cp2" else ("b" if p.better == "a" else "a")
        assert by[p.id]["human"] == expected
        assert (by[p.id]["answer_a"], by[p.id]["answer_b"]) == (p.option_a, p.option_b)
    assert compare_variants(None, "judge", "faithfulness", fed, variants=()) == {}  # input accepted as it is
