"""Exact top-k search over date windows in blocks of queries: how the pairs and distractors stages search.

Milvus stays the store of record (the index stage writes it; Lite or a server). Mining answers the same searches
as ``VectorStore.search`` (a language and a published-day range, optionally ids left out) with one matrix product
per block of queries against the range's candidates: a language's rows are kept sorted by day, so a day range is
one contiguous slice. The rows come from the index stage's own sorted copy of its vectors
(``WindowIndex.from_file``, ``construct/vectorfile.py``: a window of rows at a time, Milvus not opened), or,
for an index without that file, from the store read once into memory (``WindowIndex.from_store``). BLAS through
numpy on CPU; torch where asked (``dense.search_device: cuda``, checked before use).

Memory: the rows of the windows being searched (from the file; all vectors when read from the store) plus one
block x window score matrix; ``block`` queries at a time bound the second. Ties: higher score first, then the
smaller id (Milvus leaves tied hits in no set order), so a search gives the same hits whatever the block.
Milvus Lite scans rows in a Python loop per query batch with a fixed cost per call (issue 34: 8.7-11.8x the
batched numpy search at 100k vectors). ``dense.search: milvus`` keeps the store's own search (a Milvus server
with HNSW answers the same calls, approximately: recall@20 0.97-0.98 at 20k vectors with the stage's
one-language +-14-day filter once the index is built, ``VectorStore.seal``; docs/scaleout.md).
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from babelrag.construct.doctable import DocTable
from babelrag.construct.vectorfile import IdRows, RowWindow, VectorFileInfo, open_vector_file, row_order
from babelrag.construct.vectorstore import Hit
from babelrag.records import UNDATED_DAY
from babelrag.errors import StageError

QUERY_BLOCK = 256  # queries per matrix product: the score matrix is QUERY_BLOCK x window floats
SHORTLIST_FACTOR = 4  # column groups per kept hit in _top_rows' threshold: more groups, a tighter floor


class _ArrayRows:
    """A language's rows held in memory (an index built from arrays or read from Milvus)."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors

    def slice(self, a: int, b: int) -> np.ndarray:
        return self.vectors[a:b]

    def take(self, positions: np.ndarray) -> np.ndarray:
        return self.vectors[positions]


@dataclass
class _Language:
    """One language's rows sorted by (day, id): ids, days, a global id rank (the tie-break), and the vectors
    (``_ArrayRows`` in memory, or a ``RowWindow`` over the index stage's vector file)."""

    ids: np.ndarray  # object array of str
    days: np.ndarray  # int64
    rank: np.ndarray  # int64: position of the id in the sorted ids of the whole index
    rows: Any  # _ArrayRows | RowWindow

    def span(self, lo: int | None, hi: int | None) -> tuple[int, int]:
        start = 0 if lo is None else int(np.searchsorted(self.days, lo, side="left"))
        stop = len(self.days) if hi is None else int(np.searchsorted(self.days, hi, side="right"))
        return start, max(start, stop)


