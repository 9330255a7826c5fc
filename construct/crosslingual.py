"""Cross-language pairs: X–pivot (English) article pairs about the same event, from dense retrieval.

Articles are embedded with a multilingual encoder and stored in Milvus. Queries come either from an
events file (one JSON object per line: ``{"event_id": .., "en": "..", "de": "..", ...}``; each language's
description searches that language's articles) or, without one, from sampled non-pivot articles that
search pivot-language articles published within ``max_days_apart``. An article joins the event it
matches best; X and pivot hits of the same event within the thresholds become pairs.

Every dense pair carries the cosine of its two articles' vectors as ``score`` and needs at least
``dense.min_pair_similarity`` (calibrated with ``bench/bench_dense_threshold.py``: unrelated news
articles score up to ~0.46 with the default encoder, true cross-language pairs from ~0.5 up).
"""
from __future__ import annotations

import random
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


from babelrag.errors import InputError
from babelrag.executor import chunks
from babelrag.rows import iter_jsonl
from babelrag.pipeline import StageContext
from babelrag.records import Article, ArticlePair


@dataclass
class Doc:
    id: str
    language: str
    day: int


def passage(art: Article, chars: int) -> str:
    return f"{art.title}. {art.text[:chars]}"


def load_events(path: Path, languages: list[str]) -> list[dict[str, str]]:
    if not path.exists():
        raise InputError(f"events file not found: {path} (dense.events_file)")
    events = []
    for lineno, data in iter_jsonl(path):
        if not any(isinstance(data.get(lang), str) for lang in languages):
            raise InputError(f"{path}:{lineno}: expected an object with a description in one of {languages}")
        data.setdefault("event_id", f"event-{lineno}")
        events.append(data)
    if not events:
        raise InputError(f"events file {path} has no events")
    return events


def encoder_for(ctx: StageContext) -> Any:
    from babelrag.construct.encoders import CachedEncoder, VectorCache, build_encoder

    enc_cfg = ctx.config.dense.encoder
    inner = build_encoder(enc_cfg, runner_factory=lambda: ctx.llm, resolve=ctx.config.resolve)
    if hasattr(inner, "stage"):  # an endpoint encoder: its calls count in the run report of the stage encoding
        inner.stage = ctx.spec.name
    return CachedEncoder(inner, VectorCache(ctx.store.shared_dir("vectors") / "cache.sqlite"))


def index_corpus(ctx: StageContext, encoder: Any, block_size: int | None = None) -> tuple[Any, dict[str, Doc]]:
    """Embed every ingested article (cached by text hash) and upsert it into Milvus (the index stage,
    ``construct/index.py``, runs it; pairs and distractors read the result with ``index.open_index``).

    Only small per-article metadata stays in memory; vectors live in Milvus (and the vector cache).
    With ``executor.backend: ray`` the encoder runs on the cluster's workers, blocks of articles in
    flight at once; the vectors, the cache and the Milvus rows are the same as encoded here."""
    from babelrag.construct.vectorstore import store_from_config

    chars = ctx.config.dense.passage_chars
    docs: dict[str, Doc] = {}
    store = None
    blocks: deque[list[Article]] = deque()

    def passages() -> Iterator[list[str]]:
        articles = ctx.progress(ctx.iter_read("ingest", Article), desc="embedding articles")
        for block in chunks(articles, block_size or INDEX_BLOCK):
            blocks.append(block)
            yield [passage(a, chars) for a in block]

    for vecs in encoder.encode_stream(passages(), "passage", encoding_map(ctx)):
        block = blocks.popleft()
        if store is None:
            store = store_from_config(ctx, vecs.shape[1])
        store.upsert([a.id for a in block], vecs, [a.language for a in block],
                     [a.day for a in block], [a.title for a in block], [a.source for a in block])
        for a in block:
            docs[a.id] = Doc(a.id, a.language, a.day)
    if store is not None and store.count() > len(docs):
        ctx.extra["vectors_pruned"] = store.prune(set(docs))  # stale rows from an earlier corpus
    ctx.extra["encoder"] = encoder.name
    ctx.extra["vector_cache"] = {"hits": encoder.hits, "misses": encoder.misses}
    return store, docs


