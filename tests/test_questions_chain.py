"""The cross-document Q&A chain and the questions stage against the scripted server (real HTTP).

The scripted "model" answers every step like a small model does: sometimes a bare list instead of an
object, other keys, "A1" instead of 1, prose instead of JSON (also after the repair re-ask).
"""
import re
from collections import Counter

import pytest

from babelrag.config import config_from_dict
from babelrag.construct.chains.crossdoc import CrossDocChain, Job, infer_used, qa_id
from babelrag.construct.chains.outputs import Attempt, CrossDocQuestion, QAPair, SimplePairs
from babelrag.construct.questions import pair_types, plan_jobs, translation_targets
from babelrag.records import x_language
from babelrag.llm.client import LLMRunner
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.pipeline import Pipeline
from babelrag.records import Article, ArticlePair, QAItem
from babelrag.store import BuildStore
from babelrag.testing.scripted_server import ScriptedServer
from tests.helpers.qa_fixtures import art, corpus, seed_stage


def first_user(body):
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def model(body):
    text = first_user(body)
    system = body["messages"][0]["content"]
    if '{"summary"' in text:
        if "BROKEN" in text:
            return "I am sorry, I cannot summarise this article."
        title = re.search(r"\):\n(.*)", text).group(1)
        return {"summary": f"In short: {title}. The report names Lumen Bank and the city of Porto."}
    if "simple question-answer pairs" in text:
        title = re.search(r"In short: (.*?)\.", text).group(1)
        pairs = [{"question": f"What does the report say about {title}?", "answer": title},
                 {"question": "Which city is named in the report?", "answer": "Porto"}]
        if "opens office" in title:
            return pairs  # a bare list
        if "hires" in title:
            return {"qa_pairs": pairs, "note": "extra key"}
        return {"pairs": pairs}
    if "Facts from the first article" in text:
        q_type = re.search(r"Write one (\S+) question", text).group(1)
        if "NOFACTS" in text:
            return {"question": "What is the weather like on Mars today?", "used_a": [], "used_b": []}
        if q_type == "set":  # no indices at all: the chain infers them from word overlap
            return {"question": "Which Lumen Bank offices and staff numbers are reported for Porto?"}
        return {"question": f"How many staff will Lumen Bank hire after opening its Porto office ({q_type})?",
                "used_a": ["A1"], "used_b": 2}
    if "Facts used:" in text:
        return {"answer": ["300 staff", "in Porto"]}
    if "Named entities to handle" in text:
        if "Spanish" in system:
            return "Lo siento, no puedo."  # prose, twice: the Spanish translation fails
        lang = re.search(r"into (.*?)\.", system).group(1)
        return {"question": f"[{lang}] Wie viele Mitarbeiter stellt die Lumen Bank in Porto ein?",
                "answer": f"[{lang}] 300", "entities": [{"source": "Lumen Bank", "target": "Lumen Bank"}]}
    return "unexpected prompt"


@pytest.fixture(scope="module")
def server():
    with ScriptedServer(model) as srv:
        yield srv


def test_schemas_accept_small_model_shapes_and_reject_junk():
    assert len(SimplePairs.model_validate([{"q": "Who opened the office?", "a": "Lumen"}]).pairs) == 1
    assert len(SimplePairs.model_validate({"questions": [{"question": "Who opened it?", "answer": "L"},
                                                         {"question": "", "answer": ""}]}).pairs) == 1
    with pytest.raises(ValueError):
        SimplePairs.model_validate({"pairs": [{"question": "", "answer": ""}]})
    c = CrossDocQuestion.model_validate({"question": "Which two banks opened offices?", "used_a": "A2",
                                         "used_b": ["B1", 3, True]})
    assert (c.used_a, c.used_b) == ([2], [1, 3])
    assert Attempt.model_validate({"answerable": "No.", "answer": None}).answerable is False
    with pytest.raises(ValueError):
        Attempt.model_validate({"answerable": "perhaps"})


def test_infer_used_picks_the_overlapping_fact():
    pairs = [QAPair(question="Who won the Porto marathon?", answer="Ana Silva"),
             QAPair(question="How many staff will Lumen Bank hire?", answer="300")]
    assert infer_used("How many staff did Lumen Bank hire in total?", pairs) == [2]
    assert infer_used("What is the weather on Mars?", pairs) == []


