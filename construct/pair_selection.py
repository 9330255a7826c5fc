"""Which related pairs a budget-limited stage works on: round-robin over language combinations.

Shared by ``relevance.max_pairs`` and ``questions.max_pairs`` so that a small budget (the demo, a trial
build) checks and uses the same kind of pairs: X–en and en–en, non-English article first. Within a
combination the next pick is the first pair (in id order) that shares no article, title entity or event
with the pairs already chosen — otherwise the one sharing least — so a budget of eight does not spend
itself on eight takes of the same story (near-duplicate questions the filters would drop). X–X pairs of a
language in ``questions.monolingual`` are their own combination (X, X). Pairs the pipeline cannot turn into
questions (neither side in the pivot language nor a monolingual X–X pair, or a language outside
``project.languages``) are counted, never silently dropped.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Optional

from babelrag.records import Article, ArticlePair, monolingual_language, x_language

Chosen = tuple[ArticlePair, Article, Article]


def select_pairs(pairs: list[ArticlePair], articles: dict[str, Article], pivot: str, languages: list[str],
                 max_pairs: Optional[int], skip: Callable[..., Any] = lambda *a: None,
                 monolingual: Sequence[str] = ()) -> list[Chosen]:
    """Usable pairs oriented (X, pivot), and X–X pairs of the ``monolingual`` languages, at most ``max_pairs``
    taken round-robin over language combinations, returned in pair-id order. ``skip(reason[, n])`` counts
    what is left out."""
    eligible: dict[tuple[str, str], list[Chosen]] = {}
    for pair in sorted(pairs, key=lambda p: p.id):
        if pair.relevant is False:
            skip("pair-not-relevant")
            continue
        a, b = articles.get(pair.article_a), articles.get(pair.article_b)
        if a is None or b is None:
            skip("pair-article-missing")
            continue
        mono = monolingual_language((a.language, b.language), monolingual)
        x = mono if mono is not None else x_language((a.language, b.language), pivot)
        if x is None or (x and x not in languages):
            skip("unsupported-language-pair")
            continue
        if a.language == pivot and b.language != pivot:
            a, b = b, a  # X first, English second
        eligible.setdefault((a.language, b.language), []).append((pair, a, b))
    chosen: list[Chosen] = []
    queues = [list(v) for _, v in sorted(eligible.items())]
    if max_pairs is None:
        return sorted((c for q in queues for c in q), key=lambda t: t[0].id)
    used: set[str] = set()
    while len(chosen) < max_pairs and any(queues):
        for q in queues:
            if q and len(chosen) < max_pairs:
                k = min(range(len(q)), key=lambda i: (len(_topics(q[i]) & used), i))
                used |= _topics(q[k])
                chosen.append(q.pop(k))
    left = sum(len(q) for q in queues)
    if left:
        skip("over-max-pairs", left)
    return sorted(chosen, key=lambda t: t[0].id)


def _topics(c: Chosen) -> set[str]:
    """What makes two pairs the same story: their articles, title entities and event."""
    pair, a, b = c
    out = {f"article:{a.id}", f"article:{b.id}", *(f"entity:{e}" for e in (*a.title_entities, *b.title_entities))}
    if pair.event_id:
        out.add(f"event:{pair.event_id}")
    return out
