"""The index stage's copy of its vectors, sorted for mining: one raw float32 file next to its records.

Milvus stays the store of record (``dense.search: milvus`` searches it; a server serves other tools). Reading
every vector back out of Milvus Lite (``query_iterator``) cost more than a quarter of the pairs stage on a dense
10k corpus (issue 34), and holds the whole collection in memory twice. The index stage therefore also writes the
vectors it upserts into ``vectors.f32`` in its own stage folder (committed atomically with its records), rows
sorted by (language, day, id): a language's rows are one contiguous range and a date window one slice of it, so
exact mining (``construct/exactsearch.py``) reads a window's rows with one ``pread`` and holds only the windows
it is searching (``RowWindow``), not the corpus.

The order is a function of the index entries (id, language, day), so a reader recomputes it from them and checks
it against the ids' digest the writer recorded (``VectorFileInfo.ids_sha256``): a mismatch (an index built
before this file existed, a file from another corpus) means the file is not used.
"""
from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

VECTOR_FILE = "vectors.f32"
SORT_CHUNK_BYTES = 4 * 2**20  # sorted rows written at a time when sorting the file (1,024 rows at 1024-d)
MIN_WINDOW_ROWS = 4_096  # the least a RowWindow reads ahead
GATHER_GAP = 8  # RowWindow.gather reads through up to this many unwanted rows rather than pread twice


def row_order(ids: Sequence[str], languages: Sequence[str], days: Sequence[int]) -> np.ndarray:
    """Positions of the rows sorted by (language, day, id): the file's order and ``WindowIndex``'s."""
    ids_arr = np.asarray(list(ids), dtype=object).astype(str)
    return np.lexsort((ids_arr, np.asarray(list(days), dtype=np.int64),
                       np.asarray(list(languages), dtype=object).astype(str)))