def test_plan_jobs_types_by_pair_orders_languages_and_honours_max_pairs():
    # max_pairs=2 takes one pair per language combination (de–en: p2; en–en: p5, because p1 shares
    # article a1 with p2 and p5 shares nothing with it)
    arts = corpus()
    arts["f1"] = art("f1", "fr", "2026-08-21")
    pairs = [ArticlePair(id=i, article_a=a, article_b=b, language_a=arts[a].language,
                         language_b=arts[b].language, method="entity_graph", relevant=rel)
             for i, a, b, rel in [("p1", "a1", "a2", True), ("p2", "a1", "d1", None), ("p3", "a2", "e1", False),
                                  ("p4", "f1", "a1", True), ("p5", "a2", "e2", True)]]
    skipped = []
    types = ["aggregation", "comparison", "multi-hop", "set"]
    jobs = plan_jobs(pairs, arts, types, 2, "en", ["en", "de"], max_pairs=2,
                     skip=lambda reason, n=1: skipped.extend([reason] * n))
    assert [j.pair_id for j in jobs] == ["p2", "p2", "p5", "p5"]
    assert [j.q_type for j in jobs] == pair_types("p2", types, 2) + pair_types("p5", types, 2)
    assert (jobs[0].a.id, jobs[0].b.id) == ("d1", "a1")  # the X article first, English second
    assert sorted(skipped) == ["over-max-pairs", "pair-not-relevant", "unsupported-language-pair"]
    assert jobs[0].id == qa_id("p2", jobs[0].q_type, 0)
    # without a budget every usable pair is taken, in id order
    assert [j.pair_id for j in plan_jobs(pairs, arts, types, 1, "en", ["en", "de"], max_pairs=None)] == ["p1", "p2", "p5"]
    assert translation_targets("", "en", ["de", "es"]) == ["de", "es"]
    assert translation_targets("de", "en", ["de", "es"]) == ["de"]
    assert translation_targets("zh", "en", ["de", "es"]) == []
    # the pivot rule, stored once per question
    assert (x_language(["en", "en"], "en"), x_language(["de", "en"], "en"), x_language(["en", "zh"], "en")) == \
        ("", "de", "zh")
    assert x_language(["de", "zh"], "en") is None and x_language(["de"], "en") is None


def test_chain_on_good_and_malformed_replies(server):
    runner = LLMRunner(LLMSettings(endpoints={"g": EndpointConfig(base_url=server.base_url, model="scripted",
                                                                  max_retries=0)}, progress=False), cache_dir=None)
    arts = corpus()
    arts["bad"] = art("bad", "en", "2026-08-23", "Broken page", "BROKEN " * 30)
    chain = CrossDocChain(runner, config_hash="h")
    jobs = [Job("j1", "p1", arts["a1"], arts["a2"], "comparison"), Job("j2", "p2", arts["d1"], arts["a1"], "set"),
            Job("j3", "p3", arts["a2"], arts["bad"], "aggregation")]
    res = chain.run(jobs)
    assert [e.item_id for e in res.errors] == ["j3"] and res.errors[0].reason == "summary:invalid_json"
    by = {i.id: i for i in res.items}
    assert set(by) == {"j1", "j2"}
    j1 = by["j1"]
    assert j1.answer == "300 staff, in Porto" and j1.q_type == "comparison" and j1.article_ids == ["a1", "a2"]
    assert [(s.article_id, s.answer) for s in j1.selected] == [("a1", "Lumen Bank opens office in Porto"),
                                                               ("a2", "Porto")]
    assert j1.summaries[0].startswith("In short: Lumen Bank opens office in Porto")
    assert j1.provenance.model == "scripted" and j1.provenance.config_hash == "h"
    assert j1.provenance.prompt_version == ("questions.summary@3,questions.simple_qa@2,questions.crossdoc@3,"
                                            "questions.answer@2")
    assert res.inferred_selection == 1 and {s.article_id for s in by["j2"].selected} == {"d1", "a1"}


