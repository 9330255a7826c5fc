"""Exact top-k search over date windows in blocks of queries: how the pairs and distractors stages search.

Milvus stays the store of record (the index stage writes it; Lite or a server). Mining reads every vector
from it once (``WindowIndex.from_store``) and answers the same searches as ``VectorStore.search`` (a language
and a published-day range, optionally ids left out) with one matrix product per block of queries against the
range's candidates: a language's rows are kept sorted by day, so a day range is one contiguous slice and no
copy. BLAS through numpy on CPU; torch where asked (``dense.search_device: cuda``, checked before use).

Memory: the vectors (articles x dim float32, what Milvus Lite holds too) plus one block x window score matrix;
``block`` queries at a time bound the second. Ties: higher score first, then the smaller id (Milvus leaves
tied hits in no set order), so a search gives the same hits whatever the block.
Milvus Lite scans rows in a Python loop per query batch with a fixed cost per call (issue 34: 8.7-11.8x the
batched numpy search at 100k vectors). ``dense.search: milvus`` keeps the store's own search (a Milvus server
with HNSW answers the same calls, approximately: with a one-language +-14-day filter its recall@20 was 0.30-0.88
at 20k vectors from run to run; ``bench/bench_pairs_scale.py --hnsw``, docs/scaleout.md).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from babelrag.construct.vectorstore import Hit
from babelrag.records import UNDATED_DAY
from babelrag.errors import StageError

QUERY_BLOCK = 256  # queries per matrix product: the score matrix is QUERY_BLOCK x window floats


@dataclass
class _Language:
    """One language's rows sorted by (day, id): ids, days, a global id rank (the tie-break), vectors."""

    ids: np.ndarray  # object array of str
    days: np.ndarray  # int64
    rank: np.ndarray  # int64: position of the id in the sorted ids of the whole index
    vectors: np.ndarray  # float32 (n, dim)

    def span(self, lo: int | None, hi: int | None) -> tuple[int, int]:
        start = 0 if lo is None else int(np.searchsorted(self.days, lo, side="left"))
        stop = len(self.days) if hi is None else int(np.searchsorted(self.days, hi, side="right"))
        return start, max(start, stop)


class WindowIndex:
    """Every vector of a store, by language and day, searched exactly (same calls as ``VectorStore``)."""

    def __init__(self, ids: Sequence[str], languages: Sequence[str], days: Sequence[int], vectors: np.ndarray,
                 device: str = "cpu", block: int = QUERY_BLOCK) -> None:
        ids_arr = np.asarray(list(ids), dtype=object)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        rank = np.empty(len(ids_arr), dtype=np.int64)
        rank[np.argsort(ids_arr.astype(str), kind="stable")] = np.arange(len(ids_arr))
        langs = np.asarray(list(languages), dtype=object)
        days_arr = np.asarray(list(days), dtype=np.int64)
        self.dim = int(vectors.shape[1]) if vectors.ndim == 2 else 0
        self.block = block
        self._by_language: dict[str, _Language] = {}
        self._where: dict[str, tuple[str, int]] = {}
        for lang in sorted(set(langs.tolist())):
            rows = np.flatnonzero(langs == lang)
            order = rows[np.lexsort((rank[rows], days_arr[rows]))]  # by day, then id
            part = _Language(ids_arr[order], days_arr[order], rank[order], vectors[order])
            self._by_language[lang] = part
            self._where.update((i, (lang, p)) for p, i in enumerate(part.ids.tolist()))
        self._matmul = _device_matmul(device)

    @classmethod
    def from_store(cls, store: Any, device: str = "cpu", block: int = QUERY_BLOCK) -> WindowIndex:
        """Read every row of ``store`` (a ``VectorStore``) once."""
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

    def __len__(self) -> int:
        return len(self._where)

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        out = {}
        for i in ids:
            where = self._where.get(i)
            if where is not None:
                out[i] = self._by_language[where[0]].vectors[where[1]]
        return out

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
            return [([], [], [], []) for _ in range(len(q))]
        if len(cands) == 1:
            _, p, a, b = cands[0]
            ids, days, rank, vecs = p.ids[a:b], p.days[a:b], p.rank[a:b], p.vectors[a:b]  # views
        else:
            ids = np.concatenate([p.ids[a:b] for _, p, a, b in cands])
            days = np.concatenate([p.days[a:b] for _, p, a, b in cands])
            rank = np.concatenate([p.rank[a:b] for _, p, a, b in cands])
            vecs = np.concatenate([p.vectors[a:b] for _, p, a, b in cands])
        names = [x for x, _, _, _ in cands]
        lang_of = np.concatenate([np.full(b - a, i) for i, (_, _, a, b) in enumerate(cands)])
        dropped = np.zeros(len(ids), dtype=bool)
        if exclude_ids:
            dropped |= np.isin(ids, np.asarray(list(exclude_ids), dtype=object))
        k = min(top_k, int(len(ids) - dropped.sum()))
        out: list[tuple[list, ...]] = []
        for s in range(0, len(q), self.block):
            if k <= 0:
                out.extend(([], [], [], []) for _ in range(min(self.block, len(q) - s)))
                continue
            cols, scores = _top_rows(self._matmul(q[s:s + self.block], vecs), k, rank, dropped)
            langs_of = ([[names[x] for x in row] for row in lang_of[cols].tolist()] if with_languages
                        else [[]] * len(cols))
            out.extend(zip(ids[cols].tolist(), scores.tolist(), days[cols].tolist(), langs_of))
        return out


def searcher(ctx: Any, store: Any) -> Any:
    """What a stage searches: the store itself (``dense.search: milvus``) or its vectors read once into a
    ``WindowIndex`` (``exact``, the default). Both answer ``search`` and ``vectors`` alike."""
    import time

    dense = ctx.config.dense
    if dense.search == "milvus":
        ctx.extra["search"] = {"kind": "milvus", "store": store.uri, "index_type": store.index_type}
        return store
    start = time.perf_counter()
    index = WindowIndex.from_store(store, device=dense.search_device)
    ctx.extra["search"] = {"kind": "exact", "device": dense.search_device, "vectors": len(index),
                           "read_seconds": round(time.perf_counter() - start, 2)}
    return index


def _top_rows(scores: np.ndarray, k: int, rank: np.ndarray,
              dropped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a block's score matrix: the k best columns and their scores, higher score first, then lower
    ``rank``; vectorised, with a per-row pass only where a tie at the k-th score reaches past the k kept."""
    if dropped.any():
        scores[:, dropped] = -np.inf
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


__all__ = ["WindowIndex", "QUERY_BLOCK", "searcher"]
