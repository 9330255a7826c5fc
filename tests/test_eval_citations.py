"""Citation parsing (RAGE/IEEE, GaRAGe [cite_N], MIRAGE [docid#n]) and scoring on hand-computed cases."""
import math

import pytest

from babelrag.errors import InputError
from babelrag.evaluators.citations import (
    CitationItem,
    parse_citations,
    split_cited_sentences,
    prf,
    score_citations,
    score_random_citations,
    strip_citations,
)


@pytest.mark.parametrize(
    "answer, mentions",
    [
        ("Paris [1].", (1,)),
        ("Paris [1][2].", (1, 2)),
        ("Paris [1, 2] and [3,4]", (1, 2, 3, 4)),
        ("Paris [ 1 ;2 ]", (1, 2)),
        ("Paris [1-3]", (1, 2, 3)),
        ("Paris [2 \u2013 4]", (2, 3, 4)),
        ("Paris [#3]", (3,)),
        ("Paris [doc#2] [Doc 4] [document 1]", (2, 4, 1)),
        ("Paris [1, 3-4]", (1, 3, 4)),
        ("Paris [2] then [1] then [2]", (2, 1, 2)),
        ("no citations [sic] here", ()),
        ("Bremen grew.[cite_2] Hamburg too [cite_1][cite_3].", (2, 1, 3)),  # GaRAGe markers
        ("Paris [cite_1, cite_2]", (1, 2)),
    ],
)
def test_parse_forms(answer, mentions):
    assert parse_citations(answer, n_docs=8).mentions == mentions


def test_mirage_document_ids_resolve_to_positions():
    # MIRAGE-Bench prompts label passages with MIRACL ids (docid#passage) and answers cite them
    ids = ["4213#0", "4213#7", "88#1"]
    p = parse_citations("Berlin [4213#7]. Also [88#1, 4213#0] and [999#2].", doc_ids=ids)
    assert p.mentions == (2, 3, 1, "999#2")
    assert p.out_of_range == 1  # an id no shown document has is a wrong citation, not dropped
    assert p.in_range(3) == (2, 3, 1)


def test_markers_after_the_full_stop_stay_with_their_sentence():
    answer = "Hamburg handled 8% more in 2022.[cite_1] Bremen lost volume. [cite_3] It was 4.2 million [cite_2]."
    assert split_cited_sentences(answer) == [
        ("Hamburg handled 8% more in 2022.", (1,)),
        ("Bremen lost volume.", (3,)),
        ("It was 4.2 million .", (2,)),
    ]


def test_out_of_range_counted_not_dropped():
    p = parse_citations("A [1][9] B [0] C [2, 12]", n_docs=4)
    assert p.mentions == (1, 9, 0, 2, 12)
    assert p.out_of_range == 3


def test_malformed_groups_counted():
    p = parse_citations("A [1a] B [3-1] C [1-200] D [note] E [2]", n_docs=4)
    assert p.mentions == (2,)
    assert p.malformed == 3  # [1a], reversed range, absurd range; [note] has no digit


def test_order_of_first_appearance():
    assert parse_citations("[3] x [1][3] y [2]", 5).ordered == (3, 1, 2)


def test_prf_conventions():
    assert prf(set(), set()) == (None, None, None)  # nothing to find, nothing cited: undefined
    assert prf({1}, set()) == (0.0, None, None)  # recall undefined without relevant documents
    assert prf(set(), {1}) == (0.0, 0.0, 0.0)
    assert prf({1, 2, 3}, {1, 4}) == pytest.approx((1 / 3, 1 / 2, 0.4))
    assert prf({5}, {1}) == (0.0, 0.0, 0.0)


