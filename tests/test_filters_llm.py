"""LLM filters against the scripted OpenAI-compatible server over real HTTP: realistic and malformed replies."""
import re
import sys

import pytest

from babelrag.config import config_from_dict
from babelrag.construct.filters import check_needs_both, check_needs_retrieval, gold_recall
from babelrag.llm.client import LLMRunner
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.pipeline import Pipeline, run_pipeline
from babelrag.records import Article, QAItem
from babelrag.store import BuildStore
from babelrag.testing.scripted_server import Fault, ScriptedServer
from tests.helpers.qa_fixtures import corpus, seed_stage


RECOVERED = False  # see test_a_check_that_gets_no_answer_leaves_the_question_failed_not_rejected


def last_user(body):
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def model(body):
    """A plausible small model: knows what its one article says, garbles on request, knows 'Paris'."""
    text = last_user(body)
    if "Gold answer:" in text:
        gold = re.search(r"Gold answer: (.*)", text).group(1)
        cand = re.search(r"Candidate answer to grade: (.*)", text).group(1)
        if "New York" in cand:
            return {"correct": True, "reason": "lenient small judge"}
        same = any(w in cand for w in re.findall(r"\d+|Paris", gold))
        return {"correct": "Yes." if same else "no", "reason": "compared numbers"}
    m = re.search(r"[Qq]uestion: (.*)", text)
    if m and "second office" in m.group(1) and text.startswith("Closed-book") and not RECOVERED:
        return Fault("500")  # this call gets no answer until the endpoint recovers
    if m is None:  # the client's one JSON-repair re-ask: a garbling model stays garbled
        return "Here it is again: answerable yes, 300."
    question = m.group(1)
    if "GARBLE" in question:
        return "Sure! The answer is probably 300, I think."  # not JSON, also not after the repair
    if text.startswith("Closed-book"):
        if "investment" in question:
            return {"answerable": True, "answer": "New York"}
        if "capital of France" in question:
            return "```json\n{\"answerable\": true, \"answer\": \"Paris\"}\n```"  # fenced JSON
        return {"answerable": "false", "answer": ""}
    if "hire" in question and "hires 300" in text:  # the single article that tells the number
        return {"answerable": True, "answer": "300 staff"}
    if "hire" in question:
        return {"answerable": True, "answer": "About 50 people"}  # confident but wrong: judged wrong
    return {"answerable": False, "answer": ""}


@pytest.fixture(scope="module")
def server():
    with ScriptedServer(model) as srv:
        yield srv


@pytest.fixture()
def runner(server):
    settings = LLMSettings(endpoints={"gen": EndpointConfig(base_url=server.base_url, model="scripted",
                                                            max_retries=0)}, progress=False)
    return LLMRunner(settings, cache_dir=None)


def item(id_, question, answer, articles=("a1", "a2")):
    return QAItem(id=id_, pair_id="p", article_ids=list(articles), q_type="multi-hop", question=question,
                  answer=answer)


def test_needs_both_articles(runner):
    arts = corpus()
    items = [
        # a2 alone ("Lumen Bank hires 300 staff") answers it: must fail
        item("one", "How many staff will Lumen Bank hire?", "300 staff"),
        # neither article alone answers it (declined / wrong): must pass
        item("both", "Which city hosts the office of the bank that opened on August 20?", "Porto, 300 staff"),
        # each article alone gives a confident wrong answer: must pass
        item("wrong", "How many people will Lumen Bank hire there?", "300", ("a1", "d1")),
        item("garbled", "GARBLE: which office opened?", "Porto"),
    ]
    v = check_needs_both(runner, items, arts, stage="filters", endpoint=None, max_chars=4000, on_error="reject")
    assert {k: x.status for k, x in v.items()} == {"one": "fail", "both": "pass", "wrong": "pass", "garbled": "error"}
    assert "article a2 answers it" in v["one"].detail
    assert v["wrong"].detail == "article a1: wrong answer; article d1: wrong answer"
    assert v["both"].detail == "article a1: declined; article a2: declined"
    assert "invalid_json" in v["garbled"].detail
    kept = check_needs_both(runner, items[3:], arts, stage="filters", endpoint=None, max_chars=4000, on_error="keep")
    assert kept["garbled"].status == "pass"


def test_needs_retrieval(runner):
    v = check_needs_retrieval(runner, [item("trivia", "What is the capital of France?", "Paris"),
                                       item("news", "How many staff will Lumen Bank hire in Porto?", "300"),
                                       item("bad", "GARBLE how many?", "300")],
                              stage="filters", endpoint=None, on_error="reject")
    assert {k: x.status for k, x in v.items()} == {"trivia": "fail", "news": "pass", "bad": "error"}
    assert "closed-book answers it: 'Paris'" in v["trivia"].detail


