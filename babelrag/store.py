"""The build directory: one folder per stage, written atomically, with a manifest.

Layout::

    <build_dir>/<stage>/records.parquet   typed records (features from the pydantic model), sorted by id
    <build_dir>/<stage>/errors.parquet    ErrorRecord rows for items that failed, sorted by item id
    <build_dir>/<stage>/manifest.json     fingerprint, inputs, counts, versions, usage — written last
    <build_dir>/.partial/<stage>/         shards of an unfinished run (resume after a crash / kill -9)

A stage folder only ever appears complete: it is assembled in a temporary folder and renamed into place.
Shards are written the same way, so a killed run keeps every finished shard and nothing half-written.

Memory stays bounded however many records a stage writes: every shard is sorted by id when it is
written, and the commit k-way merges the shards (at most ``MERGE_FAN_IN`` files open at once, more
passes when there are more shards) straight into ``records.parquet`` in row groups of ``ROW_GROUP``
rows. The bytes depend only on the records, not on how the run was cut into shards, so a run killed
and resumed produces the same file as an uninterrupted one.
"""
from __future__ import annotations

import hashlib
import heapq
import json
import os
import shutil
import stat
import time
import uuid
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from babelrag.atomic import atomic_path, atomic_write_text, replace_dir
from babelrag.errors import StageError
from babelrag.records import ErrorRecord

M = TypeVar("M", bound=BaseModel)

RECORDS_FILE = "records.parquet"
ERRORS_FILE = "errors.parquet"
MANIFEST_FILE = "manifest.json"

#: rows per parquet row group in everything the store writes (a reader holds one group at a time)
ROW_GROUP = 256
#: shard/run files merged at once by the commit (memory ~ MERGE_FAN_IN row groups)
MERGE_FAN_IN = 16
# Every ParquetFile is opened with pre_buffer=False: pyarrow's default pre-buffers the whole file
# (the merge holds up to MERGE_FAN_IN files open, iter_read walks a corpus-sized file).

#: bump when the shard layout changes: shards of an unfinished run in another layout are discarded
SHARD_FORMAT = 2


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def stable_hash(obj: Any) -> str:
    """Hash of a JSON-able object that does not depend on key order."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def arrow_schema(model: type[BaseModel]) -> Any:
    """The Arrow schema of ``model`` (with the ``datasets`` features in its metadata)."""
    from babelrag.schema import features_for

    return features_for(model).arrow_schema


def _write_tables(path: Path, schema: Any, tables: Iterable[Any]) -> int:
    """Write Arrow tables as one parquet file, ``ROW_GROUP`` rows per group; atomic. Returns the row count.

    The row groups depend only on the rows (tables are re-cut into ROW_GROUP-sized, contiguous pieces),
    so the same rows always give the same bytes.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 0
    pending: list[Any] = []
    pending_rows = 0
    with atomic_path(path) as tmp:
        # min/max statistics only for the key columns (read_ids prunes row groups with them): those of
        # text columns would put two article texts per row group into the footer, which every reader
        # and the merge's open files hold in memory
        keys = [name for name in ("id", "item_id") if name in schema.names]
        with pq.ParquetWriter(str(tmp), schema, write_statistics=keys) as writer:
            def emit(table: Any) -> None:
                writer.write_table(table.combine_chunks(), row_group_size=ROW_GROUP)

            for table in tables:
                if table.num_rows == 0:
                    continue
                pending.append(table)
                pending_rows += table.num_rows
                while pending_rows >= ROW_GROUP:
                    whole = pa.concat_tables(pending)
                    emit(whole.slice(0, ROW_GROUP))
                    rest = whole.slice(ROW_GROUP)
                    pending, pending_rows = ([rest] if rest.num_rows else []), rest.num_rows
                    n += ROW_GROUP
            if pending_rows:
                emit(pa.concat_tables(pending))
                n += pending_rows
    return n