INDEX_BLOCK = 512  # articles per encoding task and Milvus upsert (index.block_size overrides it)


def encoding_map(ctx: StageContext) -> Callable[[Iterable[list[str]]], Iterator[Any]] | None:
    """Where article passages are encoded: on the Ray cluster's workers (``executor.backend: ray``, a
    local encoder kind) as a mapped task, else None (here, with the encoder's own threads)."""
    if ctx.config.executor.backend != "ray":
        return None
    from babelrag.construct.encoders.mapped import encode_task
    from babelrag.executor import executor_from_config

    task = encode_task(ctx.config.dense.encoder, ctx.config.resolve)
    if task is None:
        return None
    executor = executor_from_config(ctx.config, chunk_size=1)  # an item is already a block of passages
    ctx.extra["encode_workers"] = executor.processes
    return lambda texts: executor.map(task, texts)


def dense_pairs(ctx: StageContext) -> list[ArticlePair]:
    cfg = ctx.config.dense
    languages = list(ctx.config.project.languages)
    pivot = ctx.config.project.pivot_language
    from babelrag.construct.index import open_index

    encoder = encoder_for(ctx)  # for the queries; the articles are in the index stage's store
    ctx.extra["encoder"] = encoder.name
    try:
        store, docs = open_index(ctx)
        if store is None:
            return []
        try:
            events_path = ctx.config.resolve(cfg.events_file) if cfg.events_file else None
            if cfg.queries == "events" and events_path is not None:
                events = load_events(events_path, languages)
                ctx.extra["dense_queries"] = f"events ({len(events)} from {events_path.name})"
                return event_pairs(ctx, store, encoder, events, docs, languages, pivot)
            if cfg.queries == "events":
                ctx.extra["dense_queries"] = "articles (dense.events_file not set)"
            else:
                ctx.extra["dense_queries"] = "articles"
            return article_pairs(ctx, store, docs, pivot)
        finally:
            store.close()
    finally:
        encoder.cache.close()


def _make_pair(x: Doc, en: Doc, score: float, event_id: str = "") -> ArticlePair:
    from babelrag.construct.pairs import pair_id

    a, b = x, en  # X first, pivot second (XRAG's "X-English pairs"; same order as the sample ground truth)
    return ArticlePair(id=pair_id("dense", a.id, b.id), article_a=a.id, article_b=b.id, language_a=a.language,
                       language_b=b.language, method="dense", score=round(float(score), 6),
                       days_apart=abs(x.day - en.day), event_id=event_id)


def event_pairs(ctx: StageContext, store: Any, encoder: Any, events: list[dict[str, str]],
                docs: dict[str, Doc], languages: list[str], pivot: str) -> list[ArticlePair]:
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
    pairs: list[ArticlePair] = []
    for e, by_lang in sorted(per_event.items()):
        mine = {lang: [(i, s) for i, s in hits if best[i][1] == e] for lang, hits in by_lang.items()}
        lo, hi = densest_window([(docs[i].day, s) for hits in mine.values() for i, s in hits], cfg.max_days_apart)
        before = sum(len(h) for h in mine.values())
        mine = {lang: [(i, s) for i, s in hits if lo <= docs[i].day <= hi] for lang, hits in mine.items()}
        dropped = before - sum(len(h) for h in mine.values())
        if dropped:
            ctx.skip("dense-hit-outside-event-window", dropped)
        ens = mine.get(pivot, [])
        vecs = store.vectors(sorted({i for hits in mine.values() for i, _ in hits})) if ens else {}
        for lang in languages:
            if lang == pivot:
                continue
            cands = [(pair_similarity(vecs, xi, ei), xi, ei) for xi, _ in mine.get(lang, []) for ei, _ in ens
                     if abs(docs[xi].day - docs[ei].day) <= cfg.max_days_apart]
            cands = _above_pair_threshold(ctx, cands, cfg.min_pair_similarity)
            cands.sort(key=lambda t: (-t[0], t[1], t[2]))
            for score, xi, ei in cands[:cfg.max_pairs_per_event]:
                pairs.append(_make_pair(docs[xi], docs[ei], score, str(events[e].get("event_id", e))))
    return pairs