class WindowIndex:
    """Every vector of a store, by language and day, searched exactly (same calls as ``VectorStore``)."""

    def __init__(self, ids: Sequence[str], languages: Sequence[str], days: Sequence[int],
                 vectors: np.ndarray | None, device: str = "cpu", block: int = QUERY_BLOCK,
                 file: tuple[int, int] | None = None) -> None:
        """``vectors`` in the order of ``ids``; or None and ``file`` (an open descriptor of a vector file whose
        rows are in ``row_order``, and its dim): then rows are read a window at a time (``RowWindow``)."""
        ids_arr = np.asarray(list(ids), dtype=object)
        by_id = np.argsort(ids_arr.astype(str), kind="stable")
        rank = np.empty(len(ids_arr), dtype=np.int64)
        rank[by_id] = np.arange(len(ids_arr))
        langs = np.asarray(list(languages), dtype=object)
        days_arr = np.asarray(list(days), dtype=np.int64)
        order = row_order(ids_arr, langs, days_arr)  # by language, day, then id
        if file is None:
            vectors = np.ascontiguousarray(vectors, dtype=np.float32)
            self.dim = int(vectors.shape[1]) if vectors.ndim == 2 else 0
        else:
            self.dim = file[1]
        self.block = block
        self._fd = file[0] if file is not None else None
        self._by_language: dict[str, _Language] = {}
        file_row = np.empty(len(order), dtype=np.int64)
        file_row[order] = np.arange(len(order))
        self._file_rows = IdRows(ids_arr, file_row)  # id -> file row, no dict entry per article
        self._starts: list[int] = []
        self._names: list[str] = []
        sorted_langs = langs[order]
        start = 0
        for lang in sorted(set(langs.tolist())):
            stop = start + int(np.count_nonzero(sorted_langs == lang))
            rows = order[start:stop]
            source = (_ArrayRows(vectors[rows]) if file is None else RowWindow(file[0], self.dim, start, stop))
            self._by_language[lang] = _Language(ids_arr[rows], days_arr[rows], rank[rows], source)
            self._starts.append(start)
            self._names.append(lang)
            start = stop
        self._matmul = _device_matmul(device)
        self.read_seconds = 0.0
        self._table: tuple[DocTable, dict[str, np.ndarray]] | None = None  # (table, its rows per language)

    @classmethod
    def from_store(cls, store: Any, device: str = "cpu", block: int = QUERY_BLOCK) -> WindowIndex:
        """Read every row of ``store`` (a ``VectorStore``) once, into memory."""
        ids: list[str] = []
        langs: list[str] = []
        days: list[int] = []
        chunks: list[np.ndarray] = []
        for rows in store.iter_rows(["id", "language", "published", "vector"]):
            ids.extend(r["id"] for r in rows)
            langs.extend(r["language"] for r in rows)
            days.extend(int(r["published"]) for r in rows)
            chunks.append(np.asarray([r["vector"] for r in rows], dtype=np.float32))
        vectors = np.concatenate(chunks) if chunks else np.zeros((0, store.dim), dtype=np.float32)
        chunks.clear()  # peak while sorting into languages: twice the vectors, not three times
        return cls(ids, langs, days, vectors, device=device, block=block)

    @classmethod
    def from_file(cls, path: Path, info: VectorFileInfo, ids: Sequence[str], languages: Sequence[str],
                  days: Sequence[int], device: str = "cpu", block: int = QUERY_BLOCK) -> WindowIndex | None:
        """The index stage's vector file for these index entries, read a window at a time; None where the file
        is missing or holds other rows (its ids' digest differs), so the caller reads the store instead."""
        order = row_order(ids, languages, days)
        if not info.holds(path, np.asarray(list(ids), dtype=object)[order]):
            return None
        fd = open_vector_file(path)
        try:
            return cls(ids, languages, days, None, device=device, block=block, file=(fd, info.dim))
        except BaseException:
            os.close(fd)
            raise

    def close(self) -> None:
        """Close the vector file (an index held in memory has nothing to close)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __len__(self) -> int:
        return len(self._file_rows)

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        found, rows = self.vector_rows(ids)
        return {i: rows[n] for n, i in enumerate(found)}

    def vector_rows(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The ids of ``ids`` this index holds, in that order, and their vectors as one array (row n: the n-th)."""
        wanted = np.asarray(list(ids), dtype=object)
        known, rows = self._file_rows.find(wanted) if len(wanted) else (np.zeros(0, dtype=bool), None)
        found = wanted[known].tolist()
        if not found:
            return [], np.zeros((0, self.dim), dtype=np.float32)
        which = np.searchsorted(np.asarray(self._starts), rows, side="right") - 1
        out_rows = np.empty((len(rows), self.dim), dtype=np.float32)
        for x in np.unique(which).tolist():
            sel = np.flatnonzero(which == x)
            out_rows[sel] = self._by_language[self._names[x]].rows.take(rows[sel] - self._starts[x])
        return found, out_rows

    def search(self, queries: np.ndarray, top_k: int = 10, languages: Sequence[str] | None = None,
               published_from: int | None = None, published_to: int | None = None,
               exclude_ids: Sequence[str] | None = None, or_undated: bool = False) -> list[list[Hit]]:
        """Each query's ``top_k`` best rows of ``languages`` published in [published_from, published_to]
        (``or_undated``: undated rows too, as ``build_filter`` says), ``exclude_ids`` left out: best first, ties
        by id."""
        return [[Hit(id=i, score=v, language=x, published=d) for i, v, d, x in zip(*row)]
                for row in self.search_columns(queries, top_k, languages, published_from, published_to,
                                               exclude_ids, with_languages=True, or_undated=or_undated)]

    def search_columns(self, queries: np.ndarray, top_k: int = 10, languages: Sequence[str] | None = None,
                       published_from: int | None = None, published_to: int | None = None,
                       exclude_ids: Sequence[str] | None = None,
                       with_languages: bool = False, or_undated: bool = False) -> list[tuple[list, ...]]:
        """``search`` as columns per query: (ids, scores, days, languages) lists, no object per hit (mining
        reads millions of hits); the languages list stays empty unless ``with_languages``. Undated rows
        (``UNDATED_DAY``) sort last in each language: ``or_undated`` adds that tail to a date range."""
        out: list[tuple[list, ...]] = []
        for found in self._blocks(queries, top_k, languages, published_from, published_to, exclude_ids,
                                  or_undated):
            if found.cols is None:
                out.extend(([], [], [], []) for _ in range(found.queries))
                continue
            cols = found.cols
            langs_of = ([[found.names[x] for x in row] for row in found.lang_of[cols].tolist()] if with_languages
                        else [[]] * len(cols))
            out.extend(zip(found.ids[cols].tolist(), found.scores.tolist(), found.days[cols].tolist(), langs_of))
        return out

    def window_rows(self, queries: np.ndarray, query_days: Sequence[int], window: int, floor: float,
                    top_k: int, docs: DocTable, languages: Sequence[str] | None = None,
                    published_from: int | None = None, published_to: int | None = None,
                    or_undated: bool = False) -> RowHits:
        """Mining's filter on ``search_columns`` done in numpy, as arrays (``RowHits``): per query its hits best
        first, up to the first below ``floor``, and only hits ``within_days(hit day, query day, window)`` (an
        undated hit or query pairs without a window), each hit as its row in ``docs`` (a row of this index that is
        no entry of ``docs`` is left out after the floor, as the per-hit loop's ``in docs`` did). Same hits as that
        loop over the columns, without Python per hit."""
        qdays = np.asarray(query_days, dtype=np.int64)
        parts: list[RowHits] = []
        s = 0
        for found in self._blocks(queries, top_k, languages, published_from, published_to, None, or_undated,
                                  self._table_rows(docs)):
            if found.cols is not None:
                trows, days = found.table_rows[found.cols], found.days[found.cols]
                keep = window_keep(found.scores, days, qdays[s:s + found.queries], floor, window) & (trows >= 0)
                parts.append(RowHits(np.nonzero(keep)[0] + s, trows[keep], found.scores[keep].astype(np.float64),
                                     days[keep]))
            s += found.queries
        return RowHits.concat(parts)

    def _table_rows(self, docs: DocTable) -> dict[str, np.ndarray]:
        """Each language's rows as rows of ``docs`` (-1: no entry of it), computed once per table. An index read
        from ``docs``' own columns (``file_index``) ranks its ids as the table's rows: no lookup then."""
        if self._table is not None and self._table[0] is docs:
            return self._table[1]
        table_ids = np.asarray(docs.ids, dtype=object)
        same = len(table_ids) == len(self._file_rows) and bool(np.all(self._file_rows.sorted_ids() == table_ids))
        out: dict[str, np.ndarray] = {}
        for name, p in self._by_language.items():
            if same or not len(p.ids):
                out[name] = p.rank
            elif not len(table_ids):
                out[name] = np.full(len(p.ids), -1, dtype=np.int64)
            else:
                at = np.minimum(np.searchsorted(table_ids, p.ids), len(table_ids) - 1)
                out[name] = np.where(table_ids[at] == p.ids, at, -1).astype(np.int64)
        self._table = (docs, out)
        return out

    def _blocks(self, queries: np.ndarray, top_k: int, languages: Sequence[str] | None,
                published_from: int | None, published_to: int | None, exclude_ids: Sequence[str] | None,
                or_undated: bool, table: dict[str, np.ndarray] | None = None) -> Iterator[_Found]:
        """The top-k of each block of queries against the candidates of ``languages`` and the day range;
        ``table``: each language's rows as rows of a ``DocTable`` (``_table_rows``), given back per candidate."""
        q = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        wanted = [x for x in (languages or sorted(self._by_language)) if x in self._by_language]
        cands = []
        for x in wanted:
            p = self._by_language[x]
            a, b = p.span(published_from, published_to)
            cands.append((x, p, a, b))
            dated_range = published_from is not None or published_to is not None
            if or_undated and dated_range:
                u = int(np.searchsorted(p.days, UNDATED_DAY, side="left"))
                cands.append((x, p, max(u, b), len(p.days)))  # the undated tail, not already in [a, b)
        cands = [c for c in cands if c[3] > c[2]]
        if not cands:
            if len(q):
                yield _Found(len(q))
            return
        if len(cands) == 1:
            _, p, a, b = cands[0]
            ids, days, rank, vecs = p.ids[a:b], p.days[a:b], p.rank[a:b], p.rows.slice(a, b)  # views
            trows = table[cands[0][0]][a:b] if table is not None else None
        else:
            ids = np.concatenate([p.ids[a:b] for _, p, a, b in cands])
            days = np.concatenate([p.days[a:b] for _, p, a, b in cands])
            rank = np.concatenate([p.rank[a:b] for _, p, a, b in cands])
            vecs = np.concatenate([p.rows.slice(a, b) for _, p, a, b in cands])
            trows = np.concatenate([table[x][a:b] for x, _, a, b in cands]) if table is not None else None
        names = [x for x, _, _, _ in cands]
        lang_of = np.concatenate([np.full(b - a, i) for i, (_, _, a, b) in enumerate(cands)])
        dropped = np.zeros(len(ids), dtype=bool)
        if exclude_ids:
            dropped |= np.isin(ids, np.asarray(list(exclude_ids), dtype=object))
        k = min(top_k, int(len(ids) - dropped.sum()))
        for s in range(0, len(q), self.block):
            if k <= 0:
                yield _Found(min(self.block, len(q) - s))
                continue
            cols, scores = _top_rows(self._matmul(q[s:s + self.block], vecs), k, rank, dropped)
            yield _Found(len(cols), ids, days, lang_of, names, cols, scores, trows)


