"""Human work reaches the release (issue 37), without a server: which questions go to translation, how a
post-edit records the English it was made against, and the merge's decision rules."""
from __future__ import annotations

from babelrag.annotate import merge, projects, samples
from babelrag.annotate.settings import AnnotateSettings
from babelrag.records import QAItem


def _qa(i: int, **update) -> dict:
    return {**samples.qa_items(i, reviewed=True)[-1], **update}


def test_translation_is_pushed_from_reviewed_questions_and_only_their_languages():
    """Defect 6 and the second half of defect 1: before, every filters-stage question went to every
    configured language (15 of 24 records for languages no instance used, translators post-editing the
    unreviewed English)."""
    rows = [_qa(1, x_language=""),  # en–en: every target language
            _qa(2, x_language="de"),  # de–en: German only
            _qa(3, x_language="fr"),  # fr–en: not German
            {**samples.qa_items(4)[-1], "x_language": ""},  # not reviewed yet
            _qa(5, x_language="", accepted=False, rejected_by="human_verification",
                human_review={**_qa(5)["human_review"], "passed": False, "votes": {"natural": "no"}})]
    s = AnnotateSettings()
    records = projects.build_records("translation", rows, s, "de")
    assert [r.id for r in records] == ["qa1", "qa2"]
    pt = projects.registry.get("translation")
    assert pt.skipped(rows, "de") == {projects.LANGUAGE_UNUSED: 1, projects.NOT_REVIEWED: 1, projects.REJECTED: 1}
    assert [r.id for r in projects.build_records("translation", rows, s, "fr")] == ["qa1", "qa3"]
    # the English the translators see is fingerprinted in the record (the merge stores it on the post-edit)
    assert records[0].metadata["en_source"] == QAItem.model_validate(rows[0]).source_fingerprint


def _post_edit(record_id: str) -> list[dict]:
    return [{"dataset": "babelrag-translation-de", "record_id": record_id, "annotator": a, "status": "submitted",
             "updated_at": "2026-01-01", "values": {"question_translation": "Frage?", "answer_translation": "Antwort."}}
            for a in ("ann1", "ann2")]


def test_a_post_edit_of_english_corrected_since_is_not_current():
    items = [QAItem.model_validate(q) for q in samples.qa_items(2, reviewed=True)]
    shown_then = projects.translation_records(items, "de")
    corrected = items[1].model_copy(update={"answer": "Lisbon, with 102 delegates."})
    records = [{"dataset": "babelrag-translation-de", "record_id": r.id, "metadata": r.metadata} for r in shown_then]
    merged, report = merge.merge_translation([items[0], corrected], _post_edit("qa1") + _post_edit("qa2"), "de", 2,
                                             records)
    assert merged[0].translation_is_current(merged[0].translation("de"))
    assert not merged[1].translation_is_current(merged[1].translation("de"))
    assert report.outdated == ["qa2"]


# ----------------------------------------------------------------------------- decision rules (defect 2)


def _verify(record_id: str, annotator: str, natural="yes", answerable="yes", correct="yes", corrected="",
            dataset="babelrag-qa-verification") -> dict:
    return {"dataset": dataset, "record_id": record_id, "annotator": annotator, "status": "submitted",
            "updated_at": "2026-11-20T10:00:00",
            "values": {"natural": natural, "answerable": answerable, "answer_correct": correct,
                       "corrected_answer": corrected}}


def test_a_unanimous_rejection_settles_whatever_the_other_labels_say():
    """Before: merge needed a majority on all three labels, so q1 (both: not natural; a tie on
    answerable) stayed unresolved and shipped (8 rows in the issue's run)."""
    items = [QAItem.model_validate(q) for q in samples.qa_items(3)]
    rs = [_verify("qa1", "ana", natural="no", answerable="yes"), _verify("qa1", "jonas", natural="no", answerable="no",
                                                                           correct="no", corrected="Porto.")]
    rs += [_verify("qa2", "ana", answerable="no"), _verify("qa2", "jonas", answerable="no", correct="no")]
    rs += [_verify("qa3", "ana", natural="no"), _verify("qa3", "jonas", natural="yes")]  # a tie on the rule itself
    merged, report = merge.merge_qa_verification(items, rs, min_submitted=2)
    by = {q.id: q for q in merged}
    assert not by["qa1"].accepted and by["qa1"].rejected_by == "human_verification" and not by["qa1"].verified
    assert by["qa1"].human_review.votes.natural == "no" and by["qa1"].human_review.votes.answerable is None
    assert by["qa1"].answer == items[0].answer  # a rejection takes no correction
    assert not by["qa2"].accepted
    assert report.unresolved == ["qa3"] and report.rejected == 2 and report.merged == 2


