"""Human review flows into the benchmark: `instances.reviewed_qa` (the annotate merge output) replaces the
machine QAItems, so verified flags, corrected answers and human rejections reach the instances."""
import json

import pytest

from babelrag.annotate.merge import merge_qa_verification
from babelrag.config import config_from_dict
from babelrag.errors import InputError
from babelrag.pipeline import Pipeline
from babelrag.records import Article, DistractorSet, Instance, QAItem
from babelrag.store import BuildStore
from tests.helpers.qa_fixtures import DE, corpus, dset, qa, seed_stage

EN_D = [(f"e{i}", "en") for i in range(6)]


def _response(record_id, annotator, natural="yes", answerable="yes", correct="yes", corrected=""):
    return {"record_id": record_id, "annotator": annotator, "status": "submitted", "dataset": "qa_verification",
            "updated_at": "2026-11-20T10:00:00", "values": {"natural": natural, "answerable": answerable,
                                                            "answer_correct": correct, "corrected_answer": corrected}}


def _build(tmp_path, items):
    build = tmp_path / "build"
    seed_stage(build, "ingest", list(corpus().values()), Article)
    seed_stage(build, "filters", items, QAItem)
    seed_stage(build, "distractors", [dset(q.id, EN_D) for q in items], DistractorSet)
    return build


def _config(build, reviewed=None):
    instances = {"settings": ["en-baseline"]}
    if reviewed is not None:
        instances["reviewed_qa"] = str(reviewed)
    return config_from_dict({"project": {"build_dir": str(build), "languages": ["en", "de"]},
                             "instances": instances})


def test_reviewed_records_replace_machine_ones(tmp_path):
    items = [qa("q1", "a1", "a2", translations=DE), qa("q2", "a1", "a2", translations=DE),
             qa("q3", "a1", "a2", translations=DE)]
    build = _build(tmp_path, items)
    responses = [_response("q1", "ana"), _response("q1", "jonas"),
                 _response("q2", "ana", correct="no", corrected="Three hundred staff."),
                 _response("q2", "jonas", correct="no", corrected="Three hundred staff."),
                 _response("q3", "ana", natural="no"), _response("q3", "jonas", natural="no")]
    merged, report = merge_qa_verification(items, responses, min_submitted=2)
    assert (report.merged, report.corrected, report.rejected) == (3, 1, 1)
    stale = qa("q-gone", "a1", "a2").model_copy(update={"verified": True})
    reviewed = tmp_path / "reviewed.jsonl"
    reviewed.write_text("".join(q.model_dump_json() + "\n" for q in merged + [stale]), encoding="utf-8")

    before = {i.qa_id: i for i in _run(build, None)}
    assert {q: i.verified for q, i in before.items()} == {"q1": False, "q2": False, "q3": False}

    report = Pipeline(_config(build, reviewed)).run(only=["instances"], force=["instances"])
    out = {i.qa_id: i for i in BuildStore(build).read("instances", Instance)}
    assert set(out) == {"q1", "q2"}  # q3 was rejected by the annotators
    assert out["q1"].verified and out["q1"].answer == "300 staff."
    assert out["q2"].verified and out["q2"].answer == "Three hundred staff."
    skipped = report.stages[0].skipped
    assert skipped["reviewed-qa-unknown-id"] == 1 and skipped["rejected-by-filters"] == 1
    extra = BuildStore(build).manifest("instances").extra["reviewed_qa"]
    assert (extra["records"], extra["applied"], extra["verified"]) == (4, 3, 2)


def _run(build, reviewed):
    Pipeline(_config(build, reviewed)).run(only=["instances"])
    return BuildStore(build).read("instances", Instance)