@dataclass
class _Found:
    """One block's top-k: ``cols`` (queries x k positions into ``ids``/``days``/``lang_of``) and their scores;
    ``cols`` None for a block with no candidates."""

    queries: int
    ids: Any = None
    days: Any = None
    lang_of: Any = None
    names: list[str] | None = None
    cols: Any = None
    scores: Any = None
    table_rows: Any = None  # per candidate, its ``DocTable`` row (``window_rows``)


@dataclass
class RowHits:
    """A search's hits as arrays, no object per hit: ``query`` (the query's position in the call), ``row`` (the
    hit's row in the ``DocTable``), ``score`` (float64: the float32 cosine as Python reads it) and ``day``; by
    query, each query's hits best first."""

    query: np.ndarray
    row: np.ndarray
    score: np.ndarray
    day: np.ndarray

    def __len__(self) -> int:
        return len(self.query)

    @classmethod
    def concat(cls, parts: Sequence[RowHits]) -> RowHits:
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64),
                       np.zeros(0, dtype=np.int64))
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("query", "row", "score", "day")))

    def take(self, which: np.ndarray) -> RowHits:
        return RowHits(self.query[which], self.row[which], self.score[which], self.day[which])

    def starts(self, queries: int) -> np.ndarray:
        """Where each query's hits start (``queries + 1`` offsets: query q's are ``[starts[q], starts[q + 1])``)."""
        return np.searchsorted(self.query, np.arange(queries + 1), side="left")