def ids_digest(ordered_ids: Sequence[str]) -> str:
    h = hashlib.sha256()
    for i in ordered_ids:
        h.update(i.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class VectorFileInfo:
    """What the index stage's manifest says about its vector file (``extra["vector_file"]``)."""

    file: str
    rows: int
    dim: int
    ids_sha256: str

    @classmethod
    def from_extra(cls, extra: dict[str, Any] | None) -> VectorFileInfo | None:
        try:
            return cls(**extra) if extra else None
        except TypeError:
            return None

    def holds(self, path: Path, ordered_ids: Sequence[str]) -> bool:
        """True where the file at ``path`` is this one (its size) and holds exactly ``ordered_ids``, in order."""
        return (self.rows == len(ordered_ids) and path.is_file() and path.stat().st_size == self.rows * self.dim * 4
                and ids_digest(ordered_ids) == self.ids_sha256)


class IdRows:
    """Article id -> row, held as two columns (the ids sorted, their rows): no dict entry per article."""

    def __init__(self, ids: Sequence[str], rows: np.ndarray) -> None:
        ids_arr = np.asarray(list(ids), dtype=object)
        by_id = np.argsort(ids_arr.astype(str), kind="stable")
        self._ids, self._rows = ids_arr[by_id], np.asarray(rows, dtype=np.int64)[by_id]

    def __len__(self) -> int:
        return len(self._ids)

    def sorted_ids(self) -> np.ndarray:
        return self._ids

    def find(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(which of ``wanted`` are known, their rows): a mask over ``wanted`` and the rows of its True entries."""
        if not len(self._ids):
            return np.zeros(len(wanted), dtype=bool), np.zeros(0, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._ids, wanted), len(self._ids) - 1)
        known = self._ids[at] == wanted
        return known, self._rows[at[known]]


class VectorFileWriter:
    """Collects the index stage's vectors block by block (in encoding order, on disk), then sorts them into
    ``folder/name`` (the title vectors of ``construct/titlevectors.py`` are written the same way)."""

    def __init__(self, folder: Path, name: str = VECTOR_FILE) -> None:
        self.folder, self.name = folder, name
        self._tmp = folder / f".{name}.unsorted"
        self._fh = self._tmp.open("wb")
        self.ids: list[str] = []
        self.languages: list[str] = []
        self.days: list[int] = []
        self.dim = 0

    def add(self, ids: Sequence[str], vectors: np.ndarray, languages: Sequence[str], days: Sequence[int]) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.dim = int(vectors.shape[1])
        self._fh.write(vectors.tobytes())
        self.ids.extend(ids)
        self.languages.extend(languages)
        self.days.extend(int(d) for d in days)

    def finish(self) -> VectorFileInfo:
        """Write the file sorted by (language, day, id), ``SORT_CHUNK_BYTES`` of rows at a time, read with
        ``pread`` (``RowWindow.gather``; a memory map would keep every page it touched, the whole unsorted
        file, in the process's memory); drop the unsorted one."""
        self._fh.close()
        n = len(self.ids)
        order = row_order(self.ids, self.languages, self.days)
        chunk = max(1, SORT_CHUNK_BYTES // max(1, self.dim * 4))
        fd = open_vector_file(self._tmp)
        try:
            src = RowWindow(fd, self.dim, 0, n)
            with (self.folder / self.name).open("wb") as out:
                for s in range(0, n, chunk):
                    out.write(memoryview(src.gather(order[s:s + chunk])))
        finally:
            os.close(fd)
        self._tmp.unlink()
        return VectorFileInfo(self.name, n, self.dim, ids_digest(np.asarray(self.ids, dtype=object)[order]))

    def abort(self) -> None:
        self._fh.close()
        self._tmp.unlink(missing_ok=True)


class RowWindow:
    """Rows [start, stop) of a vector file as arrays, read with ``pread`` into windows that slide forward.

    Mining asks for a language's rows of a date span, span after span in date order: a span inside a held
    window is a view; one past them reads [span start, span end + a quarter span) (at least
    ``MIN_WINDOW_ROWS`` ahead), so each row is read about five times per pass (``pread``, from the page cache)
    and memory holds 1.25 spans per window, not the language. Two windows are
    held (the least recently used one is replaced): a dated span and the undated rows at the language's end,
    which a pair window searches too (``or_undated``)."""

    SLOTS = 2

    def __init__(self, fd: int, dim: int, start: int, stop: int) -> None:
        self.fd, self.dim, self.start, self.stop = fd, dim, start, stop
        self._held: list[tuple[int, np.ndarray]] = []  # (first row, rows), most recently used last
        self.rows_read = 0
        # searches run on several threads (construct/ordered_threads.py): one at a time changes the held windows
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.stop - self.start

    def _holding(self, a: int, b: int) -> np.ndarray | None:
        for n, (lo, rows) in enumerate(self._held):
            if lo <= a and b <= lo + len(rows):
                self._held.append(self._held.pop(n))
                return rows[a - lo:b - lo]
        return None

    def slice(self, a: int, b: int) -> np.ndarray:
        """Rows a..b-1 (relative to this range)."""
        with self._lock:
            held = self._holding(a, b)
            if held is not None:
                return held
            if len(self._held) >= self.SLOTS:
                self._held.pop(0)  # dropped before the new window is read: memory holds SLOTS windows at most
            hi = min(len(self), b + max((b - a) // 4, MIN_WINDOW_ROWS))
            self._held.append((a, self._read(a, hi)))
            return self._held[-1][1][:b - a]

    def take(self, positions: np.ndarray) -> np.ndarray:
        """Rows at ``positions`` (relative), from a held window where it has them, else read from the file."""
        positions = np.asarray(positions, dtype=np.int64)
        if not len(positions):
            return np.zeros((0, self.dim), dtype=np.float32)
        lo, hi = int(positions.min()), int(positions.max()) + 1
        with self._lock:
            held = self._holding(lo, hi)
            if held is not None:
                return held[positions - lo]
            if hi - lo <= 4 * len(positions) + MIN_WINDOW_ROWS:
                return self._read(lo, hi)[positions - lo]
            return np.stack([self._read(int(p), int(p) + 1)[0] for p in positions])

    def gather(self, positions: np.ndarray, gap: int = GATHER_GAP) -> np.ndarray:
        """Rows at ``positions`` (relative; any order, repeats allowed), read sorted in runs (rows at most ``gap``
        apart in one ``pread``) and held by nobody: for lookups scattered over a span (the title score's
        candidates), memory is bounded by the rows asked for, not by the span."""
        rows, inverse = np.unique(np.asarray(positions, dtype=np.int64), return_inverse=True)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        starts = np.flatnonzero(np.diff(rows, prepend=-gap - 2) > gap + 1).tolist()
        for s, e in zip(starts, starts[1:] + [len(rows)]):
            lo = int(rows[s])
            out[s:e] = self._read(lo, int(rows[e - 1]) + 1)[rows[s:e] - lo]
        return out[inverse]

    def _read(self, a: int, b: int) -> np.ndarray:
        out = np.empty((b - a, self.dim), dtype=np.float32)
        view = memoryview(out).cast("B")
        offset, done = (self.start + a) * self.dim * 4, 0
        while done < len(view):
            got = os.preadv(self.fd, [view[done:]], offset + done)
            if got <= 0:
                raise OSError(f"vector file ended early: {done} of {len(view)} bytes at offset {offset}")
            done += got
        self.rows_read += b - a
        return out


def open_vector_file(path: Path) -> int:
    return os.open(path, os.O_RDONLY)


__all__ = ["VECTOR_FILE", "VectorFileInfo", "VectorFileWriter", "RowWindow", "row_order", "ids_digest",
           "open_vector_file"]
