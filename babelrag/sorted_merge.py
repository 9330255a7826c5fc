"""External k-way merge of id-sorted parquet files in bounded memory (the stage commit's sort).

At most ``MERGE_FAN_IN`` files are open at once; more files take more passes through ``work_dir``. The
output depends only on the rows, not on how they were cut into files.
"""
from __future__ import annotations

import shutil
from bisect import bisect_right
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from babelrag import parquet_io
from babelrag.parquet_io import write_tables

#: shard/run files merged at once by the commit (memory ~ MERGE_FAN_IN batches of MERGE_BATCH_BYTES)
MERGE_FAN_IN = 16
#: what the merge reads of a file at a time (whole row groups, at least one): small records (pairs, ~100 bytes)
#: come thousands a round, article records (~5 KB of text) a row group
MERGE_BATCH_BYTES = 1 << 20


class _Run:
    """One sorted parquet file read a few row groups at a time (``_batch_rows``); ``at``: the first row of
    ``batch`` not yet merged."""

    def __init__(self, path: Path, key: str) -> None:
        import pyarrow.parquet as pq

        self.file = pq.ParquetFile(path, pre_buffer=False)
        self.key = key
        # one thread: the merge reads a file a batch at a time anyway, and parallel column
        # decoding keeps several row groups' buffers alive per file
        self._batches = self.file.iter_batches(batch_size=_batch_rows(self.file.metadata), use_threads=False)
        self.batch: Any = None
        self.keys: list[str] = []
        self.at = 0
        self.number = 0  # its place among the merged files

    def next_batch(self) -> bool:
        self.at = 0
        for batch in self._batches:
            if batch.num_rows:
                self.batch = batch
                self.keys = batch.column(self.key).to_pylist()
                return True
        self.batch, self.keys = None, []
        self.file.close()
        return False


def _batch_rows(meta: Any) -> int:
    """Rows read at a time: whole row groups, about ``MERGE_BATCH_BYTES`` of them (uncompressed)."""
    rows = meta.num_rows
    if not rows:
        return parquet_io.ROW_GROUP
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    groups = max(1, MERGE_BATCH_BYTES * rows // max(1, size) // parquet_io.ROW_GROUP)
    return groups * parquet_io.ROW_GROUP


FILE_COLUMN = "__merge_file"  # each row's input file while a round is sorted (equal keys: the later file wins)


def _merged_tables(paths: list[Path], key: str, schema: Any, exclude: Iterator[str] | None = None,
                   counter: list[int] | None = None) -> Iterator[Any]:
    """Rows of sorted files ``paths`` in ``key`` order as Arrow tables (their sizes do not matter: ``write_tables``
    cuts fixed row groups).

    Equal keys: the row from the later file (and the later row within a file) wins. Keys also present
    in the sorted iterator ``exclude`` are dropped. About ``MERGE_BATCH_BYTES`` per file are held at a time.
    Merged a round at a time in Arrow, no Python per row: a round takes from every file's current row group the
    rows up to the smallest of their last keys (the frontier: no file can still hold a smaller key), sorts them
    stably by (key, file) and keeps the last row of each key. Rows at the frontier itself wait for the next
    round, since a file's next row group may repeat that key.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    runs = [_Run(p, key) for p in paths]
    for number, run in enumerate(runs):
        run.number = number
    live = [run for run in runs if run.next_batch()]
    held: Any = None  # the last round's rows at its frontier (with their file), merged into the next round
    dropped = _Excluded(exclude)
    while live:
        frontier = min(run.keys[-1] for run in live)
        pieces = [held] if held is not None else []
        for run in live:
            cut = bisect_right(run.keys, frontier, run.at)
            if cut > run.at:
                part = pa.Table.from_batches([run.batch.slice(run.at, cut - run.at)])
                pieces.append(part.append_column(FILE_COLUMN, pa.array([run.number] * part.num_rows,
                                                                       type=pa.int32())))
            run.at = cut
        live = [run for run in live if run.at < len(run.keys) or run.next_batch()]
        table = _sorted(pa.concat_tables(pieces), key)
        waiting = int(pc.sum(pc.equal(table.column(key), frontier)).as_py() or 0) if live else 0
        held = table.slice(table.num_rows - waiting) if waiting else None
        out = _last_of_each_key(table.slice(0, table.num_rows - waiting), key)
        out = dropped.filter(out, key)
        if out.num_rows:
            if counter is not None:
                counter[0] += out.num_rows
            yield out.drop_columns([FILE_COLUMN]).cast(schema)


def _sorted(table: Any, key: str) -> Any:
    """By key, then file; stable (Arrow's sort is), so a file's rows keep their order among equal keys. Arrow
    compares strings by their UTF-8 bytes: the order of Python's ``str`` comparisons (the frontier's)."""
    import pyarrow.compute as pc

    return table.take(pc.sort_indices(table, sort_keys=[(key, "ascending"), (FILE_COLUMN, "ascending")]))


def _last_of_each_key(table: Any, key: str) -> Any:
    """The last row of each run of equal keys of a sorted table."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    if n < 2:
        return table
    col = table.column(key).combine_chunks()
    last = pc.not_equal(col.slice(0, n - 1), col.slice(1))
    return table.filter(pa.concat_arrays([last, pa.array([True])]))


class _Excluded:
    """The sorted iterator of keys to drop, read forward as far as each output table reaches."""

    def __init__(self, keys: Iterator[str] | None) -> None:
        self.keys = keys
        self.current = next(keys, None) if keys is not None else None

    def filter(self, table: Any, key: str) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        if self.current is None or not table.num_rows:
            return table
        last = table.column(key)[-1].as_py()
        upto: list[str] = []
        while self.current is not None and self.current <= last:
            upto.append(self.current)
            self.current = next(self.keys, None)  # type: ignore[arg-type]
        if not upto:
            return table
        return table.filter(pc.invert(pc.is_in(table.column(key), value_set=pa.array(upto, type=table.schema.field(key).type))))


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