def _rows_to_tables(rows: Iterable[dict[str, Any]], schema: Any) -> Iterator[Any]:
    import pyarrow as pa

    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= ROW_GROUP:
            yield pa.Table.from_pylist(batch, schema=schema)
            batch = []
    if batch:
        yield pa.Table.from_pylist(batch, schema=schema)


def write_records(path: Path, records: Iterable[BaseModel], model: type[BaseModel]) -> int:
    """Write records (any iterable, consumed batch by batch) as parquet with exact features; atomic."""
    schema = arrow_schema(model)
    rows = (r.model_dump(mode="json") for r in records)
    return _write_tables(path, schema, _rows_to_tables(rows, schema))


def read_records(path: Path, model: type[M]) -> list[M]:
    import pyarrow.parquet as pq

    if not path.exists():
        return []
    table = pq.read_table(path)
    return [model.model_validate(row) for row in table.to_pylist()]


def iter_records(path: Path, model: type[M], batch_size: int = 2048) -> Iterator[M]:
    """Records of a parquet file, one batch in memory at a time."""
    import pyarrow.parquet as pq

    if not path.exists():
        return
    with pq.ParquetFile(path, pre_buffer=False) as parquet:
        for batch in parquet.iter_batches(batch_size=batch_size):
            for row in batch.to_pylist():
                yield model.model_validate(row)


def read_by_ids(path: Path, model: type[M], ids: Iterable[str], key: str = "id") -> dict[str, M]:
    """The records whose ``key`` is in ``ids``; reads only row groups whose id range can hold one.

    Stage outputs are sorted by id, so each wanted id falls in (about) one row group of ROW_GROUP rows.
    """
    import pyarrow.parquet as pq

    want = sorted(set(ids))
    out: dict[str, M] = {}
    if not want or not path.exists():
        return out
    wanted = set(want)
    with pq.ParquetFile(path, pre_buffer=False) as parquet:
        meta = parquet.metadata
        col = parquet.schema_arrow.get_field_index(key)
        for rg in range(meta.num_row_groups):
            stats = meta.row_group(rg).column(col).statistics
            if stats is not None and stats.has_min_max:
                lo, hi = stats.min, stats.max
                if isinstance(lo, bytes):
                    lo, hi = lo.decode("utf-8"), hi.decode("utf-8")
                i = bisect_left(want, lo)
                if i == len(want) or want[i] > hi:
                    continue
            for row in parquet.read_row_group(rg).to_pylist():
                if row[key] in wanted:
                    out[row[key]] = model.model_validate(row)
    return out


# --------------------------------------------------------------------------------------------------
# sorted merge of shard files


