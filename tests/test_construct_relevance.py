"""Relevance stage through the real LLM layer against a scripted OpenAI-compatible server on loopback."""
import json
import random

import pytest

from babelrag import llm_session
from babelrag.config import config_from_dict
from babelrag.pipeline import Pipeline
from babelrag.records import ArticlePair
from babelrag.store import BuildStore
from babelrag.testing.scripted_server import ScriptedServer

FILL = ("The report describes what happened during the day, who was involved and what officials said about the "
        "next steps. Reporters spoke to several witnesses and experts about the consequences for the region. ")
TITLES = {
    "a1": "Airbus wins Lufthansa order in Hamburg",
    "a2": "Lufthansa confirms Airbus jets deal",
    "b1": "Siemens opens new factory",
    "b2": "Siemens shares fall after profit warning",
    "c1": "Valencia fans celebrate cup win",
    "c2": "Valencia mayor presents budget",
}


def brain(body):
    msg = body["messages"][-1]["content"]
    if "Article A" not in msg:
        return "still not json"  # the repair request: keep failing
    if "Valencia" in msg:
        return "I cannot decide, sorry"  # never valid JSON -> an ErrorRecord, not a verdict
    if "Airbus" in msg:
        return json.dumps({"related": True, "rationale": "Both report the same Airbus order."})
    return json.dumps({"related": False, "rationale": "Same company, different stories."})


@pytest.fixture()
def server():
    with ScriptedServer(brain) as srv:
        yield srv


def _config(tmp_path, server, relevance=None):
    def text(key, title):  # distinct word order per article, so dedupe keeps all six
        words = (FILL * 2).split()
        random.Random(key).shuffle(words)
        return f"{title}. " + " ".join(words)

    rows = [{"id": k, "title": t, "maintext": text(k, t), "language": "en", "date_publish": "2026-03-02"}
            for k, t in TITLES.items()]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return config_from_dict({
        "project": {"build_dir": str(tmp_path / "build"), "languages": ["en", "de"]},
        "corpus": {"inputs": [{"path": str(tmp_path / "c.jsonl"), "format": "jsonl"}], "min_tokens": 20},
        "ner": {"labels": []},
        "pairs": {"min_shared_entities": 1, "graphml": False},
        "dense": {"enabled": False},
        "relevance": relevance or {},
        "llm": {"endpoints": {"checker": {"base_url": server.base_url, "model": "scripted", "max_retries": 0}},
                "progress": False},
    })


def test_relevance_verdicts_rationale_provenance_and_errors(tmp_path, server):
    cfg = _config(tmp_path, server)
    llm_session.reset()
    try:
        report = Pipeline(cfg).run(until="relevance")
    finally:
        llm_session.reset()
    store = BuildStore(cfg.build_dir)
    pairs = {p.id: p for p in store.read("pairs", ArticlePair)}
    assert set(pairs) == {"eg:a1|a2", "eg:b1|b2", "eg:c1|c2"}
    checked = {p.id: p for p in store.read("relevance", ArticlePair)}
    assert set(checked) == {"eg:a1|a2", "eg:b1|b2"}
    assert checked["eg:a1|a2"].relevant is True and "Airbus order" in checked["eg:a1|a2"].rationale
    assert checked["eg:b1|b2"].relevant is False
    prov = checked["eg:a1|a2"].provenance
    assert (prov.prompt_id, prov.prompt_version, prov.model, prov.endpoint) == (
        "construct.pair_relevance", "2", "scripted", "checker")
    # the stage's output-relevant config: its sections and the endpoint it calls (never its limits)
    from babelrag.stage import get_stage

    assert prov.config_hash == Pipeline(cfg).config_hash(get_stage("relevance"))
    errors = store.read_errors("relevance")
    assert [e.item_id for e in errors] == ["eg:c1|c2"]
    stage = report.stages[-1]
    assert stage.count_in == 3 and stage.count_out == 2 and stage.errors == 1
    # each pair was asked once with its metadata (plus one repair attempt for the unparsable reply)
    asked = [e["last_user"] for e in server.log if "Article A" in e["last_user"]]
    assert len(asked) == 3 and all(a.startswith("Article A (English, published 2026-03-02)") for a in asked)


def test_max_pairs_checks_only_the_budget_and_counts_the_rest(tmp_path):
    asked = []

    def recording_brain(body):
        asked.append(body["messages"][-1]["content"])
        return brain(body)

    with ScriptedServer(recording_brain) as server:
        cfg = _config(tmp_path, server, relevance={"max_pairs": 1, "excerpt_chars": 200})
        llm_session.reset()
        try:
            report = Pipeline(cfg).run(until="relevance")
        finally:
            llm_session.reset()
    checked = BuildStore(cfg.build_dir).read("relevance", ArticlePair)
    assert [p.id for p in checked] == ["eg:a1|a2"] and checked[0].relevant is True  # first in id order
    stage = report.stages[-1]
    assert stage.count_in == 3 and stage.count_out == 1 and dict(stage.skipped) == {"over-max-pairs": 2}
    assert len(asked) == 1
    text_a = asked[0].split("Text: ")[1].split("\n\nArticle B")[0]
    assert 150 < len(text_a) <= 202 and text_a.endswith(" …")  # cut at a word near excerpt_chars


def test_criterion_event_asks_for_the_same_event_and_rechecks_the_pairs(tmp_path):
    """``relevance.criterion: event`` renders the same-event prompt (its id in the provenance); the scripted judge
    answers by the question it is asked, as a model would: a same-story pair is related under ``story`` and not
    under ``event``. Switching the criterion re-runs the stage (the section is in its fingerprint)."""
    def judge(body):
        msg = body["messages"][-1]["content"]
        if "Article A" not in msg or "Valencia" in msg:
            return json.dumps({"related": False, "rationale": "Different stories."})
        same_event = msg.rstrip().endswith("report the same specific event?")
        airbus = "Airbus" in msg
        return json.dumps({"related": airbus or not same_event,
                           "rationale": "same order" if airbus else "one story, another event"})

    with ScriptedServer(judge) as srv:
        verdicts = {}
        for criterion in ("story", "event"):
            cfg = _config(tmp_path, srv, {"criterion": criterion})
            llm_session.reset()
            try:
                report = Pipeline(cfg).run(until="relevance")
            finally:
                llm_session.reset()
            assert report.stages[-1].status == "ran", criterion
            checked = BuildStore(cfg.build_dir).read("relevance", ArticlePair)
            verdicts[criterion] = {p.id: p.relevant for p in checked}
            assert {p.provenance.prompt_id for p in checked} == {
                "story": {"construct.pair_relevance"}, "event": {"construct.pair_same_event"}}[criterion]
    assert verdicts["story"]["eg:a1|a2"] and verdicts["event"]["eg:a1|a2"]
    assert verdicts["story"]["eg:b1|b2"] is True and verdicts["event"]["eg:b1|b2"] is False
