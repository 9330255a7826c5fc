"""Instance assembly: settings, document counts, stable ids/order, leakage checks, the stage end to end."""
from collections import Counter

import pytest

from babelrag.config import config_from_dict
from babelrag.construct.instances import Assembler, LeakageError, Skip, check_leakage, instance_id, parse_setting
from babelrag.leakage import split_leaks
from babelrag.errors import ConfigError
from babelrag.pipeline import Pipeline
from babelrag.records import Article, DistractorSet, Document, Instance, QAItem
from babelrag.store import BuildStore
from tests.helpers.qa_fixtures import DE, ES, corpus, dset, qa, seed_stage

EN_D = [(f"e{i}", "en") for i in range(8)]
DE_D = [(f"g{i}", "de") for i in range(4)]


def test_setting_names_are_validated():
    assert parse_setting("multi+ES+ED") .es and parse_setting("multi+ES+ED").ed
    assert parse_setting("mono+EQ").eq
    for bad in ("mono+ES", "multi+XX", "mix", "multi+EQ+EQ"):
        with pytest.raises(ConfigError):
            parse_setting(bad)
    with pytest.raises(ConfigError, match="mono documents are already English"):
        config_from_dict({"instances": {"settings": ["mono", "mono+ED"]}})


def test_mono_question_gets_two_supporting_and_six_english_distractors():
    arts = corpus()
    item = qa("q1", "a1", "a2", translations={**DE, **ES})
    asm = Assembler(arts)
    mono = parse_setting("mono")
    assert asm.targets(item, mono, ["en", "de", "es", "zh"]) == ["de", "es", "zh"]
    inst = asm.build(item, mono, "de", dset("q1", EN_D + DE_D))
    assert inst.question == DE["de"]["question"] and inst.en_question == item.question
    assert inst.machine_translated and inst.language == "de"
    roles = Counter((d.role, d.language) for d in inst.documents)
    assert roles == {("supporting", "en"): 2, ("distractor", "en"): 6}
    assert {d.article_id for d in inst.documents if d.role == "distractor"} == {f"e{i}" for i in range(6)}
    assert inst.dates == ["2026-08-20", "2026-08-22"]
    with pytest.raises(Skip, match="no-translation-zh"):
        asm.build(item, mono, "zh", dset("q1", EN_D))
    # the English baseline: same documents, English question, not machine translated
    base = asm.build(item, parse_setting("en-baseline"), "en", dset("q1", EN_D))
    assert base.question == item.question and not base.machine_translated
    assert sorted(d.article_id for d in base.documents) == sorted(d.article_id for d in inst.documents)


def test_multi_question_gets_one_supporting_and_three_distractors_per_language():
    arts = corpus()
    item = qa("q2", "d1", "a1", translations=DE)
    asm = Assembler(arts)
    multi = parse_setting("multi")
    assert asm.targets(item, multi, ["en", "de", "es"]) == ["de"]
    assert asm.targets(item, parse_setting("mono"), ["en", "de"]) == []  # X–en pairs are not mono
    # a1 is listed among the candidates: the supporting article must never be picked as a distractor
    inst = asm.build(item, multi, "de", dset("q2", [("a1", "en")] + EN_D + DE_D))
    got = Counter((d.role, d.language) for d in inst.documents)
    assert got == {("supporting", "en"): 1, ("supporting", "de"): 1, ("distractor", "en"): 3,
                   ("distractor", "de"): 3}
    assert {d.article_id for d in inst.documents if d.role == "distractor"} == {"e0", "e1", "e2", "g0", "g1", "g2"}
    eq = asm.build(item, parse_setting("multi+EQ"), "en", dset("q2", EN_D + DE_D))
    assert eq.language == "en" and eq.question == item.question


def test_es_and_ed_variants_use_flagged_machine_translations():
    arts = corpus()
    item = qa("q2", "d1", "a1", translations=DE)
    mt = {i: (f"EN title {i}", f"EN text {i}") for i in ["d1", "g0", "g1", "g2"]}
    asm = Assembler(arts, doc_translation=mt.get)
    es = asm.build(item, parse_setting("multi+ES"), "de", dset("q2", EN_D + DE_D))
    sup = {d.article_id: d for d in es.documents if d.role == "supporting"}
    assert sup["d1"].language == "en" and sup["d1"].machine_translated and sup["d1"].text == "EN text d1"
    assert not sup["a1"].machine_translated
    assert all(not d.machine_translated for d in es.documents if d.role == "distractor")
    ed = asm.build(item, parse_setting("multi+ED"), "de", dset("q2", EN_D + DE_D))
    dis = [d for d in ed.documents if d.role == "distractor"]
    assert len(dis) == 6 and all(d.language == "en" for d in dis)
    assert sum(d.machine_translated for d in dis) == 3
    # without a translation the variant is skipped, not faked
    with pytest.raises(Skip, match="no-document-translation"):
        Assembler(arts).build(item, parse_setting("multi+ES"), "de", dset("q2", EN_D + DE_D))


def test_ids_and_order_are_stable_and_seeded():
    arts = corpus()
    item = qa("q1", "a1", "a2", translations=DE)
    d = dset("q1", EN_D)
    one = Assembler(arts, seed=1).build(item, parse_setting("mono"), "de", d)
    again = Assembler(arts, seed=1).build(item, parse_setting("mono"), "de", d)
    assert one.id == again.id == instance_id("q1", "mono", "de")
    assert [x.article_id for x in one.documents] == [x.article_id for x in again.documents]
    orders = {tuple(x.article_id for x in Assembler(arts, seed=s).build(item, parse_setting("mono"), "de", d).documents)
              for s in range(6)}
    assert len(orders) > 1  # the seed really shuffles
    assert instance_id("q1", "mono", "de") != instance_id("q1", "mono", "es")