class _Run:
    """One sorted parquet file read one row group at a time."""

    def __init__(self, path: Path, key: str) -> None:
        import pyarrow.parquet as pq

        self.file = pq.ParquetFile(path, pre_buffer=False)
        self.key = key
        # one thread: the merge reads files one row group at a time anyway, and parallel column
        # decoding keeps several row groups' buffers alive per file
        self._batches = self.file.iter_batches(batch_size=ROW_GROUP, use_threads=False)
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
    """Rows of sorted files ``paths`` in ``key`` order as Arrow tables of up to ROW_GROUP rows.

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
        if len(pending) > ROW_GROUP:
            out, pending = pending[:ROW_GROUP], pending[ROW_GROUP:]
            out_keys, pending_keys = pending_keys[:ROW_GROUP], pending_keys[ROW_GROUP:]
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
            _write_tables(run, schema, _merged_tables(paths[g:g + MERGE_FAN_IN], key, schema))
            merged.append(run)
        if level > 0:
            shutil.rmtree(work_dir / f"level-{level - 1}", ignore_errors=True)
        paths, level = merged, level + 1
    counter = [0]
    _write_tables(dest, schema, _merged_tables(paths, key, schema, exclude, counter))
    shutil.rmtree(work_dir, ignore_errors=True)
    return counter[0]


def _iter_column(path: Path, column: str) -> Iterator[str]:
    import pyarrow.parquet as pq

    with pq.ParquetFile(path, pre_buffer=False) as parquet:
        for batch in parquet.iter_batches(batch_size=8192, columns=[column]):
            yield from batch.column(0).to_pylist()


@dataclass
class Manifest:
    """What a finished stage was made from and what it produced."""

    stage: str
    fingerprint: str
    config_hash: str
    inputs: dict[str, str]
    output_fingerprint: str = ""
    counts: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    started_at: float = 0.0
    finished_at: float = 0.0
    llm_usage: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Any] = field(default_factory=dict)  # content digests of files the config names

    @property
    def seconds(self) -> float:
        return max(0.0, self.finished_at - self.started_at)

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=2, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_path(cls, path: Path) -> Manifest:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


class ShardWriter:
    """Collects a stage's records in small atomic shards so a killed run resumes where it stopped.

    ``has(id)`` tells whether a record (or error) for that id is already stored; ``add``/``add_error``
    buffer, and every ``shard_size`` items (or ``flush_seconds``) a shard file is renamed into place.
    Each shard is sorted by id; ``finish`` merges them into the stage's final files without loading
    them. Only the ids are kept in memory (for ``has``).
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
        expected = {"fingerprint": fingerprint, "format": SHARD_FORMAT}
        if folder.exists():
            stale = not meta.exists() or json.loads(meta.read_text()) != expected
            if stale:
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
        self._errors: list[ErrorRecord] = []
        self._done: set[str] = set()
        self.resumed = 0
        for shard in self._shards("records"):
            self._done.update(_iter_column(shard, "id"))
        for shard in self._shards("errors"):
            self._done.update(_iter_column(shard, "item_id"))
        self.resumed = len(self._done)
        self._next_shard = len(self._shards("records")) + 1
        self._last_flush = time.monotonic()
        self.count_out = 0
        self.count_errors = 0

    def _shards(self, kind: str) -> list[Path]:
        return sorted(self.folder.glob(f"shard-*.{kind}.parquet"))

    def has(self, item_id: str) -> bool:
        return item_id in self._done

    def add(self, record: BaseModel, item_id: str | None = None) -> None:
        self._done.add(item_id or record.id)  # type: ignore[attr-defined]
        self._records.append(record)
        self._maybe_flush()

    def add_error(self, error: ErrorRecord) -> None:
        self._done.add(error.item_id)
        self._errors.append(error)
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        pending = len(self._records) + len(self._errors)
        if pending >= self.shard_size or (
            pending and time.monotonic() - self._last_flush > self.flush_seconds
        ):
            self.flush()

    def flush(self) -> None:
        """Write buffered items as one shard pair, each sorted by id (stable: a later duplicate stays
        later); the records file is renamed last (commit point)."""
        if not self._records and not self._errors:
            return
        stem = f"shard-{self._next_shard:06d}"
        errors = sorted(self._errors, key=lambda e: e.item_id)
        records = sorted(self._records, key=lambda r: r.id)  # type: ignore[attr-defined]
        write_records(self.folder / f"{stem}.errors.parquet", errors, ErrorRecord)
        write_records(self.folder / f"{stem}.records.parquet", records, self.model)
        self._next_shard += 1
        self._records, self._errors = [], []
        self._last_flush = time.monotonic()

    def finish(self, dest: Path) -> tuple[int, int]:
        """Write ``records.parquet`` and ``errors.parquet`` into ``dest``: every record and error of
        this run and resumed shards, sorted by id, one per id (the latest wins); an item that failed
        once and succeeded after a resume counts as a success only. Returns (records, errors)."""
        self.flush()
        work = self.folder / "merge"
        n_out = merge_sorted_files(self._shards("records"), dest / RECORDS_FILE, self._schema, "id", work)
        n_err = merge_sorted_files(self._shards("errors"), dest / ERRORS_FILE, self._error_schema, "item_id",
                                   work, exclude=_iter_column(dest / RECORDS_FILE, "id"))
        self.count_out, self.count_errors = n_out, n_err
        return n_out, n_err


