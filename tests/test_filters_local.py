"""Non-LLM filters on hand-made questions: each has cases that must pass and cases that must fail."""

import pytest

from babelrag.config import config_from_dict
from babelrag.construct.filters import (Verdict, apply_filters, check_named_entity, check_near_duplicate,
                                        check_verbatim, check_well_formed, load_spacy, near_duplicate_encoder,
                                        verbatim_overlap, well_formed_score)
from babelrag.records import QAItem
from tests.helpers.qa_fixtures import corpus

LABELS = ["PERSON", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "NORP", "FAC"]


def item(id_, question, answer="300 staff.", articles=("a1", "a2")):
    return QAItem(id=id_, pair_id="p", article_ids=list(articles), q_type="comparison", question=question,
                  answer=answer)


def statuses(verdicts):
    return {k: v.status for k, v in verdicts.items()}


def test_well_formed_heuristic():
    good = ["How many staff will Lumen Bank hire after opening its Porto office?",
            "Which two cities did Maria Lopez visit in August 2026 according to both reports?"]
    bad = ["What is in Article A?",  # template residue
           "how many",  # short, no '?', lower case
           "Question: Who won? Who lost?",  # prefix, two questions
           "List the {entities} from the summary.",  # residue, no '?'
           "Lumen Bank will hire 300 staff in Porto."]  # a statement
    v = check_well_formed([item(f"g{i}", q) for i, q in enumerate(good)] +
                          [item(f"b{i}", q) for i, q in enumerate(bad)], 0.6)
    assert {k: s for k, s in statuses(v).items()} == {**{f"g{i}": "pass" for i in range(2)},
                                                     **{f"b{i}": "fail" for i in range(5)}}
    assert well_formed_score("What is in Article A?")[1] == ["template residue: Article A"]


@pytest.fixture(scope="module")
def nlp():
    return load_spacy()


def test_named_entity_filter(nlp):
    v = check_named_entity([item("ok", "How many staff will Lumen Bank hire after opening its Porto office?"),
                            item("geo", "Which two rivers flooded in Bavaria and Saxony during the storm?"),
                            item("none", "What did the company announce after the meeting ended?"),
                            item("date", "How many people attended both festivals last week?")], LABELS, nlp)
    assert statuses(v) == {"ok": "pass", "geo": "pass", "none": "fail", "date": "fail"}
    assert "Lumen Bank (ORG)" in v["ok"].detail
    assert "DATE" not in v["date"].detail  # dates/cardinals are not named entities here


def test_verbatim_overlap_and_filter():
    arts = corpus()
    assert verbatim_overlap("Lumen Bank opened an office in Porto", arts["a1"].text) == 1.0
    assert verbatim_overlap("Lumen Bank opened offices", arts["a1"].text) == pytest.approx(3 / 4)
    v = check_verbatim([
        item("copied", "Q?", "Lumen Bank opened an office in Porto."),  # whole sentence of a1
        item("mixed", "Q?", "It opened an office and will hire 300 staff in Porto."),  # combines a1 and a2
        item("short", "Q?", "300 staff"),  # below min_tokens: names and numbers may repeat the text
    ], arts, max_overlap=0.8, min_tokens=4)
    assert statuses(v) == {"copied": "fail", "mixed": "pass", "short": "pass"}
    assert "from a1" in v["copied"].detail


@pytest.fixture(scope="module")
def encoder():
    return near_duplicate_encoder(config_from_dict({}))


def test_near_duplicates_keep_the_first_by_id(encoder):
    model, threshold, _ = encoder
    v = check_near_duplicate([
        item("q1", "How many staff will Lumen Bank hire after opening its Porto office?"),
        item("q2", "How many employees will Lumen Bank hire after opening its office in Porto?"),
        item("q3", "Which two rivers flooded in Bavaria and Saxony during the storm?"),
        item("q0", "How many staff will Lumen Bank hire after it opens its Porto office?"),
        # one word apart, different questions (Tatoeba eng: "Can you speak French?" / "Can you speak English?")
        item("q4", "Can you speak French?"),
        item("q5", "Can you speak English?"),
    ], threshold=threshold, model=model)
    assert statuses(v) == {"q0": "pass", "q1": "fail", "q2": "fail", "q3": "pass", "q4": "pass", "q5": "pass"}
    assert v["q1"].detail.startswith("near-duplicate of q0")
    # a stricter threshold keeps paraphrases apart
    v = check_near_duplicate([item("q1", "How many staff will Lumen Bank hire after opening its Porto office?"),
                              item("q2", "How many employees will Lumen Bank hire after opening its office in Porto?")],
                             threshold=0.995, model=model)
    assert statuses(v) == {"q1": "pass", "q2": "pass"}


def test_apply_filters_stops_at_first_rejection_and_records_every_verdict():
    calls = []

    def first(xs):
        calls.append(("first", [x.id for x in xs]))
        return {x.id: Verdict("fail" if x.id == "b" else "pass", "d") for x in xs}

    def second(xs):
        calls.append(("second", [x.id for x in xs]))
        return {x.id: Verdict("error", "llm down") for x in xs if x.id == "c"} | {"a": Verdict("pass")}

    out, counts = apply_filters([item("a", "Q?"), item("b", "Q?"), item("c", "Q?")],
                                [("first", first), ("second", second)])
    assert calls == [("first", ["a", "b", "c"]), ("second", ["a", "c"])]
    assert counts == {"first": {"pass": 2, "fail": 1, "error": 0}, "second": {"pass": 1, "fail": 0, "error": 1}}
    by = {x.id: x for x in out}
    assert by["a"].accepted and not by["b"].accepted and not by["c"].accepted
    assert (by["b"].rejected_by, by["c"].rejected_by) == ("first", "second")
    assert by["b"].verdict("second").status == "not_run" and by["b"].verdict("first").status == "fail"