def test_score_citations_hand_computed():
    items = [
        # cites 1, 2 and out-of-range 9: P = 1/3, R = 1/2 (relevant 1, 3), F1 = 0.4
        CitationItem("q1", "Berlin is big [1][2]. Also [9].", n_docs=4, relevant=(1, 3)),
        # no relevant docs, no citations: undefined, left out of the means
        {"query_id": "q2", "answer": "I cannot tell.", "n_docs": 4, "relevant": ()},
        # no relevant docs but cites: precision 0, recall/F1 undefined
        CitationItem("q4", "It rained [2].", n_docs=4, relevant=()),
        # relevant docs but no citations: all 0
        CitationItem("q3", "It rained.", n_docs=4, relevant=(2,)),
    ]
    res = score_citations(items, rounds=200)
    q1, q2, q4, q3 = res.items
    assert (q1["precision"], q1["recall"], q1["f1"]) == pytest.approx((1 / 3, 0.5, 0.4))
    assert q1["out_of_range"] == 1 and q1["distinct_citations"] == 3 and q1["n_citations"] == 3
    assert q1["answer_length"] == 4  # "berlin is big also": brackets stripped
    assert (q2["precision"], q2["recall"], q2["f1"]) == (None, None, None)
    assert (q3["precision"], q3["recall"], q3["f1"]) == (0.0, 0.0, 0.0)
    assert (q4["precision"], q4["recall"], q4["f1"]) == (0.0, None, None)
    assert res.aggregate["precision"].value == pytest.approx((1 / 3 + 0 + 0) / 3)
    assert res.aggregate["recall"].value == pytest.approx((0.5 + 0) / 2)  # q2, q4 not in the mean
    assert res.aggregate["f1"].low <= res.aggregate["f1"].value <= res.aggregate["f1"].high
    assert res.counts["out_of_range_mentions"] == 1
    assert res.counts["recall_undefined"] == 2 and res.counts["f1_undefined"] == 2
    assert res.counts["precision_undefined"] == 1
    assert res.to_dict()["aggregate"]["recall"]["n"] == 2


def test_answer_length_cjk_per_character():
    res = score_citations([CitationItem("z", "巴黎是首都[1]。", n_docs=2, relevant=(1,))], rounds=10)
    assert res.items[0]["answer_length"] == 5


def test_strip_keeps_non_citations():
    assert strip_citations("a [1] b [sic]") == "a  b [sic]"


def test_bad_relevant_ids_name_the_item():
    with pytest.raises(InputError, match="q7"):
        score_citations([CitationItem("q7", "x", n_docs=2, relevant=(3,))])


def test_random_baseline_deterministic_cases_and_seed():
    items = [
        CitationItem("all", "[1][2]", n_docs=2, relevant=(1,)),  # k = 2 = n_docs: cites everything
        CitationItem("none", "no cites", n_docs=3, relevant=(1,)),  # k = 0
    ]
    res = score_random_citations(items, draws=5, rounds=10)
    assert (res.items[0]["precision"], res.items[0]["recall"]) == (0.5, 1.0)
    assert (res.items[1]["precision"], res.items[1]["recall"]) == (0.0, 0.0)


def test_random_baseline_expectation_and_reproducible():
    items = [CitationItem("q", "[1]", n_docs=4, relevant=(1,))]  # k = 1 -> E[P] = E[R] = 1/4
    a = score_random_citations(items, draws=4000, seed=3, rounds=10)
    b = score_random_citations(items, draws=4000, seed=3, rounds=10)
    assert a.items == b.items
    assert a.items[0]["precision"] == pytest.approx(0.25, abs=0.03)
    fixed = score_random_citations(items, k=4, draws=3, rounds=10)
    assert fixed.items[0]["precision"] == 0.25 and fixed.items[0]["recall"] == 1.0
    assert not math.isnan(a.aggregate["f1"].value)


def test_parser_round_trips_generated_citations():
    """Property: however the ids are written, the parser returns them in order."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    styles = st.sampled_from(["[{}]", "[#{}]", "[doc#{}]", "[Doc {}]", "[ {} ]"])

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.tuples(st.integers(1, 30), styles), max_size=8), st.sampled_from([", ", ",", " ; "]),
           st.booleans())
    def check(cites, sep, grouped):
        ids = [i for i, _ in cites]
        if grouped and ids:
            text = "Claim " + "[" + sep.join(str(i) for i in ids) + "] end."
        else:
            text = "Claim " + " text ".join(fmt.format(i) for i, fmt in cites) + " end."
        parsed = parse_citations(text, n_docs=10)
        assert list(parsed.mentions) == ids
        assert parsed.out_of_range == sum(i > 10 for i in ids)

    check()


def test_random_baseline_hypergeometric_expectation_and_no_relevant():
    # 8 docs, 2 relevant, 3 random citations: E[tp] = 3*2/8 -> E[P] = 1/4, E[R] = 3/8
    items = [CitationItem("q", "x", n_docs=8, relevant=(2, 5))]
    res = score_random_citations(items, k=3, draws=20000, seed=1, rounds=10)
    assert res.items[0]["precision"] == pytest.approx(0.25, abs=0.01)
    assert res.items[0]["recall"] == pytest.approx(0.375, abs=0.01)
    none = score_random_citations([CitationItem("n", "x", n_docs=4, relevant=())], k=2, rounds=10)
    assert (none.items[0]["precision"], none.items[0]["recall"], none.items[0]["f1"]) == (0.0, None, None)