def window_keep(scores: np.ndarray, days: np.ndarray, query_days: np.ndarray, floor: float,
                window: int) -> np.ndarray:
    """Which of a (queries x hits) block of best-first hits mining keeps: those before the first below ``floor``
    and within ``window`` days of the query (an undated hit or query: any day). Compared as float64, as Python
    compares the float32 scores it is given with the floor."""
    keep = np.logical_and.accumulate(np.asarray(scores, dtype=np.float64) >= floor, axis=1)
    qd = np.asarray(query_days, dtype=np.int64)[:, None]
    keep &= (days >= UNDATED_DAY) | (qd >= UNDATED_DAY) | (np.abs(days - qd) <= window)
    return keep


def file_index(ctx: Any, docs: DocTable) -> WindowIndex | None:
    """The exact search over the index stage's vector file (``construct/vectorfile.py``) for its entries
    ``docs`` (their columns: the search's ids are the table's own strings); None where the index has no such file
    or it holds other rows (an index built before it existed): the caller opens the store and ``searcher`` reads
    the vectors from it."""
    import time

    manifest = ctx.store.require("index")
    info = VectorFileInfo.from_extra(manifest.extra.get("vector_file"))
    if info is None:
        return None
    start = time.perf_counter()
    index = WindowIndex.from_file(ctx.store.stage_dir("index") / info.file, info, docs.ids, docs.language_column(),
                                  docs.days, device=ctx.config.dense.search_device)
    if index is not None:
        index.read_seconds = round(time.perf_counter() - start, 2)
    return index


