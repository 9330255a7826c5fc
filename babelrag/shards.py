"""Resumable stage output: records collected in small, id-sorted, atomic shards.

A run killed mid-stage (even ``kill -9``) keeps every finished shard; the next run skips their ids and the
commit merges all shards into one id-sorted file whose bytes do not depend on how the run was cut.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel

from babelrag.atomic import atomic_write_text
from babelrag.failed_items import is_retryable
from babelrag.parquet_io import arrow_schema, iter_column, write_records, write_tables
from babelrag.records import ErrorRecord
from babelrag.sorted_merge import merge_sorted_files

M = TypeVar("M", bound=BaseModel)

#: the files a finished stage folder holds besides its manifest
RECORDS_FILE = "records.parquet"
ERRORS_FILE = "errors.parquet"

#: bump when the shard layout changes: shards of an unfinished run in another layout are discarded
SHARD_FORMAT = 2


class ShardWriter:
    """Collects a stage's records in small atomic shards so a killed run resumes where it stopped.

    ``has(id)`` tells whether a record (or a final error) for that id is already stored — an item stored
    as *failed* (``babelrag.failed_items``) counts as done only within the run that failed it; ``add``/``add_error``
    buffer, and every ``shard_size`` items (or ``flush_seconds``) a shard file is renamed into place.
    Each shard is sorted by id; ``finish`` merges them into the stage's final files without loading
    them. Only the ids are kept in memory (for ``has``), as sorted bytes once written (``StoredIds``).
    A stage that holds its records as Arrow columns hands them over as tables (``add_table``).
    """

    def __init__(self, folder: Path, model: type[M], fingerprint: str, shard_size: int = 200,
                 flush_seconds: float = 5.0) -> None:
        self.folder = folder
        self.model = model
        self.shard_size = shard_size
        self.flush_seconds = flush_seconds
        self._schema = arrow_schema(model)
        self._error_schema = arrow_schema(ErrorRecord)
        meta = folder / "partial.json"
        expected = _partial_meta(fingerprint)
        if folder.exists() and not shards_current(folder, fingerprint):
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if not meta.exists():
            atomic_write_text(meta, json.dumps(expected))
        shutil.rmtree(folder / "merge", ignore_errors=True)  # an interrupted commit's runs
        # an errors shard is written before its records shard (the commit point): without the
        # records shard the pair never committed, and its number will be written again
        for orphan in folder.glob("shard-*.errors.parquet"):
            if not orphan.with_name(orphan.name.replace(".errors.", ".records.")).exists():
                orphan.unlink()
        self._records: list[BaseModel] = []
        self._tables: list[Any] = []  # Arrow tables of ``model``'s schema (add_table), written after the records
        self._table_rows = 0
        self._errors: list[ErrorRecord] = []
        self._done = StoredIds()
        self.resumed = 0
        for shard in self._shards("records"):
            self._done.update(iter_column(shard, "id"))
            self._done.freeze()
        for shard in self._shards("errors"):  # a failed item (endpoint trouble) is not done: retried
            self._done.update(i for i, r in zip(iter_column(shard, "item_id"), iter_column(shard, "reason"))
                              if not is_retryable(r))
            self._done.freeze()
        self.resumed = len(self._done)
        self._next_shard = len(self._shards("records")) + 1
        self._last_flush = time.monotonic()
        self.count_out = 0
        self.count_errors = 0

    def _shards(self, kind: str) -> list[Path]:
        return sorted(self.folder.glob(f"shard-*.{kind}.parquet"))

    def has(self, item_id: str) -> bool:
        return item_id in self._done

    @property
    def stored(self) -> int:
        """Items with a record or an error, stored or buffered (after ``flush``: all stored)."""
        return len(self._done)

    def add(self, record: BaseModel, item_id: str | None = None) -> None:
        self._done.add(item_id or record.id)  # type: ignore[attr-defined]
        self._records.append(record)
        self._maybe_flush()

    def add_table(self, table: Any) -> None:
        """Records as an Arrow table of the writer's schema (the columns ``add`` would write for them): no record
        object per row. Like ``add``, it does not look at ``has``: leave out stored ids before."""
        self._done.update(table.column("id").to_pylist())
        self._tables.append(table)
        self._table_rows += table.num_rows
        self._maybe_flush()

    def add_error(self, error: ErrorRecord) -> None:
        self._done.add(error.item_id)
        self._errors.append(error)
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        pending = len(self._records) + self._table_rows + len(self._errors)
        if pending >= self.shard_size or (
            pending and time.monotonic() - self._last_flush > self.flush_seconds
        ):
            self.flush()

    def flush(self) -> None:
        """Write buffered items as one shard pair, each sorted by id (stable: a later duplicate stays
        later); the records file is renamed last (commit point)."""
        if not self._records and not self._tables and not self._errors:
            return
        stem = f"shard-{self._next_shard:06d}"
        errors = sorted(self._errors, key=lambda e: e.item_id)
        write_records(self.folder / f"{stem}.errors.parquet", errors, ErrorRecord)
        if self._tables:
            write_tables(self.folder / f"{stem}.records.parquet", self._schema, [self._sorted_tables()])
        else:
            records = sorted(self._records, key=lambda r: r.id)  # type: ignore[attr-defined]
            write_records(self.folder / f"{stem}.records.parquet", records, self.model)
        self._next_shard += 1
        self._records, self._tables, self._table_rows, self._errors = [], [], 0, []
        self._done.freeze()
        self._last_flush = time.monotonic()

    def _sorted_tables(self) -> Any:
        """The buffered records and tables as one table sorted by id (stable, records first)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        records = [pa.Table.from_pylist([r.model_dump() for r in self._records], schema=self._schema)]
        table = pa.concat_tables(records + [t.select(self._schema.names).cast(self._schema) for t in self._tables])
        # Arrow sorts strings by their UTF-8 bytes (the order of Python's str sort), stably like ``sorted``
        return table.take(pc.sort_indices(table, sort_keys=[("id", "ascending")]))

    def finish(self, dest: Path) -> tuple[int, int]:
        """Write ``records.parquet`` and ``errors.parquet`` into ``dest``: every record and error of
        this run and resumed shards, sorted by id, one per id (the latest wins); an item that failed
        once and succeeded after a resume counts as a success only. Returns (records, errors)."""
        self.flush()
        work = self.folder / "merge"
        n_out = merge_sorted_files(self._shards("records"), dest / RECORDS_FILE, self._schema, "id", work)
        n_err = merge_sorted_files(self._shards("errors"), dest / ERRORS_FILE, self._error_schema, "item_id",
                                   work, exclude=iter_column(dest / RECORDS_FILE, "id"))
        self.count_out, self.count_errors = n_out, n_err
        return n_out, n_err


