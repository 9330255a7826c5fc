"""The build directory: one folder per stage, written atomically, with a manifest.

Layout::

    <build_dir>/<stage>/records.parquet   typed records (features from the pydantic model)
    <build_dir>/<stage>/errors.parquet    ErrorRecord rows for items that failed
    <build_dir>/<stage>/manifest.json     fingerprint, inputs, counts, versions, usage — written last
    <build_dir>/.partial/<stage>/         shards of an unfinished run (resume after a crash / kill -9)

A stage folder only ever appears complete: it is assembled in a temporary folder and renamed into place.
Shards are written the same way, so a killed run keeps every finished shard and nothing half-written.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from babelrag.errors import StageError
from babelrag.records import ErrorRecord

M = TypeVar("M", bound=BaseModel)

RECORDS_FILE = "records.parquet"
ERRORS_FILE = "errors.parquet"
MANIFEST_FILE = "manifest.json"


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


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_records(path: Path, records: list[BaseModel], model: type[BaseModel]) -> None:
    """Write records as parquet through ``datasets`` with exact features; atomic."""
    import datasets

    from babelrag.schema import features_for

    datasets.disable_progress_bars()  # stages show their own progress; these bars are per file
    features = features_for(model)
    rows = [r.model_dump(mode="json") for r in records]
    if rows:
        ds = datasets.Dataset.from_list(rows, features=features)
    else:
        ds = datasets.Dataset.from_dict({name: [] for name in features}, features=features)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    ds.to_parquet(str(tmp))
    os.replace(tmp, path)


def read_records(path: Path, model: type[M]) -> list[M]:
    import pyarrow.parquet as pq

    if not path.exists():
        return []
    table = pq.read_table(path)
    return [model.model_validate(row) for row in table.to_pylist()]


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
    """

    def __init__(self, folder: Path, model: type[M], fingerprint: str, shard_size: int = 200,
                 flush_seconds: float = 5.0) -> None:
        self.folder = folder
        self.model = model
        self.shard_size = shard_size
        self.flush_seconds = flush_seconds
        meta = folder / "partial.json"
        if folder.exists():
            stale = not meta.exists() or json.loads(meta.read_text()).get("fingerprint") != fingerprint
            if stale:
                shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if not meta.exists():
            atomic_write_text(meta, json.dumps({"fingerprint": fingerprint}))
        self._records: list[BaseModel] = []
        self._errors: list[ErrorRecord] = []
        self._done: set[str] = set()
        self.resumed = 0
        for shard in sorted(folder.glob("shard-*.records.parquet")):
            self._done.update(r.id for r in read_records(shard, model))
        for shard in sorted(folder.glob("shard-*.errors.parquet")):
            self._done.update(r.item_id for r in read_records(shard, ErrorRecord))
        self.resumed = len(self._done)
        self._next_shard = len(list(folder.glob("shard-*.records.parquet"))) + 1
        self._last_flush = time.monotonic()

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
        """Write buffered items as one shard pair; the records file is renamed last (commit point)."""
        if not self._records and not self._errors:
            return
        stem = f"shard-{self._next_shard:06d}"
        write_records(self.folder / f"{stem}.errors.parquet", self._errors, ErrorRecord)
        write_records(self.folder / f"{stem}.records.parquet", self._records, self.model)
        self._next_shard += 1
        self._records, self._errors = [], []
        self._last_flush = time.monotonic()

    def collect(self) -> tuple[list[BaseModel], list[ErrorRecord]]:
        """All records and errors written so far (this run and resumed shards), sorted by id."""
        self.flush()
        records: dict[str, BaseModel] = {}
        errors: dict[str, ErrorRecord] = {}
        for shard in sorted(self.folder.glob("shard-*.records.parquet")):
            for r in read_records(shard, self.model):
                records[r.id] = r  # type: ignore[attr-defined]
        for shard in sorted(self.folder.glob("shard-*.errors.parquet")):
            for e in read_records(shard, ErrorRecord):
                errors[e.item_id] = e
        # an item that failed once and succeeded after resume counts as a success only
        for key in list(errors):
            if key in records:
                del errors[key]
        return [records[k] for k in sorted(records)], [errors[k] for k in sorted(errors)]


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
        self.require(stage)
        return read_records(self.stage_dir(stage) / RECORDS_FILE, model)

    def read_errors(self, stage: str) -> list[ErrorRecord]:
        return read_records(self.stage_dir(stage) / ERRORS_FILE, ErrorRecord)

    def iter_read(self, stage: str, model: type[M], batch_size: int = 2048) -> Iterator[M]:
        """Stream records without loading the whole file (large corpora)."""
        import pyarrow.parquet as pq

        self.require(stage)
        parquet = pq.ParquetFile(self.stage_dir(stage) / RECORDS_FILE)
        for batch in parquet.iter_batches(batch_size=batch_size):
            for row in batch.to_pylist():
                yield model.model_validate(row)

    def load_dataset(self, stage: str) -> Any:
        """The stage's records as a ``datasets.Dataset`` (for inspection and notebooks)."""
        import datasets

        self.require(stage)
        return datasets.Dataset.from_parquet(str(self.stage_dir(stage) / RECORDS_FILE))

    def partial_writer(self, stage: str, model: type[M], fingerprint: str, **kw: Any) -> ShardWriter:
        return ShardWriter(self.root / ".partial" / stage, model, fingerprint, **kw)

    def new_staging_dir(self, stage: str) -> Path:
        path = self.root / ".staging" / f"{stage}-{uuid.uuid4().hex[:8]}"
        path.mkdir(parents=True)
        return path

    def commit(self, stage: str, staging: Path, records: Iterable[BaseModel], model: type[BaseModel],
               errors: list[ErrorRecord], manifest: Manifest) -> Manifest:
        """Write records + errors + manifest into ``staging`` and swap it in as the stage folder."""
        records = list(records)
        write_records(staging / RECORDS_FILE, records, model)
        write_records(staging / ERRORS_FILE, errors, ErrorRecord)
        manifest.output_fingerprint = sha256_file(staging / RECORDS_FILE)
        atomic_write_text(staging / MANIFEST_FILE, manifest.to_json())
        final = self.stage_dir(stage)
        old = None
        if final.exists():
            old = final.with_name(f".{stage}.old-{uuid.uuid4().hex[:8]}")
            os.replace(final, old)
        os.replace(staging, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(self.root / ".partial" / stage, ignore_errors=True)
        return manifest

    def clean_staging(self) -> None:
        """Remove leftovers of killed runs (never visible as stage output)."""
        shutil.rmtree(self.root / ".staging", ignore_errors=True)
        for old in self.root.glob(".*.old-*"):
            shutil.rmtree(old, ignore_errors=True)