def searcher(ctx: Any, store: Any) -> Any:
    """What a stage searches: the store itself (``dense.search: milvus``) or its vectors read once into a
    ``WindowIndex`` (``exact``, the default; already one where ``dense.open_index`` found the index stage's
    vector file). Both answer ``search`` and ``vectors`` alike."""
    import time

    dense = ctx.config.dense
    if isinstance(store, WindowIndex):
        ctx.extra["search"] = {"kind": "exact", "device": dense.search_device, "vectors": len(store),
                               "source": "index vector file", "read_seconds": store.read_seconds}
        return store
    if dense.search == "milvus":
        ctx.extra["search"] = {"kind": "milvus", "store": store.uri, "index_type": store.index_type}
        return store
    start = time.perf_counter()
    index = WindowIndex.from_store(store, device=dense.search_device)
    ctx.extra["search"] = {"kind": "exact", "device": dense.search_device, "vectors": len(index),
                           "source": "vector store", "read_seconds": round(time.perf_counter() - start, 2)}
    return index


def _top_rows(scores: np.ndarray, k: int, rank: np.ndarray,
              dropped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a block's score matrix: the k best columns and their scores, higher score first, then lower
    ``rank``. A threshold per row bounds the work: the k-th largest of the maxima of ``SHORTLIST_FACTOR * k``
    disjoint column groups (at least k scores reach it, so every one of the k best and every score tied with the
    k-th does), then one sort of the few columns at or above it. Same columns as sorting the whole row; far less
    work than a full ``argpartition`` of it (the profile's largest cost after the matrix product)."""
    if dropped.any():
        scores[:, dropped] = -np.inf
    m, n = scores.shape
    if m == 0:
        return np.zeros((0, k), dtype=np.intp), np.zeros((0, k), dtype=scores.dtype)
    group = max(1, n // (SHORTLIST_FACTOR * k))
    groups = n // group  # >= k: group is 1 where n < SHORTLIST_FACTOR * k
    # strided groups (columns j, j + groups, ...): the maximum runs over contiguous rows of the matrix
    maxima = scores[:, :groups * group].reshape(m, group, groups).max(axis=1)
    floor = np.partition(maxima, groups - k, axis=1)[:, groups - k]
    # the positions at or above each row's floor: flat indices split into (row, column), ~10x cheaper than a 2-D
    # ``np.nonzero`` (which was two thirds of this function's time on a 64 x 8,300 block)
    flat = np.flatnonzero(scores >= floor[:, None])
    rows = flat // n
    cols = flat - rows * n
    counts = np.bincount(rows, minlength=m)
    if counts.min(initial=k) < k:  # NaN scores: no floor holds; the whole-row sort
        return _top_rows_partition(scores, k, rank)
    starts = np.cumsum(counts) - counts
    pos = np.arange(len(rows)) - starts[rows]
    # a row whose floor many scores tie at (duplicate vectors) is sorted on its own below, so the padded
    # shortlist stays block x a few k, not block x window
    width = min(int(counts.max()), SHORTLIST_FACTOR * k)
    fits = pos < width
    rows, cols, pos = rows[fits], cols[fits], pos[fits]
    vals = np.full((m, width), -np.inf, dtype=scores.dtype)
    short = np.zeros((m, width), dtype=np.intp)
    ranks = np.full((m, width), np.iinfo(np.int64).max, dtype=np.int64)  # padding sorts after every column
    vals[rows, pos], short[rows, pos], ranks[rows, pos] = scores[rows, cols], cols, rank[cols]
    order = np.lexsort((ranks, -vals), axis=1)[:, :k]
    top, top_vals = np.take_along_axis(short, order, axis=1), np.take_along_axis(vals, order, axis=1)
    for r in np.flatnonzero(counts > width).tolist():
        every = np.flatnonzero(scores[r] >= floor[r])
        best = every[np.lexsort((rank[every], -scores[r, every]))[:k]]
        top[r], top_vals[r] = best, scores[r, best]
    return top, top_vals


def _top_rows_partition(scores: np.ndarray, k: int, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``_top_rows`` by a whole-row ``argpartition`` (scores that no threshold bounds: NaN), with a per-row pass
    only where a tie at the k-th score reaches past the k kept."""
    n = scores.shape[1]
    if k < n:
        part = np.argpartition(scores, n - k, axis=1)[:, n - k:]
    else:
        part = np.broadcast_to(np.arange(n), scores.shape).copy()
    vals = np.take_along_axis(scores, part, axis=1)
    order = np.lexsort((rank[part], -vals), axis=1)
    cols, vals = np.take_along_axis(part, order, axis=1), np.take_along_axis(vals, order, axis=1)
    if k < n:
        tied = np.count_nonzero(scores >= vals[:, -1:], axis=1) > k  # argpartition chose among equal scores
        for r in np.flatnonzero(tied):
            row = scores[r]
            every = np.flatnonzero(row >= vals[r, -1])
            best = np.lexsort((rank[every], -row[every]))[:k]
            cols[r], vals[r] = every[best], row[every[best]]
    return cols, vals


def _device_matmul(device: str) -> Any:
    """queries (m, d) x candidates (n, d) -> scores (m, n) float32 on the host: numpy BLAS on ``cpu``, torch on
    ``cuda`` / ``cuda:N`` (a clear error where torch or the GPU is missing)."""
    if device == "cpu":
        return lambda q, c: q @ c.T
    try:
        import torch
    except ImportError:
        raise StageError(f"dense.search_device {device!r} needs torch, which is not installed "
                         f"(set dense.search_device: cpu)") from None
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise StageError(f"dense.search_device {device!r}: torch sees no CUDA device (set dense.search_device: cpu)")
    return _torch_matmul(device)


def _torch_matmul(device: str) -> Any:
    """The product on a torch device; a window's candidates stay there while consecutive blocks search them."""
    import torch

    held: list[Any] = [None, None]  # (key of the candidates on the device, their tensor)

    def matmul(q: np.ndarray, c: np.ndarray) -> np.ndarray:
        key = (c.__array_interface__["data"][0], c.shape)
        if held[0] != key:
            held[:] = [key, torch.from_numpy(np.ascontiguousarray(c)).to(device)]
        tq = torch.from_numpy(np.ascontiguousarray(q)).to(device)
        return (tq @ held[1].T).cpu().numpy()

    return matmul


__all__ = ["WindowIndex", "QUERY_BLOCK", "RowHits", "searcher", "file_index", "window_keep"]