def test_filters_stage_counts_every_filter(tmp_path, server):
    build = tmp_path / "build"
    arts = corpus()
    seed_stage(build, "ingest", list(arts.values()), Article)
    qs = [
        item("q-good", "Which city hosts the office of Lumen Bank that opened on August 20?", "Porto, 300 staff"),
        item("q-z-dup", "Which city hosts the office of Lumen Bank which opened on August 20?", "Porto"),
        item("q-form", "lumen bank porto", "Porto"),
        item("q-noent", "What did the company announce after the meeting ended on that day?", "An office"),
        item("q-copy", "What did Lumen Bank do in Porto on August 20?", "Lumen Bank opened an office in Porto."),
        item("q-single", "How many staff will Lumen Bank hire in Porto?", "300 staff"),
        item("q-trivia", "What is the capital of France, where Lumen Bank is not based?", "Paris"),
    ]
    seed_stage(build, "questions", qs, QAItem)
    cfg = config_from_dict({"project": {"build_dir": str(build)},
                            "llm": {"endpoints": {"gen": {"base_url": server.base_url, "model": "scripted"}},
                                    "progress": False}})
    report = Pipeline(cfg).run(only=["filters"])
    out = {q.id: q for q in BuildStore(build).read("filters", QAItem)}
    assert {k: q.rejected_by for k, q in out.items()} == {
        "q-good": "", "q-z-dup": "near_duplicate", "q-form": "well_formed", "q-noent": "named_entity",
        "q-copy": "verbatim", "q-single": "needs_both_articles", "q-trivia": "needs_retrieval"}
    assert [k for k, q in out.items() if q.accepted] == ["q-good"]
    assert report.stages[0].skipped == {"rejected:near_duplicate": 1, "rejected:well_formed": 1,
                                        "rejected:named_entity": 1, "rejected:verbatim": 1,
                                        "rejected:needs_both_articles": 1, "rejected:needs_retrieval": 1}
    counts = BuildStore(build).manifest("filters").extra["filters"]
    assert counts["well_formed"] == {"pass": 6, "fail": 1, "error": 0}
    assert counts["needs_retrieval"] == {"pass": 1, "fail": 1, "error": 0}
    fj = {v.filter: v for v in out["q-good"].filters}
    assert list(fj) == ["well_formed", "named_entity", "verbatim", "near_duplicate", "needs_both_articles",
                        "needs_retrieval"] and all(v.status == "pass" for v in fj.values())


def test_lenient_judge_is_checked_against_the_gold_answer(runner):
    items = [item("inv", "Which city won the Lumen Bank investment?", "Valencia")]
    trusting = check_needs_retrieval(runner, items, stage="filters", endpoint=None, on_error="reject")
    assert trusting["inv"].status == "fail"  # the judge alone calls "New York" correct
    guarded = check_needs_retrieval(runner, items, stage="filters", endpoint=None, on_error="reject", min_overlap=0.3)
    assert guarded["inv"].status == "pass"
    assert guarded["inv"].detail == "closed-book: judged correct but shares 0% of the gold answer"
    assert gold_recall("300 staff in Porto", "They hired 300 people") == 1 / 3  # of "300", "staff", "porto"
    assert gold_recall("the", "anything") is None


def test_a_check_that_gets_no_answer_leaves_the_question_failed_not_rejected(tmp_path, server, monkeypatch):
    """Neither rejected (on_llm_error: reject) nor kept (keep): a failed item, written once its check answers."""
    from babelrag import llm_session
    from babelrag.errors import IncompleteRunError

    build = tmp_path / "build"
    seed_stage(build, "ingest", list(corpus().values()), Article)
    seed_stage(build, "questions", [
        item("q-good", "Which city hosts the office of Lumen Bank that opened on August 20?", "Porto, 300 staff"),
        item("q-down", "Where will Lumen Bank open its second office after Porto?", "Lisbon")], QAItem)
    cfg = config_from_dict({"project": {"build_dir": str(build)}, "filters": {"on_llm_error": "keep"},
                            "llm": {"endpoints": {"gen": {"base_url": server.base_url, "model": "scripted",
                                                          "max_retries": 1, "retry_backoff_s": 0}},
                                    "progress": False}})
    llm_session.reset()
    with pytest.raises(IncompleteRunError, match=r"filters: 1 \(server_error 1\)"):
        run_pipeline(cfg, only=["filters"])
    store = BuildStore(build)
    assert [q.id for q in store.read("filters", QAItem)] == ["q-good"]
    assert [(e.item_id, e.reason) for e in store.read_errors("filters")] == [("q-down", "server_error")]

    monkeypatch.setattr(sys.modules[__name__], "RECOVERED", True)
    llm_session.reset()
    start = len(server.log)
    run_pipeline(cfg, only=["filters"])
    out = {q.id: q for q in store.read("filters", QAItem)}
    assert out["q-down"].accepted and out["q-good"].accepted and store.read_errors("filters") == []
    sent = [e["last_user"] for e in server.log[start:]]
    assert sent and all("second office" in u for u in sent)  # only the failed question's check went out again
    llm_session.reset()