def test_rules_are_declared_per_project_type():
    from babelrag.annotate import registry

    rules = {name: registry.get(name).rules for name in registry.names()}
    assert rules["qa_verification"].settles == (("natural", "no"), ("answerable", "no"))
    assert rules["grounding"] is None  # not merged, nothing to adjudicate
    assert rules["forced_choice"].decides == ("choice",) and rules["answer_judgement"].decides == ("verdict",)
    assert "settled by a decided natural = no or answerable = no" in rules["qa_verification"].describe()
    assert [t.question for t in rules["translation"].texts] == ["question_translation", "answer_translation"]


def test_the_adjudicators_verdict_settles_a_disputed_record():
    items = [QAItem.model_validate(q) for q in samples.qa_items(2)]
    rs = [_verify("qa1", "ana", correct="no", corrected="Porto hosted more."),
          _verify("qa1", "jonas", correct="no", corrected="Lisbon, 101 delegates.")]  # conflicting corrections
    rs += [_verify("qa2", "ana"), _verify("qa2", "jonas", answerable="no")]
    _, report = merge.merge_qa_verification(items, rs, min_submitted=2)
    assert report.unresolved == ["qa1", "qa2"]
    adj = [_verify("qa1", "judge", correct="no", corrected="Lisbon, 101 delegates.",
                   dataset="babelrag-adjudication-qa-verification"),
           _verify("qa2", "judge", dataset="babelrag-adjudication-qa-verification")]
    merged, report = merge.merge_qa_verification(items, rs, 2, adj)
    assert report.unresolved == [] and report.adjudicated == 2
    assert merged[0].answer == "Lisbon, 101 delegates." and merged[0].verified
    assert merged[0].human_review.original_answer == items[0].answer
    assert merged[0].human_review.adjudicator.annotator == "judge"
    assert [a.annotator for a in merged[0].human_review.annotators] == ["ana", "jonas"]
    assert merged[1].verified and merged[1].human_review.adjudicator.annotator == "judge"


def test_disputed_records_go_to_adjudication_with_every_answer_shown():
    from babelrag.annotate import adjudication

    items = samples.qa_items(3)
    records = [{"dataset": "babelrag-qa-verification", "record_id": r.id, "fields": r.fields, "metadata": r.metadata,
                "suggestions": {s.question: s.value for s in r.suggestions}}
               for r in projects.build_records("qa_verification", items, AnnotateSettings())]
    rs = [_verify("qa1", "ana", correct="no", corrected="Porto hosted more."),
          _verify("qa1", "jonas", correct="no", corrected="Lisbon, 101 delegates.")]
    rs += [_verify("qa2", "ana", natural="no"), _verify("qa2", "jonas", natural="no", answerable="no")]  # settled
    rs += [_verify("qa3", "ana", corrected=items[2]["answer"]),  # the draft submitted unchanged: no answer
           _verify("qa3", "jonas", correct="no", corrected=items[2]["answer"])]
    found = adjudication.disputed("qa_verification", rs, records, 2)
    assert [(d.record_id, d.decision.disputed) for d in found] == [("qa1", ["corrected_answer"]),
                                                                   ("qa3", ["answer_correct"])]
    batch = adjudication.adjudication_records("qa_verification", found, records)["babelrag-qa-verification"]
    shown = batch[0].fields["annotations"]
    assert "| corrected_answer | Porto hosted more. | Lisbon, 101 delegates. |" in shown
    assert "| question | ana | jonas |" in shown and batch[0].fields["question"] == records[0]["fields"]["question"]
    assert [s.question for s in batch[0].suggestions] == ["corrected_answer"]  # the draft; never a label
    assert batch[0].metadata["disputed"] == "corrected_answer"


def test_disagreement_export_carries_corrections_and_post_edits(tmp_path):
    """Before: only label questions were exported, so conflicting corrections had no row and the
    translation export (no label question) was empty."""
    from babelrag.annotate import agreement as ag

    rs = [_verify("qa1", "ana", correct="no", corrected="Porto."), _verify("qa1", "jonas", correct="no", corrected="Lisbon.")]
    rows = ag.disagreements(rs, "qa_verification")
    assert [(r["question"], r["labels"]) for r in rows] == [("corrected_answer", {"ana": "Porto.", "jonas": "Lisbon."})]
    assert rows[0]["responses"]["jonas"]["answer_correct"] == "no"
    edits = [{**e, "values": {**e["values"], "answer_translation": text}}
             for e, text in zip(_post_edit("qa1"), ("Lissabon.", "Lissabon, 101."))]
    rows = ag.disagreements(edits, "translation")
    assert [(r["question"], r["labels"]["ann2"]) for r in rows] == [("answer_translation", "Lissabon, 101.")]
    path = ag.write_disagreements(rows, tmp_path / "d.csv")
    assert "Lissabon, 101." in path.read_text(encoding="utf-8") and "responses" in path.read_text(encoding="utf-8")