def test_questions_stage_end_to_end(tmp_path, server):
    build = tmp_path / "build"
    arts = corpus()
    arts["bad"] = art("bad", "en", "2026-08-23", "Broken page", "BROKEN " * 30)
    arts["n1"] = art("n1", "en", "2026-08-24", "NOFACTS one")
    arts["n2"] = art("n2", "en", "2026-08-25", "NOFACTS two")
    seed_stage(build, "ingest", list(arts.values()), Article)
    pairs = [ArticlePair(id=i, article_a=a, article_b=b, language_a=arts[a].language, language_b=arts[b].language,
                         method="dense", relevant=rel)
             for i, a, b, rel in [("p1", "a1", "a2", True), ("p2", "a1", "d1", True), ("p3", "a2", "bad", True),
                                  ("p5", "a1", "e1", False), ("p6", "n1", "n2", True)]]
    seed_stage(build, "relevance", pairs, ArticlePair)
    cfg = config_from_dict({"project": {"build_dir": str(build), "languages": ["en", "de", "es"]},
                            "questions": {"per_pair": 2, "target_languages": ["de", "es"]},
                            "llm": {"endpoints": {"g": {"base_url": server.base_url, "model": "scripted",
                                                        "max_retries": 0}}, "progress": False}})
    report = Pipeline(cfg).run(only=["questions"])
    store = BuildStore(build)
    items = store.read("questions", QAItem)
    types = ["aggregation", "comparison", "multi-hop", "set"]
    assert sorted((i.pair_id, i.q_type) for i in items) == sorted(
        (p, t) for p in ("p1", "p2") for t in pair_types(p, types, 2))
    errors = sorted((e.item_id, e.reason) for e in store.read_errors("questions"))
    assert errors == sorted([(qa_id("p3", t, k), "summary:invalid_json")
                             for k, t in enumerate(pair_types("p3", types, 2))] +
                            [(qa_id("p6", t, k), "crossdoc:no-fact-from-each-article")
                             for k, t in enumerate(pair_types("p6", types, 2))])
    assert {i.pair_id: i.x_language for i in items} == {"p1": "", "p2": "de"}  # the pivot rule, stored
    en_en = next(i for i in items if i.pair_id == "p1")
    tr = {t.language: t for t in en_en.translations}
    assert tr["de"].question.startswith("[German]") and tr["de"].machine_translated is True
    assert [(e.source, e.target) for e in tr["de"].entities] == [("Lumen Bank", "Lumen Bank")]
    assert tr["de"].missing_entities == []
    assert "invalid_json" in tr["es"].error and not tr["es"].usable  # kept visible, not dropped
    x_en = next(i for i in items if i.pair_id == "p2").translations
    assert [t.language for t in x_en] == ["de"]  # X–en questions are translated into X only
    st = report.stages[0]
    assert st.count_in == 8 and st.errors == 4
    assert st.skipped == {"pair-not-relevant": 1} and st.kept_with_note == {"translation-failed-es": 2}
    # a re-run is cached; a forced re-run answers from the LLM cache without new calls, the replies that stayed
    # unreadable after their repair included (before: the broken summary and the two Spanish translations were
    # asked again, each with its repair: 6 calls for the same replies)
    assert Pipeline(cfg).run(only=["questions"]).stages[0].status == "cached"
    before = server.count("chat")
    Pipeline(cfg).run(only=["questions"], force=["questions"])
    assert server.count("chat") == before
    assert sorted((e.item_id, e.reason) for e in store.read_errors("questions")) == errors
    assert {t.language: t.error for t in next(i for i in store.read("questions", QAItem)
                                              if i.pair_id == "p1").translations}["es"] == tr["es"].error
    # llm.retry_unreadable (`babelrag run --retry-unreadable`) asks exactly those again, each with its repair
    retry = cfg.model_copy(update={"llm": cfg.llm.model_copy(update={"retry_unreadable": True})})
    Pipeline(retry).run(only=["questions"], force=["questions"])
    assert server.count("chat") - before == 6


def translation_model(body):
    system = body["messages"][0]["content"]
    text = first_user(body)
    q = re.search(r"Question: (.*)", text).group(1)
    if "Chinese" in system:
        return {"question": q, "answer": "300"}  # "translated" into English again
    return {"question": "Wie viele Mitarbeiter stellt die Lumen Bank in Porto ein?", "answer": "300",
            "entities": [{"source": "Lumen Bank", "target": "Deutschland"}, {"source": "Porto", "target": "Porto"}]}