def _inst(docs, dates=("2026-08-20", "2026-08-22"), id="i"):
    return Instance(id=id, qa_id="q", setting="mono", language="de", question="?", answer="!", en_question="?",
                    en_answer="!", q_type="set", documents=docs, dates=list(dates))


def _d(aid, date, role="distractor"):
    return Document(article_id=aid, title="t", text="x", language="en", published=date, role=role,
                    kind="relevant" if role == "supporting" else "related")


def test_leakage_rules():
    sup = [_d("a1", "2026-08-20", "supporting"), _d("a2", "2026-08-22", "supporting")]
    check_leakage(_inst(sup + [_d("e", "2026-08-06")]), 14)  # exactly 14 days before the earliest: fine
    with pytest.raises(LeakageError, match="published after 2026-08-06"):
        check_leakage(_inst(sup + [_d("e", "2026-08-07")]), 14)
    with pytest.raises(LeakageError, match="also used as distractors"):
        check_leakage(_inst(sup + [_d("a2", "2026-01-01")]), 14)
    with pytest.raises(LeakageError, match=r"distractor\(s\) \['e \(yesterday\)'\]"):  # unreadable date: a break
        check_leakage(_inst(sup + [_d("e", "yesterday")]), 14)
    assert split_leaks({"dev": [_inst(sup, id="i1"), _inst(sup, id="i2")]}) == []
    leaks = split_leaks({"dev": [_inst(sup, id="i1")], "test": [_inst(sup, id="i2")]})
    assert [(leak.instance, leak.rule) for leak in leaks] == [("i1", "split_leak"), ("i2", "split_leak")]
    assert "question q is in splits ['dev', 'test']" in leaks[0].detail


def test_stage_builds_every_setting_and_records_leakage(tmp_path):
    build = tmp_path / "build"
    arts = corpus()
    seed_stage(build, "ingest", list(arts.values()), Article)
    items = [qa("q1", "a1", "a2", translations={**DE, **ES}), qa("q2", "d1", "a1", translations=DE),
             qa("q3", "a2", "a1", accepted=False), qa("q4", "a1", "a2", "set", translations=DE)]
    seed_stage(build, "filters", items, QAItem)
    seed_stage(build, "distractors", [dset("q1", EN_D), dset("q2", EN_D + DE_D),
                                      dset("q4", [("late", "en")] + EN_D)], DistractorSet)
    cfg = config_from_dict({"project": {"build_dir": str(build), "languages": ["en", "de", "es"]},
                            "instances": {"settings": ["mono", "multi", "en-baseline", "multi+EQ",
                                                       "no-retrieval", "oracle"]}})
    report = Pipeline(cfg).run(only=["instances"])
    store = BuildStore(build)
    out = store.read("instances", Instance)
    by = Counter((i.qa_id, i.setting, i.language) for i in out)
    assert by == {("q1", "mono", "de"): 1, ("q1", "mono", "es"): 1, ("q1", "en-baseline", "en"): 1,
                  ("q1", "no-retrieval", "en"): 1, ("q1", "no-retrieval", "de"): 1, ("q1", "no-retrieval", "es"): 1,
                  ("q1", "oracle", "en"): 1, ("q1", "oracle", "de"): 1, ("q1", "oracle", "es"): 1,
                  ("q2", "multi", "de"): 1, ("q2", "multi+EQ", "en"): 1, ("q2", "no-retrieval", "en"): 1,
                  ("q2", "no-retrieval", "de"): 1, ("q2", "oracle", "en"): 1, ("q2", "oracle", "de"): 1,
                  # q4's distractor set starts with a too-recent article: its retrieval instances are errors
                  ("q4", "no-retrieval", "en"): 1, ("q4", "no-retrieval", "de"): 1,
                  ("q4", "oracle", "en"): 1, ("q4", "oracle", "de"): 1}
    assert all(not i.documents for i in out if i.setting == "no-retrieval")
    assert all({d.role for d in i.documents} == {"supporting"} for i in out if i.setting == "oracle")
    errors = store.read_errors("instances")
    assert sorted((e.reason, e.item_id) for e in errors) == sorted(
        [("leakage", instance_id("q4", "mono", "de")), ("leakage", instance_id("q4", "en-baseline", "en"))])
    assert "late" in errors[0].detail
    skipped = report.stages[0].skipped
    assert skipped["rejected-by-filters"] == 1
    assert skipped["mono:no-translation-es"] == 1  # q4 has no Spanish translation
    assert skipped["no-retrieval:no-translation-es"] == 1 and skipped["oracle:no-translation-es"] == 1


def test_the_stored_pivot_rule_is_read_not_re_derived():
    from babelrag.construct.instances import qa_languages

    arts = corpus()
    multi = qa("q", "d1", "a1")  # a de and an en article
    assert qa_languages(multi, arts) == ("multi", "de")  # a record written before the rule was stored
    assert qa_languages(multi.model_copy(update={"x_language": "de"}), arts) == ("multi", "de")
    assert qa_languages(multi.model_copy(update={"x_language": ""}), arts) == ("mono", None)  # stored wins
    with pytest.raises(Skip, match="missing-article"):
        qa_languages(qa("q", "d1", "gone"), arts)
    with pytest.raises(Skip, match="unsupported-language-pair"):
        qa_languages(qa("q", "d1", "g1"), arts)  # two German articles, pivot en