class StoredIds:
    """The ids a writer stored, for ``has``: those since the last shard in a set, the written ones as sorted
    UTF-8 bytes in a few numpy arrays (each about the ids' length a row, against ~90 bytes for a Python string
    in a set), merged as they grow so that a lookup searches a handful."""

    def __init__(self) -> None:
        self._recent: set[str] = set()
        self._levels: list[np.ndarray] = []

    def __contains__(self, item_id: str) -> bool:
        return item_id in self._recent or self._written(item_id)

    def __len__(self) -> int:
        return sum(len(level) for level in self._levels) + sum(1 for i in self._recent if not self._written(i))

    def _written(self, item_id: str) -> bool:
        key = item_id.encode()
        for level in self._levels:
            at = int(np.searchsorted(level, key))
            if at < len(level) and level[at] == key:
                return True
        return False

    def add(self, item_id: str) -> None:
        self._recent.add(item_id)

    def update(self, ids: Iterable[str]) -> None:
        self._recent.update(ids)

    def freeze(self) -> None:
        """Move the recent ids into the sorted arrays (those already there once are not added again)."""
        if not self._recent:
            return
        new = np.unique(np.array([i.encode() for i in self._recent], dtype=bytes))
        self._recent = set()
        for level in self._levels:
            at = np.minimum(np.searchsorted(level, new), len(level) - 1)
            new = new[level[at] != new]
        if not len(new):
            return
        self._levels.append(new)
        # merge while the newer array is at least a quarter of the one before: O(log n) arrays
        while len(self._levels) > 1 and 4 * len(self._levels[-1]) >= len(self._levels[-2]):
            last = self._levels.pop()
            self._levels[-1] = np.sort(np.concatenate([self._levels[-1], last]))


def _partial_meta(fingerprint: str) -> dict:
    return {"fingerprint": fingerprint, "format": SHARD_FORMAT}


def shards_current(folder: Path, fingerprint: str) -> bool:
    """Whether ``folder`` holds shards of an unfinished run with this fingerprint (resumable)."""
    meta = folder / "partial.json"
    return meta.exists() and json.loads(meta.read_text()) == _partial_meta(fingerprint)


def reopen_as_shards(stage_dir: Path, folder: Path, fingerprint: str) -> None:
    """Make a committed stage's output the first shard pair of a new unfinished run in ``folder``, so
    a run that retries its failed items keeps every record and final error as they are (hard links:
    a shard is never written in place). Does nothing when ``folder`` already holds such a run (one that
    was killed while retrying). Atomic: the folder appears complete or not at all."""
    if shards_current(folder, fingerprint):
        return
    tmp = folder.with_name(folder.name + ".reopen")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, kind in ((RECORDS_FILE, "records"), (ERRORS_FILE, "errors")):
        dest = tmp / f"shard-000001.{kind}.parquet"
        try:
            os.link(stage_dir / name, dest)
        except OSError:  # another file system, or links not allowed
            shutil.copyfile(stage_dir / name, dest)
    atomic_write_text(tmp / "partial.json", json.dumps(_partial_meta(fingerprint)))
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