def test_translation_rejects_untranslated_and_drops_unused_entity_forms():
    from babelrag.construct.translate import translate_qas

    with ScriptedServer(translation_model) as srv:
        runner = LLMRunner(LLMSettings(endpoints={"g": EndpointConfig(base_url=srv.base_url, model="m",
                                                                      max_retries=0)}, progress=False), cache_dir=None)
        item = QAItem(id="q", pair_id="p", article_ids=["a1", "a2"], q_type="set", answer="300",
                      question="How many staff will Lumen Bank hire in Porto?")
        tr = translate_qas(runner, [item], ["de", "zh"], stage="questions")["q"]
    assert tr["zh"].error == "untranslated: the reply repeats the English question" and not tr["zh"].question
    # "Deutschland" is not in the translation: dropped
    assert [(e.source, e.target) for e in tr["de"].entities] == [("Porto", "Porto")]
    assert tr["de"].missing_entities == []


def test_translation_left_in_english_is_an_error_not_a_release_failure():
    """The demo's 0.5B model once answered in half English; the release rejected the instance, so the
    translation step must drop it (an error entry, counted as a skip) and keep the good language."""
    from babelrag.construct.translate import translate_qas

    def model(body):
        if "into German" in body["messages"][0]["content"]:
            return {"question": "Wie steht es um das Projekt von Calloway Freight im Hafen?",
                    "answer": "Die Projekt hat sich unter consideration, aber es faces challenges from the local council"}
        return {"question": "¿Cómo va el proyecto de Calloway Freight en el puerto?",
                "answer": "El proyecto está en estudio, pero el ayuntamiento local plantea objeciones"}

    with ScriptedServer(model) as srv:
        runner = LLMRunner(LLMSettings(endpoints={"g": EndpointConfig(base_url=srv.base_url, model="m",
                                                                      max_retries=0)}, progress=False), cache_dir=None)
        item = QAItem(id="q", pair_id="p", article_ids=["a1", "a2"], q_type="set",
                      question="How is Calloway Freight's port project going?",
                      answer="It is under consideration, but it faces challenges from the local council")
        tr = translate_qas(runner, [item], ["de", "es"], stage="questions")["q"]
    assert tr["de"].error == "wrong language: answer looks English (en), expected German (de)" and not tr["de"].usable
    assert tr["es"].answer.startswith("El proyecto")


def test_crossdoc_question_drops_label_and_appended_answer():
    c = CrossDocQuestion.model_validate({"question": "Question: Which city got the office? A: Porto, says the bank."})
    assert c.question == "Which city got the office?"


def test_pair_budget_spreads_over_stories():
    """Within a language combination the budget goes to pairs that share no article or title entity
    with those already chosen, so eight pairs are not eight takes of one story."""
    from babelrag.construct.pair_selection import select_pairs
    from babelrag.records import Article

    def a(i, ents):
        return Article(id=i, title=i, text="x", language="en", published="2026-08-01", title_entities=ents)

    arts = {i: a(i, ents) for i, ents in [("s1", ["storm"]), ("s2", ["storm"]), ("s3", ["storm"]),
                                          ("v1", ["vote"]), ("v2", ["vote"]), ("t1", ["trade"]), ("t2", ["trade"])]}
    pairs = [ArticlePair(id=i, article_a=x, article_b=y, language_a="en", language_b="en", method="entity_graph")
             for i, x, y in [("p1", "s1", "s2"), ("p2", "s1", "s3"), ("p3", "s2", "s3"), ("p4", "t1", "t2"),
                             ("p5", "v1", "v2")]]
    chosen = [p.id for p, _, _ in select_pairs(pairs, arts, "en", ["en"], 3)]
    assert chosen == ["p1", "p4", "p5"]  # one per story, not p1-p3 (all "storm")
    assert [p.id for p, _, _ in select_pairs(pairs, arts, "en", ["en"], 4)] == ["p1", "p2", "p4", "p5"]


def test_pair_types_are_consecutive_spread_and_independent_of_the_other_pairs():
    types = ["aggregation", "comparison", "multi-hop", "set"]
    got = pair_types("p2", types, 3)
    start = types.index(got[0])
    assert got == [types[(start + k) % 4] for k in range(3)]  # per_pair > 1: distinct consecutive types
    firsts = Counter(pair_types(f"hy:a{i}|b{i}", types, 1)[0] for i in range(400))
    assert set(firsts) == set(types) and min(firsts.values()) > 60  # every type requested, roughly evenly


