"""The card tells the truth about annotation (issue 37, item 5): agreement from the final pulled responses
of dataset-annotation projects, with items and annotators and how records were decided; model-answer
judgement is left to the evaluation. Before, the card copied whichever ``*.agreement.json`` was written
last (pre-adjudication numbers, or the adjudicated subset only) and listed answer judgement as dataset
annotation."""
from __future__ import annotations

import json

from babelrag.release.build import build_release
from tests.helpers.release_fixtures import make_build, make_config


def _row(project, dataset, rid, who, values, status="submitted"):
    return {"project": project, "dataset": dataset, "record_id": rid, "annotator": who, "user_id": who,
            "status": status, "values": values, "inserted_at": "2026-11-20", "updated_at": "2026-11-20"}


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_card_agreement_comes_from_the_final_responses_of_dataset_annotation(tmp_path):
    make_build(tmp_path / "build")
    ann = tmp_path / "build" / "annotate"
    ann.mkdir()
    ds = "babelrag-qa-verification"
    yes = {"natural": "yes", "answerable": "yes", "answer_correct": "yes"}
    rows = []
    for i in range(1, 5):
        rows += [_row("qa_verification", ds, f"q{i}", "ana", yes), _row("qa_verification", ds, f"q{i}", "jonas", yes)]
    rows += [_row("qa_verification", ds, "q5", "ana", yes),
             _row("qa_verification", ds, "q5", "jonas", {**yes, "answerable": "no"})]  # disputed, adjudicated
    rows += [_row("qa_verification", ds, "q6", "ana", {**yes, "natural": "no"})]  # one response: pending
    _write(ann / "qa_verification.responses.jsonl", rows)
    _write(ann / "qa_verification.records.jsonl", [
        {"project": "qa_verification", "dataset": ds, "record_id": f"q{i}", "fields": {}, "metadata": {},
         "suggestions": {}, "status": "completed"} for i in range(1, 7)])
    _write(ann / "qa_verification.adjudication.responses.jsonl",
           [_row("qa_verification", "babelrag-adjudication-qa-verification", "q5", "judge", yes)])
    _write(ann / "answer_judgement.responses.jsonl",
           [_row("answer_judgement", "babelrag-answer-judgement", "a1", w, {"verdict": v})
            for w, v in (("ana", "correct"), ("jonas", "incorrect"))])
    # a stale snapshot: must not reach the card
    (ann / "qa_verification.agreement.json").write_text(json.dumps({"annotators": [
        {"dataset": ds, "question": "natural", "items": 3, "annotators": 2, "raw_agreement": 0.123}]}))

    text = (build_release(make_config(tmp_path)).folder / "README.md").read_text(encoding="utf-8")
    section = text.split("## Annotation", 1)[1].split("\n## ", 1)[0]
    assert "0.123" not in section and "answer_judgement" not in section.split("model judgement")[0]
    assert "**qa_verification: agreement between annotators (final responses)**" in section
    assert f"| {ds} | natural | 5 | 2 | 1.000 |" in section  # 5 items with two labels, 2 annotators
    assert f"| {ds} | answerable | 5 | 2 | 0.800 |" in section
    assert "- records: 6" in section and "- annotators: 2" in section
    assert "- by_annotators: 4" in section and "- by_adjudicator: 1" in section and "- pending: 1" in section
    assert "reported with the evaluation" in section
