"""One failing case per release rule; each failure names the instance and the rule."""
import datetime

import pytest

from babelrag.release.splits import assign_splits, hash_fraction
from babelrag.release.validate import RULES, Rules, validate
from tests.helpers.release_fixtures import make_records

RULES_CFG = Rules(languages=["en", "de", "zh", "es", "ar"], min_days_before=14)


def rows(instances):
    return [i.model_dump(mode="json") for i in instances]


def run(instances, rules=RULES_CFG, **kw):
    return validate(rows(instances) if instances and not isinstance(instances[0], dict) else instances, rules, **kw)[1]


def only(report):
    return {(v.instance, v.rule) for v in report.violations}


@pytest.fixture()
def insts():
    return make_records()[2]


def test_clean_fixture_passes(insts):
    report = run(insts)
    assert report.ok, report.summary()
    assert report.checked == 17


def test_schema(insts):
    data = rows(insts)
    data[0]["q_type"] = "yes-no"
    del data[1]["answer"]
    data[2]["documents"][0]["published"] = "June 3rd"
    report = validate(data, RULES_CFG)[1]
    assert only(report) == {(insts[0].id, "schema"), (insts[1].id, "schema"), (insts[2].id, "schema")}
    details = {v.instance: v.detail for v in report.violations}
    assert "q_type" in details[insts[0].id] and "answer" in details[insts[1].id]
    assert "'June 3rd' is not an ISO date" in details[insts[2].id]


def test_language_wrong_question_language(insts):
    de = next(i for i in insts if i.language == "de" and i.setting == "mono")
    de.question = de.en_question  # English text declared German
    report = run(insts)
    assert only(report) == {(de.id, "language")}
    assert "question looks English (en), declared German (de)" in report.violations[0].detail


def test_a_name_as_answer_is_not_judged_for_language(insts):
    # a short answer of capitalised words reads the same in every Latin-script language: unchecked,
    # while a German-declared English sentence of the same length still fails
    de = next(i for i in insts if i.language == "de" and i.setting == "mono")
    de.answer = "Calloway Freight"
    report = run(insts)
    assert report.ok, report.summary()
    de.answer = "The freight was delayed again"
    assert only(run(insts)) == {(de.id, "language")}


def test_language_not_a_project_language(insts):
    insts[0].language = "fr"
    report = run(insts, Rules(languages=["en", "de", "zh"]))
    assert (insts[0].id, "language") in only(report)
    assert "not a project language" in report.violations[0].detail


def test_short_texts_are_unchecked_not_failed(insts):
    insts[0].answer = "1200"
    report = run(insts)
    assert report.ok and report.unchecked_language >= 1


def test_distractor_date(insts):
    inst = next(i for i in insts if i.setting == "mono")
    support = min(datetime.date.fromisoformat(d) for d in inst.dates)
    inst.documents[3].published = (support - datetime.timedelta(days=13)).isoformat()  # 13 < 14 days
    report = run(insts)
    assert only(report) == {(inst.id, "distractor_date")}
    assert inst.documents[3].article_id in report.violations[0].detail
    # exactly 14 days before is allowed
    inst.documents[3].published = (support - datetime.timedelta(days=14)).isoformat()
    assert run(insts).ok


def test_support_in_distractors(insts):
    inst = next(i for i in insts if i.setting == "mono")
    inst.documents[2] = inst.documents[2].model_copy(update={"article_id": inst.documents[0].article_id})
    report = run(insts)
    assert (inst.id, "support_in_distractors") in only(report)


def test_missing_support(insts):
    inst = next(i for i in insts if i.setting == "en-baseline")
    inst.documents = [d for d in inst.documents if d.role == "distractor"]
    assert only(run(insts)) == {(inst.id, "missing_support")}


