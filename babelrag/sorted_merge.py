"""External k-way merge of id-sorted parquet files in bounded memory (the stage commit's sort).

At most ``MERGE_FAN_IN`` files are open at once; more files take more passes through ``work_dir``. The
output depends only on the rows, not on how they were cut into files.
"""
from __future__ import annotations

import heapq
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from babelrag import parquet_io
from babelrag.parquet_io import write_tables

#: shard/run files merged at once by the commit (memory ~ MERGE_FAN_IN row groups)
MERGE_FAN_IN = 16


class _Run:
    """One sorted parquet file read one row group at a time."""

    def __init__(self, path: Path, key: str) -> None:
        import pyarrow.parquet as pq

        self.file = pq.ParquetFile(path, pre_buffer=False)
        self.key = key
        # one thread: the merge reads files one row group at a time anyway, and parallel column
        # decoding keeps several row groups' buffers alive per file
        self._batches = self.file.iter_batches(batch_size=parquet_io.ROW_GROUP, use_threads=False)
        self.batch: Any = None
        self.keys: list[str] = []

    def next_batch(self) -> bool:
        for batch in self._batches:
            if batch.num_rows:
                self.batch = batch
                self.keys = batch.column(self.key).to_pylist()
                return True
        self.batch, self.keys = None, []
        self.file.close()
        return False


def _merged_tables(paths: list[Path], key: str, schema: Any, exclude: Iterator[str] | None = None,
                   counter: list[int] | None = None) -> Iterator[Any]:
    """Rows of sorted files ``paths`` in ``key`` order as Arrow tables of up to parquet_io.ROW_GROUP rows.

    Equal keys: the row from the later file (and the later row within a file) wins. Keys also present
    in the sorted iterator ``exclude`` are dropped. Only one row group per file is held at a time.
    """
    import pyarrow as pa

    runs = [_Run(p, key) for p in paths]
    heap: list[tuple[str, int, int]] = []
    for i, run in enumerate(runs):
        if run.next_batch():
            heap.append((run.keys[0], i, 0))
    heapq.heapify(heap)
    pending: list[tuple[Any, int]] = []  # (batch, row) in output order
    pending_keys: list[str] = []
    next_excluded: str | None = None
    if exclude is not None:
        next_excluded = next(exclude, None)

    def build(entries: list[tuple[Any, int]]) -> Any:
        # gather rows batch by batch (Arrow take), then restore the output order
        by_batch: dict[int, tuple[Any, list[int], list[int]]] = {}
        for pos, (batch, row) in enumerate(entries):
            slot = by_batch.setdefault(id(batch), (batch, [], []))
            slot[1].append(row)
            slot[2].append(pos)
        parts, order = [], []
        for batch, rows, positions in by_batch.values():
            parts.append(pa.Table.from_batches([batch.take(pa.array(rows, type=pa.int64()))]))
            order.extend(positions)
        table = pa.concat_tables(parts).cast(schema) if len(parts) > 1 else parts[0].cast(schema)
        inverse = [0] * len(order)
        for i, pos in enumerate(order):
            inverse[pos] = i
        return table.take(pa.array(inverse, type=pa.int64()))

    while heap:
        k, i, row = heapq.heappop(heap)
        run = runs[i]
        batch = run.batch
        if pending_keys and pending_keys[-1] == k:
            pending[-1] = (batch, row)  # a later duplicate replaces the earlier one
        else:
            pending.append((batch, row))
            pending_keys.append(k)
        if row + 1 < len(run.keys):
            heapq.heappush(heap, (run.keys[row + 1], i, row + 1))
        elif run.next_batch():
            heapq.heappush(heap, (run.keys[0], i, 0))
        # keep the last row back: a duplicate of it may still come from another file
        if len(pending) > parquet_io.ROW_GROUP:
            out, pending = pending[:parquet_io.ROW_GROUP], pending[parquet_io.ROW_GROUP:]
            out_keys, pending_keys = pending_keys[:parquet_io.ROW_GROUP], pending_keys[parquet_io.ROW_GROUP:]
            if exclude is not None:
                out, next_excluded = _drop_excluded(out, out_keys, exclude, next_excluded)
            if out:
                if counter is not None:
                    counter[0] += len(out)
                yield build(out)
    if pending and exclude is not None:
        pending, next_excluded = _drop_excluded(pending, pending_keys, exclude, next_excluded)
    if pending:
        if counter is not None:
            counter[0] += len(pending)
        yield build(pending)


def _drop_excluded(entries: list[Any], keys: list[str], exclude: Iterator[str],
                   current: str | None) -> tuple[list[Any], str | None]:
    kept = []
    for entry, k in zip(entries, keys):
        while current is not None and current < k:
            current = next(exclude, None)
        if current is not None and current == k:
            continue
        kept.append(entry)
    return kept, current


def merge_sorted_files(paths: list[Path], dest: Path, schema: Any, key: str, work_dir: Path,
                       exclude: Iterator[str] | None = None) -> int:
    """External merge of files each sorted by ``key`` into ``dest`` (sorted, one row per key).

    More than MERGE_FAN_IN files are first merged in consecutive groups into runs in ``work_dir``
    (which keeps "the later file wins" for duplicates), so memory never depends on the file count.
    """
    level = 0
    while len(paths) > MERGE_FAN_IN:
        level_dir = work_dir / f"level-{level}"
        shutil.rmtree(level_dir, ignore_errors=True)
        level_dir.mkdir(parents=True)
        merged = []
        for g in range(0, len(paths), MERGE_FAN_IN):
            run = level_dir / f"run-{g // MERGE_FAN_IN:06d}.parquet"
            write_tables(run, schema, _merged_tables(paths[g:g + MERGE_FAN_IN], key, schema))
            merged.append(run)
        if level > 0:
            shutil.rmtree(work_dir / f"level-{level - 1}", ignore_errors=True)
        paths, level = merged, level + 1
    counter = [0]
    write_tables(dest, schema, _merged_tables(paths, key, schema, exclude, counter))
    shutil.rmtree(work_dir, ignore_errors=True)
    return counter[0]
