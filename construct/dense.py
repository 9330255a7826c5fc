"""The dense index shared by the stages that embed articles: the index stage's body (``index_corpus``), the
encoder every dense stage builds (``encoder_for``), the store and entries a later stage opens (``open_index``)
and the date-window search over them (``hits_in_window``).

The index stage (``construct/index.py``) runs ``index_corpus``; pairs (``construct/crosslingual.py``,
``construct/samelang.py``) and distractors read the result with ``open_index``. Nothing here knows about
pairs: the stages depend on this module, never the other way round.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict
from typing import Any

from babelrag.construct.encoders import CachedEncoder, VectorCache, build_encoder
from babelrag.construct.encoders import block_size as encoder_block_size
from babelrag.construct.encoders.mapped import cluster_encode_map
from babelrag.construct.doctable import Doc, DocTable
from babelrag.construct.exactsearch import WindowIndex, file_index
from babelrag.construct.vectorfile import VectorFileWriter
from babelrag.construct.vectorstore import store_from_config
from babelrag.errors import StageError
from babelrag.executor import chunks
from babelrag.records import Article, undated, within_days
from babelrag.stage import StageContext


def passage(art: Article, chars: int) -> str:
    return passage_of(art.title, art.text, chars)


def passage_of(title: str, text: str, chars: int) -> str:
    """The passage the index embeds for an article: its title and the first ``chars`` characters of its text."""
    return f"{title}. {text[:chars]}"


#: the ingest columns ``passage_of`` reads (with the id and language)
PASSAGE_COLUMNS = ("id", "title", "text", "language")


def encoder_for(ctx: StageContext) -> Any:
    enc_cfg = ctx.config.dense.encoder
    inner = build_encoder(enc_cfg, runner_factory=lambda: ctx.llm, resolve=ctx.config.resolve)
    if hasattr(inner, "stage"):  # an endpoint encoder: its calls count in the run report of the stage encoding
        inner.stage = ctx.spec.name
    try:
        cache = VectorCache(ctx.store.shared_dir("vectors") / "cache.sqlite")
    except BaseException:
        inner.close()  # its device workers, if any
        raise
    return CachedEncoder(inner, cache)


def index_corpus(ctx: StageContext, encoder: Any, block_size: int | None = None) -> tuple[Any, dict[str, Doc]]:
    """Embed every ingested article (cached by text hash) and upsert it into Milvus (the index stage,
    ``construct/index.py``, runs it; pairs and distractors read the result with ``open_index``).
    The caller closes the store returned; on an error it is closed here (a Milvus Lite file stays locked
    while open).

    Only small per-article metadata stays in memory; vectors live in Milvus (and the vector cache).
    With ``executor.backend: ray`` the encoder runs on the cluster's workers, blocks of articles in
    flight at once; the vectors, the cache and the Milvus rows are the same as encoded here."""
    chars = ctx.config.dense.passage_chars
    docs: dict[str, Doc] = {}
    store = None
    blocks: deque[list[Article]] = deque()

    def passages() -> Iterator[list[str]]:
        articles = ctx.progress(ctx.iter_read("ingest", Article), desc="embedding articles")
        # the block is also the length-sorting window: index.block_size, else the encoder's own size
        for block in chunks(articles, block_size or encoder_block_size(encoder, INDEX_BLOCK)):
            blocks.append(block)
            yield [passage(a, chars) for a in block]

    copy = VectorFileWriter(ctx.artifacts_dir)  # the index stage's sorted copy for exact mining (vectorfile.py)
    try:
        for vecs in encoder.encode_stream(passages(), "passage", encoding_map(ctx)):
            block = blocks.popleft()
            if store is None:
                store = store_from_config(ctx, vecs.shape[1])
            store.upsert([a.id for a in block], vecs, [a.language for a in block],
                         [a.day for a in block], [a.title for a in block], [a.source for a in block])
            copy.add([a.id for a in block], vecs, [a.language for a in block], [a.day for a in block])
            for a in block:
                docs[a.id] = Doc(a.id, a.language, a.day, a.fresh_day is not None)
        if store is not None and store.count() > len(docs):
            ctx.extra["vectors_pruned"] = store.prune(set(docs))  # stale rows from an earlier corpus
        if store is not None:  # searched only once every row is sealed and indexed (HNSW builds in the background)
            ctx.extra["vector_index"] = store.seal()
            ctx.extra["vector_file"] = asdict(copy.finish())
        else:
            copy.abort()
    except BaseException:
        copy.abort()
        if store is not None:  # the caller closes it on success; on an error nobody else has it
            store.close()
        raise
    ctx.extra["encoder"] = encoder.name
    ctx.extra["encoder_placement"] = encoder.placement()  # devices, precision, batch size, OOM back-offs
    ctx.extra["vector_cache"] = {"hits": encoder.hits, "misses": encoder.misses}
    return store, docs


INDEX_BLOCK = 512  # articles per encoding task and Milvus upsert (index.block_size overrides it)


def encoding_map(ctx: StageContext) -> Callable[[Iterable[list[str]]], Iterator[Any]] | None:
    """Where article passages are encoded: on the Ray cluster's workers (``executor.backend: ray``, a
    local encoder kind) as a mapped task, else None (here, with the encoder's own threads)."""
    if ctx.config.executor.backend != "ray":
        return None
    mapped = cluster_encode_map(ctx.config)  # GPU tasks when the cluster has GPUs, else CPU tasks
    if mapped is None:
        return None
    ctx.extra["encode_workers"] = mapped[1]
    return mapped[0]


def hits_in_window(store: Any, queries: list[Doc], languages: list[str], docs: Mapping[str, Doc],
                    cfg: Any, top_k: int | None = None, min_score: float | None = None,
                    with_days: bool = False) -> dict[str, list[tuple]]:
    """For each query article: its hits in ``languages`` within max_days_apart and above ``min_score``
    (default ``cfg.min_score``), best first, as (id, score) or, ``with_days``, (id, score, day) (the search has
    the day: no lookup per hit); ``top_k`` hits searched (default max(cfg.top_k, 20))."""
    import numpy as np

    if not queries:
        return {}
    floor = cfg.min_score if min_score is None else min_score
    vecs = store.vectors([q.id for q in queries])
    out: dict[str, list[tuple[str, float]]] = {}
    window = cfg.max_days_apart
    # dated queries search their batch's date span plus the undated articles; undated ones (corpus.undated
    # keep/infer) search without a window
    for group in ([q for q in queries if not undated(q.day)], [q for q in queries if undated(q.day)]):
        if not group:
            continue
        span: dict[str, Any] = {}
        if not undated(group[0].day):
            span = {"published_from": min(q.day for q in group) - window,
                    "published_to": max(q.day for q in group) + window, "or_undated": True}
        qv, k = np.stack([vecs[q.id] for q in group]), top_k or max(cfg.top_k, 20)
        if isinstance(store, WindowIndex):  # the same filter in numpy
            stray = len(store) > len(docs)  # rows of a store that are no entry of the index: left out as below
            for q, (ids, scores, *days) in zip(group, store.window_hits(qv, [q.day for q in group], window, floor,
                                                                         k, languages, with_days=with_days, **span)):
                hits = zip(ids, scores, *days)
                kept = [h for h in hits if h[0] in docs] if stray else list(hits)
                if kept:
                    out[q.id] = kept
            continue
        for q, (ids, scores, days, _) in zip(group, store.search_columns(qv, top_k=k, languages=languages, **span)):
            for i, score, day in zip(ids, scores, days):  # best first
                if score < floor:
                    break
                if within_days(day, q.day, window) and i in docs:
                    out.setdefault(q.id, []).append((i, score, day) if with_days else (i, score))
    return out


def open_index(ctx: Any) -> tuple[Any, DocTable]:
    """The index stage's store and entries (``DocTable``: id, language, day by id, as columns); (None, an empty
    table) for an empty corpus. With ``dense.search: exact`` and the index stage's vector file, the "store" is the
    exact search over that file (``WindowIndex``: same ``search`` / ``vectors`` calls). The caller closes it."""
    docs = DocTable.from_columns(ctx.read_columns("index", DocTable.COLUMNS))  # no record per entry
    if not docs:
        return None, docs
    if ctx.config.dense.search == "exact":
        index = file_index(ctx, docs)  # the index stage's own sorted copy of its vectors: Milvus is not opened
        if index is not None:
            return index, docs
    manifest = ctx.store.require("index")
    dim = manifest.extra.get("dim")
    if not dim:
        raise StageError(f"the index stage's manifest ({ctx.store.stage_dir('index')}) has no vector size; "
                         "re-run it: babelrag construct index --force")
    store = store_from_config(ctx, int(dim))
    if store.count() < len(docs):
        held = store.count()
        store.close()
        raise StageError(f"the vector store at {store.uri} ({store.collection}) holds {held} of the index's "
                         f"{len(docs)} articles (removed since?); re-run: babelrag construct index --force")
    return store, docs