class BuildStore:
    """Reads and writes stage folders under one build directory."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def stage_dir(self, stage: str) -> Path:
        return self.root / stage

    def shared_dir(self, name: str) -> Path:
        """Folders shared across stages and re-runs (e.g. the Milvus Lite file, vector caches)."""
        path = self.root / "_shared" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def manifest(self, stage: str) -> Manifest | None:
        path = self.stage_dir(stage) / MANIFEST_FILE
        return Manifest.from_path(path) if path.exists() else None

    def require(self, stage: str) -> Manifest:
        manifest = self.manifest(stage)
        if manifest is None:
            raise StageError(
                f"stage '{stage}' has no finished output in {self.stage_dir(stage)}: "
                f"run `babelrag run --until {stage}` (or the `{stage}` command) first"
            )
        return manifest

    def read(self, stage: str, model: type[M]) -> list[M]:
        """All records of a stage in memory (small stages; use ``iter_read``/``read_ids`` for ingest)."""
        self.require(stage)
        return read_records(self.stage_dir(stage) / RECORDS_FILE, model)

    def read_errors(self, stage: str) -> list[ErrorRecord]:
        return read_records(self.stage_dir(stage) / ERRORS_FILE, ErrorRecord)

    def iter_read(self, stage: str, model: type[M], batch_size: int = 2048) -> Iterator[M]:
        """Stream records (sorted by id) without loading the whole file (large corpora)."""
        self.require(stage)
        return iter_records(self.stage_dir(stage) / RECORDS_FILE, model, batch_size)

    def read_ids(self, stage: str, model: type[M], ids: Iterable[str]) -> dict[str, M]:
        """The records with these ids (missing ids are absent), reading only the row groups that hold them."""
        self.require(stage)
        return read_by_ids(self.stage_dir(stage) / RECORDS_FILE, model, ids)

    def load_dataset(self, stage: str) -> Any:
        """The stage's records as a ``datasets.Dataset`` (memory-mapped Arrow; for inspection and notebooks)."""
        import datasets

        self.require(stage)
        datasets.disable_progress_bars()
        return datasets.Dataset.from_parquet(str(self.stage_dir(stage) / RECORDS_FILE))

    def partial_writer(self, stage: str, model: type[M], fingerprint: str, **kw: Any) -> ShardWriter:
        return ShardWriter(self.root / ".partial" / stage, model, fingerprint, **kw)

    def new_staging_dir(self, stage: str) -> Path:
        path = self.root / ".staging" / f"{stage}-{uuid.uuid4().hex[:8]}"
        path.mkdir(parents=True)
        return path

    def commit(self, stage: str, staging: Path, records: Iterable[BaseModel], model: type[BaseModel],
               errors: Iterable[ErrorRecord], manifest: Manifest) -> Manifest:
        """Write records (already sorted by id; consumed as a stream) + errors + manifest into ``staging``
        and swap it in as the stage folder."""
        write_records(staging / RECORDS_FILE, records, model)
        write_records(staging / ERRORS_FILE, errors, ErrorRecord)
        return self.commit_staged(stage, staging, manifest)

    def commit_staged(self, stage: str, staging: Path, manifest: Manifest) -> Manifest:
        """``staging`` already holds records.parquet and errors.parquet: add the manifest, swap it in."""
        manifest.output_fingerprint = sha256_file(staging / RECORDS_FILE)
        atomic_write_text(staging / MANIFEST_FILE, manifest.to_json())
        replace_dir(staging, self.stage_dir(stage))
        shutil.rmtree(self.root / ".partial" / stage, ignore_errors=True)
        return manifest

    def clean_staging(self) -> None:
        """Remove leftovers of killed runs (never visible as stage output)."""
        shutil.rmtree(self.root / ".staging", ignore_errors=True)
        for old in self.root.glob(".*.old-*"):
            shutil.rmtree(old, ignore_errors=True)