def pair_similarity(vecs: dict[str, Any], a: str, b: str) -> float:
    """Cosine of the two articles' (normalised) vectors: the score a dense pair carries."""
    return float(vecs[a] @ vecs[b])


def _above_pair_threshold(ctx: StageContext, cands: list[tuple[float, str, str]],
                          threshold: float) -> list[tuple[float, str, str]]:
    """Candidates whose article-article cosine reaches ``dense.min_pair_similarity`` (others counted)."""
    kept = [c for c in cands if c[0] >= threshold]
    if len(kept) < len(cands):
        ctx.skip("dense-below-min-pair-similarity", len(cands) - len(kept))
    return kept


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


def article_pairs(ctx: StageContext, store: Any, docs: dict[str, Doc], pivot: str,
                  batch: int = 64) -> list[ArticlePair]:
    """Sampled non-pivot articles search pivot articles nearby in time; mutual best matches pair up.

    Searches go in batches (Milvus Lite has a large fixed cost per search call): queries sorted by date
    share one call filtered to the batch's date span, and each query keeps its best hit inside its own
    ``max_days_apart`` window."""
    cfg = ctx.config.dense
    candidates = sorted(d for d, doc in docs.items() if doc.language != pivot)
    rng = random.Random(ctx.seed)
    queries = candidates if len(candidates) <= cfg.sample_queries else rng.sample(candidates, cfg.sample_queries)
    queries = sorted(queries, key=lambda i: (docs[i].day, i))
    pairs: list[ArticlePair] = []
    starts = range(0, len(queries), batch)
    for s in ctx.progress(starts, total=len(starts), desc="cross-lingual queries"):
        chunk = [docs[i] for i in queries[s:s + batch]]
        best = _best_in_window(store, chunk, [pivot], docs, cfg)
        found = []
        for q in chunk:
            hit = best.get(q.id)
            if hit is None:
                ctx.skip("dense-no-match")
            elif hit[1] < cfg.min_pair_similarity:  # the hit's score is the article-article cosine
                ctx.skip("dense-below-min-pair-similarity")
            else:
                found.append((q, docs[hit[0]], hit[1]))
        if cfg.mutual and found:
            by_lang: dict[str, list[Doc]] = defaultdict(list)
            for q, en, _ in found:
                if en not in by_lang[q.language]:
                    by_lang[q.language].append(en)
            back = {lang: _best_in_window(store, ens, [lang], docs, cfg) for lang, ens in by_lang.items()}
        for q, en, score in found:
            if cfg.mutual:
                b = back[q.language].get(en.id)
                if b is None or b[0] != q.id:
                    ctx.skip("dense-not-mutual")
                    continue
            pairs.append(_make_pair(q, en, score))
    return pairs


def _best_in_window(store: Any, queries: list[Doc], languages: list[str], docs: dict[str, Doc],
                    cfg: Any) -> dict[str, tuple[str, float]]:
    """For each query article: its best hit in ``languages`` within max_days_apart and above min_score."""
    import numpy as np

    if not queries:
        return {}
    vecs = store.vectors([q.id for q in queries])
    lo = min(q.day for q in queries) - cfg.max_days_apart
    hi = max(q.day for q in queries) + cfg.max_days_apart
    results = store.search(np.stack([vecs[q.id] for q in queries]), top_k=max(cfg.top_k, 20),
                           languages=languages, published_from=lo, published_to=hi)
    out: dict[str, tuple[str, float]] = {}
    for q, hits in zip(queries, results):
        for h in hits:  # best first
            if h.score < cfg.min_score:
                break
            if abs(h.published - q.day) <= cfg.max_days_apart and h.id in docs:
                out[q.id] = (h.id, h.score)
                break
    return out
