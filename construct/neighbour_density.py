"""Neighbour density: an article's mean cosine to its k nearest neighbours in one language. Both pair scores
that correct for a language's (or an article's) general closeness use it: CSLS for same-language pairs
(``samelang``) and the ratio margin for cross-language pairs (``pair_margin``); one module under both keeps the
construct package free of a cycle between them."""
from __future__ import annotations

import statistics


def densities(hits: dict[str, list[tuple[str, float]]], k: int, fill: float | None = None) -> dict[str, float]:
    """Each article's mean cosine to its ``k`` nearest neighbours. A short list (few articles of the language
    in the window) is filled with ``fill`` (the encoder's reference density; None: the median of the
    language's neighbour cosines): with only each other as neighbours, two articles' own cosine would be their
    whole density and CSLS would cancel it to 0."""
    if fill is None:
        seen = [c for found in hits.values() for _, c in found[:k]]
        fill = statistics.median(seen) if seen else 0.0
    return {q: density(sum(c for _, c in found[:k]), len(found), k, fill) for q, found in hits.items()}


def density(total: float, found: int, k: int, fill: float) -> float:
    """One article's density from the sum of its first k neighbour cosines (``found`` neighbours in all)."""
    return (total + fill * max(0, k - found)) / k
