"""The dense index shared by the stages that embed articles: the index stage's body (``index_corpus``), the
encoder every dense stage builds (``encoder_for``), the store and entries a later stage opens (``open_index``)
and the date-window search over them (``window_rows``: arrays of table rows; ``hits_in_window``: lists).

The index stage (``construct/index.py``) runs ``index_corpus``; pairs (``construct/crosslingual.py``,
``construct/samelang.py``) and distractors read the result with ``open_index``. Nothing here knows about
pairs: the stages depend on this module, never the other way round.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from babelrag.construct.encoders import CachedEncoder, VectorCache, build_encoder
from babelrag.construct.encoders import block_size as encoder_block_size
from babelrag.construct.encoders.mapped import cluster_encode_map
from babelrag.construct.doctable import Doc, DocTable
from babelrag.construct.exactsearch import RowHits, WindowIndex, file_index, window_keep
from babelrag.construct.vectorfile import VectorFileWriter
from babelrag.construct.vectorstore import store_from_config
from babelrag.errors import StageError
from babelrag.executor import available_cores, chunks
from babelrag.records import UNDATED_DAY, Article
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
    the day: no lookup per hit); ``top_k`` hits searched (default max(cfg.top_k, 20)). ``window_rows`` as lists,
    for the callers that want a list per query (the pair margin's densities, tests)."""
    if not queries:
        return {}
    table = docs if isinstance(docs, DocTable) else DocTable(docs.values())
    days = np.asarray([q.day for q in queries], dtype=np.int64)
    found = window_rows(store, [q.id for q in queries], days, languages, table, cfg, top_k, min_score)
    ids = [table.ids[r] for r in found.row.tolist()]
    hits = list(zip(ids, found.score.tolist(), found.day.tolist()) if with_days else zip(ids, found.score.tolist()))
    starts = found.starts(len(queries)).tolist()
    out: dict[str, list[tuple]] = {}
    for n in np.argsort(days >= UNDATED_DAY, kind="stable").tolist():  # dated queries first, as searched
        if starts[n + 1] > starts[n]:
            out[queries[n].id] = hits[starts[n]:starts[n + 1]]
    return out


def search_threads(ctx: StageContext, store: Any) -> int:
    """Threads that search batches side by side (``construct/ordered_threads.py``): ``executor.processes`` (None
    or 0: every core), at most this machine's cores (a Ray run may ask for a cluster's worth of processes, and
    each searching thread can hold a window of vectors), for the exact search on the CPU; one for a Milvus store
    or a GPU (the device is one)."""
    if not isinstance(store, WindowIndex) or ctx.config.dense.search_device != "cpu":
        return 1
    cores = available_cores()
    return min(ctx.config.executor.processes or cores, cores)


def window_rows(store: Any, ids: Sequence[str], days: np.ndarray, languages: list[str], docs: DocTable, cfg: Any,
                top_k: int | None = None, min_score: float | None = None) -> RowHits:
    """The hits of the query articles ``ids`` (published on ``days``) in ``languages`` within max_days_apart and
    above ``min_score`` (default ``cfg.min_score``) as arrays of ``docs`` rows (``RowHits``: by query, best first;
    hits that are no entry of ``docs`` left out); ``top_k`` hits searched (default max(cfg.top_k, 20)). Dated
    queries search their batch's date span plus the undated articles; undated ones (corpus.undated keep/infer)
    search without a window. The exact search filters in numpy; a Milvus store's lists are turned into the same
    arrays once per call."""
    days = np.asarray(days, dtype=np.int64)
    if not len(ids):
        return RowHits.concat([])
    floor = cfg.min_score if min_score is None else min_score
    window, k = cfg.max_days_apart, top_k or max(cfg.top_k, 20)
    vecs = _query_vectors(store, ids)
    is_undated = days >= UNDATED_DAY
    parts = []
    for group in (np.flatnonzero(~is_undated), np.flatnonzero(is_undated)):
        if not len(group):
            continue
        span: dict[str, Any] = {}
        if not is_undated[group[0]]:
            span = {"published_from": int(days[group].min()) - window,
                    "published_to": int(days[group].max()) + window, "or_undated": True}
        if isinstance(store, WindowIndex):
            found = store.window_rows(vecs[group], days[group], window, floor, k, docs, languages, **span)
        else:
            found = _listed_rows(store.search_columns(vecs[group], top_k=k, languages=languages, **span),
                                 days[group], floor, window, docs)
        parts.append(RowHits(group[found.query], found.row, found.score, found.day))
    hits = RowHits.concat(parts)
    return hits.take(np.argsort(hits.query, kind="stable")) if len(parts) > 1 else hits


def _query_vectors(store: Any, ids: Sequence[str]) -> np.ndarray:
    """The query articles' vectors, in order (a KeyError names one the store lacks)."""
    if isinstance(store, WindowIndex):
        found, vecs = store.vector_rows(ids)
        if len(found) < len(ids):
            raise KeyError(next(i for i in ids if i not in set(found)))
        return vecs
    held = store.vectors(list(ids))
    return np.stack([held[i] for i in ids])


def _listed_rows(lists: list[tuple[list, ...]], query_days: np.ndarray, floor: float, window: int,
                 docs: DocTable) -> RowHits:
    """A store's per-query (ids, scores, days, ...) lists as the exact search's ``RowHits``, the same filter."""
    sizes = np.asarray([len(c[0]) for c in lists], dtype=np.int64)
    width = int(sizes.max(initial=0))
    query = np.repeat(np.arange(len(lists)), sizes)
    at = (query, np.arange(len(query)) - (np.cumsum(sizes) - sizes)[query])
    scores = np.full((len(lists), width), np.nan)
    days = np.zeros((len(lists), width), dtype=np.int64)
    rows = np.full((len(lists), width), -1, dtype=np.int64)
    scores[at] = [x for c in lists for x in c[1]]
    days[at] = [x for c in lists for x in c[2]]
    rows[at] = [docs.row(i) for c in lists for i in c[0]]
    listed = np.zeros(scores.shape, dtype=bool)
    listed[at] = True
    keep = window_keep(scores, days, query_days, floor, window) & listed & (rows >= 0)
    return RowHits(np.nonzero(keep)[0], rows[keep], scores[keep], days[keep])


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