def test_raising_the_pair_budget_never_changes_the_questions_already_asked():
    """A curator's build: raising caps lowered the yield from 8 to 3 instances because question types cycled
    over the job list, so one more pair sorted before the good one changed the type the good one was asked
    for (and its cached question was no longer used). Every job of a smaller budget must stay in a larger one."""
    arts = {}
    pairs = []
    for i in range(12):
        x, e = art(f"x{i}", "de", "2026-08-20"), art(f"e{i}", "en", "2026-08-20")
        arts[x.id], arts[e.id] = x, e
        pairs.append(ArticlePair(id=f"p{i:02d}", article_a=x.id, article_b=e.id, language_a="de", language_b="en",
                                 method="dense", relevant=True))
    types = ["aggregation", "comparison", "multi-hop", "set"]
    small = {(j.id, j.q_type) for j in plan_jobs(pairs, arts, types, 1, "en", ["en", "de"], max_pairs=3)}
    for budget in (4, 7, 12, None):
        larger = {(j.id, j.q_type) for j in plan_jobs(pairs, arts, types, 1, "en", ["en", "de"], max_pairs=budget)}
        assert small <= larger, budget
    # a pair that sorts first joins the plan: the others keep their questions
    newcomer = ArticlePair(id="p00a", article_a="x0", article_b="e1", language_a="de", language_b="en",
                           method="dense", relevant=True)
    before = {(j.id, j.q_type) for j in plan_jobs(pairs, arts, types, 1, "en", ["en", "de"], max_pairs=None)}
    after = {(j.id, j.q_type) for j in plan_jobs([newcomer, *pairs], arts, types, 1, "en", ["en", "de"],
                                                 max_pairs=None)}
    assert before <= after and len(after) == len(before) + 1


def test_a_translation_without_an_answer_leaves_the_item_failed_then_a_rerun_adds_it(tmp_path):
    """Not kept without that language (as an unreadable translation is): failed, and retried by the next run,
    which sends only the calls that got no answer."""
    from babelrag import llm_session
    from babelrag.errors import IncompleteRunError
    from babelrag.pipeline import run_pipeline
    from babelrag.testing.scripted_server import Fault

    down = {"on": True}

    def flaky(body):  # German translations get HTTP 500 until the endpoint recovers
        if down["on"] and "Named entities to handle" in first_user(body) and "German" in body["messages"][0]["content"]:
            return Fault("500")
        return model(body)

    build = tmp_path / "build"
    arts = corpus()
    seed_stage(build, "ingest", list(arts.values()), Article)
    seed_stage(build, "relevance", [ArticlePair(id="p1", article_a="a1", article_b="a2", language_a="en",
                                                language_b="en", method="dense", relevant=True)], ArticlePair)
    with ScriptedServer(flaky) as srv:
        cfg = config_from_dict({"project": {"build_dir": str(build), "languages": ["en", "de", "es"]},
                                "questions": {"per_pair": 2, "target_languages": ["de", "es"]},
                                "llm": {"endpoints": {"g": {"base_url": srv.base_url, "model": "scripted",
                                                            "max_retries": 0}}, "progress": False}})
        llm_session.reset()
        with pytest.raises(IncompleteRunError, match=r"questions: 2 \(translate:server_error 2\)"):
            run_pipeline(cfg, only=["questions"])
        store = BuildStore(build)
        assert store.read("questions", QAItem) == []
        down["on"] = False
        llm_session.reset()
        start = len(srv.log)
        run_pipeline(cfg, only=["questions"])
        resent = srv.log[start:]
        llm_session.reset()
    items = store.read("questions", QAItem)
    assert len(items) == 2 and all(i.translation("de").usable for i in items)
    assert store.read_errors("questions") == []
    # only translations went out again (German; Spanish is unreadable, so never cached, with its repair
    # re-ask): the summaries, facts, question and answer came from the cache
    assert resent and all("Named entities to handle" in e["last_user"] or "previous reply" in e["last_user"]
                          for e in resent)