def test_split_leak_of_instance_id_question_and_article_pair(insts):
    by_row = ["test"] * len(insts)
    mono_de = next(k for k, i in enumerate(insts) if i.qa_id == "qa-000" and i.setting == "mono" and i.language == "de")
    by_row[mono_de] = "dev"  # question qa-000 now in two splits
    report = run(insts, row_splits=by_row)
    assert {r for _, r in only(report)} == {"split_leak"}
    assert any(v.instance == insts[mono_de].id and "qa-000" in v.detail for v in report.violations)
    # a different question on the same article pair in another split
    other = insts[[k for k, i in enumerate(insts) if i.qa_id == "qa-001"][0]]
    other_pair = [d.article_id for d in other.documents if d.role == "supporting"]
    clone = insts[mono_de].model_copy(deep=True, update={"id": "inst-clone", "qa_id": "qa-900"})
    for d, aid in zip([d for d in clone.documents if d.role == "supporting"], other_pair):
        d.article_id = aid
    data = insts + [clone]
    splits = ["test"] * len(insts) + ["dev"]
    report = run(data, row_splits=splits)
    assert ("inst-clone", "split_leak") in only(report)
    assert "supporting articles" in next(v.detail for v in report.violations if v.instance == "inst-clone")
    # the same instance id in two splits
    dup = insts + [insts[0]]
    report = run(dup, row_splits=["test"] * len(insts) + ["dev"])
    assert (insts[0].id, "split_leak") in only(report)


def test_duplicate_id(insts):
    report = run(insts + [insts[0]])
    assert (insts[0].id, "duplicate_id") in only(report)


def test_unverified_and_explicit_flag(insts):
    insts[0].verified = False
    assert only(run(insts)) == {(insts[0].id, "unverified")}
    allowed = Rules(languages=RULES_CFG.languages, allow_unverified=True)
    report = run(insts, allowed)
    assert report.ok and report.unverified_released == 1


def test_empty_text(insts):
    inst = next(i for i in insts if i.setting == "mono")
    inst.documents[4].text = "\n "
    report = run(insts)
    assert only(report) == {(inst.id, "empty_text")}
    assert inst.documents[4].article_id in report.violations[0].detail


def test_every_rule_has_a_failing_case_here():
    import inspect
    import sys

    source = inspect.getsource(sys.modules[__name__])
    for rule in RULES:
        assert f'"{rule}"' in source, rule


def test_split_assignment_is_deterministic_and_groups_questions(insts):
    a = assign_splits(insts, seed=13, dev_fraction=0.4)
    assert a == assign_splits(list(reversed(insts)), seed=13, dev_fraction=0.4)
    assert set(a) == {i.qa_id for i in insts}
    for qa, split in a.items():
        assert split == ("dev" if hash_fraction(13, qa) < 0.4 else "test")
    # questions sharing a supporting article are grouped under the smallest qa id
    extra = {"qa-003": ["art-0-s1"]}
    b = assign_splits(insts, seed=13, dev_fraction=0.4, extra_support=extra)
    assert b["qa-003"] == b["qa-000"]


def test_undated_documents_of_a_keep_or_infer_build(insts):
    """corpus.undated keep / infer releases a document without a real publication date as published "": a schema
    violation unless the build allowed undated articles; with distractors it is still a distractor_date violation
    (freshness cannot be checked against an undated supporting article)."""
    inst = next(i for i in insts if i.setting == "mono")
    support = next(d for d in inst.documents if d.role == "supporting")
    support.published = ""
    inst.dates = ["" if d == inst.dates[0] else d for d in inst.dates]
    assert only(run(insts)) == {(inst.id, "schema")}
    undated_ok = Rules(languages=RULES_CFG.languages, min_days_before=14, allow_undated=True)
    report = run(insts, rules=undated_ok)
    assert only(report) == {(inst.id, "distractor_date")} and support.article_id in report.violations[0].detail
    inst.documents = [d for d in inst.documents if d.role == "supporting"]  # no distractors: nothing to check
    assert run(insts, rules=undated_ok).ok