def test_bad_reviewed_file_names_file_and_record(tmp_path):
    build = _build(tmp_path, [qa("q1", "a1", "a2")])
    bad = tmp_path / "reviewed.jsonl"
    bad.write_text(json.dumps({"id": "q1", "question": "only a question"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"reviewed.jsonl: record q1: .*expected a QAItem"):
        Pipeline(_config(build, bad)).run(only=["instances"])
    assert BuildStore(build).manifest("instances") is None  # nothing half-written
    with pytest.raises(InputError, match=r"do not exist: instances.reviewed_qa: .*missing.jsonl"):
        Pipeline(_config(build, tmp_path / "missing.jsonl")).run(only=["instances"])


RETRANSLATED = {"question": "Wie viele Mitarbeiter wird die Lumen Bank nach der Eröffnung ihres Büros in Porto einstellen?",
                "answer": "Die Lumen Bank wird dreihundert Mitarbeiter in Porto einstellen."}


def test_a_corrected_answer_reaches_every_translation(tmp_path):
    """Issue 37, defect 1: a translation made from the English the annotators corrected never ships as the
    gold answer of a verified row. Before the fix q2's German instance kept "300." (translated from the
    rejected answer) beside the corrected en_answer."""
    from babelrag.records import Translation
    from babelrag.testing.scripted_server import ScriptedServer

    items = [qa("q1", "a1", "a2", translations=DE), qa("q2", "a1", "a2", translations=DE),
             qa("q3", "a1", "a2", translations=DE)]
    build = _build(tmp_path, items)
    fix = "Three hundred staff, in Porto."
    responses = [_response("q1", "ana"), _response("q1", "jonas")]
    for q in ("q2", "q3"):
        responses += [_response(q, who, correct="no", corrected=fix) for who in ("ana", "jonas")]
    merged, _ = merge_qa_verification(items, responses, min_submitted=2)
    by_id = {q.id: q for q in merged}
    assert not by_id["q2"].translation_is_current(by_id["q2"].translation("de"))  # legacy MT: no source stored
    assert by_id["q1"].translation_is_current(by_id["q1"].translation("de"))
    # q3: a human translation made against the corrected English (as the translation merge stores it)
    human = Translation(language="de", question="Wie viele Leute stellt die Bank ein?", answer="Dreihundert, in Porto.",
                        machine_translated=False, source=by_id["q3"].source_fingerprint)
    by_id["q3"] = by_id["q3"].model_copy(update={"translations": [human]})
    reviewed = tmp_path / "reviewed.jsonl"
    reviewed.write_text("".join(q.model_dump_json() + "\n" for q in by_id.values()), encoding="utf-8")

    with ScriptedServer(lambda body: RETRANSLATED) as srv:
        cfg = config_from_dict({"project": {"build_dir": str(build), "languages": ["en", "de"]},
                                "instances": {"settings": ["mono"], "reviewed_qa": str(reviewed)},
                                "llm": {"endpoints": {"g": {"base_url": srv.base_url, "model": "scripted",
                                                            "max_retries": 0}}, "progress": False}})
        report = Pipeline(cfg).run(only=["instances"])
        asked = srv.count("chat")
    out = {i.qa_id: i for i in BuildStore(build).read("instances", Instance) if i.language == "de"}
    assert asked == 1  # only q2's stale machine translation was re-translated
    assert out["q1"].answer == "300." and out["q1"].verified and out["q1"].machine_translated
    assert out["q2"].en_answer == fix and out["q2"].answer == RETRANSLATED["answer"]
    assert out["q2"].verified and out["q2"].machine_translated
    assert out["q3"].answer == "Dreihundert, in Porto." and out["q3"].verified and not out["q3"].machine_translated
    assert BuildStore(build).manifest("instances").extra["retranslated_after_review"] == {"requested": 1, "failed": 0}
    assert [out[q].a_type for q in ("q1", "q2", "q3")] == ["original", "human_corrected", "human_corrected"]
    assert report.stages[0].status == "ran"


def test_a_failed_retranslation_never_ships_the_old_text(tmp_path):
    items = [qa("q2", "a1", "a2", translations=DE)]
    build = _build(tmp_path, items)
    responses = [_response("q2", who, correct="no", corrected="Three hundred staff.") for who in ("ana", "jonas")]
    merged, _ = merge_qa_verification(items, responses, min_submitted=2)
    reviewed = tmp_path / "reviewed.jsonl"
    reviewed.write_text(merged[0].model_dump_json() + "\n", encoding="utf-8")
    from babelrag.testing.scripted_server import ScriptedServer

    with ScriptedServer(lambda body: "not json at all") as srv:
        cfg = config_from_dict({"project": {"build_dir": str(build), "languages": ["en", "de"]},
                                "instances": {"settings": ["mono"], "reviewed_qa": str(reviewed)},
                                "llm": {"endpoints": {"g": {"base_url": srv.base_url, "model": "scripted",
                                                            "max_retries": 0}}, "progress": False}})
        report = Pipeline(cfg).run(only=["instances"])
    assert [i for i in BuildStore(build).read("instances", Instance) if i.language == "de"] == []
    skipped = report.stages[0].skipped
    assert skipped["retranslation-failed"] == 1 and skipped["mono:no-translation-de"] == 1