# --------------------------------------------------------------------------------------------------
# content digests of the files a config names (part of stage fingerprints)


class ContentHasher:
    """sha256 digests of files and folders, cached by their stat signature.

    A file is re-read only when its size, mtime or inode changed; a folder (every non-hidden file below
    it, by relative path) only when one of its files did. Files modified in the last ``RACY_SECONDS``
    are never cached (an edit within the same mtime tick would otherwise go unseen). The cache lives in
    ``<build>/_shared/content_hashes.json``; losing it only costs re-reading.
    """

    RACY_SECONDS = 2.0

    def __init__(self, cache_file: Path | None = None, exclude: Iterable[Path] = ()) -> None:
        self.cache_file = cache_file
        self.exclude = {os.path.realpath(p) for p in exclude}
        self._cache: dict[str, dict[str, Any]] = {}
        self._dirty = False
        if cache_file is not None and cache_file.exists():
            try:
                self._cache = json.loads(cache_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._cache = {}

    def digest(self, path: Path) -> str:
        """``sha256:<hex>`` for a file, ``tree:<hex>`` for a folder, ``absent`` when nothing is there."""
        try:
            st = path.stat()
        except OSError:
            return "absent"
        if stat.S_ISDIR(st.st_mode):
            return self._dir_digest(path)
        return "sha256:" + self._file_digest(path, st)

    def _file_digest(self, path: Path, st: os.stat_result) -> str:
        key = os.path.realpath(path)
        sig = [st.st_size, st.st_mtime_ns, st.st_ino]
        hit = self._cache.get(key)
        if hit is not None and hit.get("sig") == sig:
            return hit["sha"]
        sha = sha256_file(path)
        if time.time_ns() - st.st_mtime_ns > self.RACY_SECONDS * 1e9:
            self._cache[key] = {"sig": sig, "sha": sha}
            self._dirty = True
        return sha

    def _walk(self, folder: Path) -> Iterator[tuple[str, Path, os.stat_result]]:
        """Regular non-hidden files below ``folder`` in a fixed order (sorted names, depth first)."""
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                             and os.path.realpath(os.path.join(root, d)) not in self.exclude)
            for name in sorted(files):
                if name.startswith("."):
                    continue
                full = Path(root) / name
                try:
                    st = full.stat()
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    yield full.relative_to(folder).as_posix(), full, st

    def _dir_digest(self, folder: Path) -> str:
        # one cache entry per folder (not per file: a corpus folder may hold millions of files),
        # keyed by the listing with sizes and mtimes; any change re-reads the folder
        listing = hashlib.sha256()
        newest = 0
        for rel, _, st in self._walk(folder):
            listing.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode())
            newest = max(newest, st.st_mtime_ns)
        key = "tree:" + os.path.realpath(folder)
        sig = listing.hexdigest()
        hit = self._cache.get(key)
        if hit is not None and hit.get("sig") == sig:
            return hit["sha"]
        digest = hashlib.sha256()
        for rel, full, _ in self._walk(folder):
            digest.update(f"{rel}\0{sha256_file(full)}\n".encode())
        sha = "tree:" + digest.hexdigest()
        if time.time_ns() - newest > self.RACY_SECONDS * 1e9:
            self._cache[key] = {"sig": sig, "sha": sha}
            self._dirty = True
        return sha

    def save(self) -> None:
        if not self._dirty or self.cache_file is None or not self.cache_file.parent.parent.exists():
            return
        try:
            atomic_write_text(self.cache_file, json.dumps(self._cache, sort_keys=True))
            self._dirty = False
        except OSError:
            pass  # a read-only build dir only costs re-hashing next time
