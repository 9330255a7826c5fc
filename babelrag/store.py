"""The build directory: one folder per stage, written atomically, with a manifest.

Layout::

    <build_dir>/<stage>/records.parquet   typed records (features from the pydantic model), sorted by id
    <build_dir>/<stage>/errors.parquet    ErrorRecord rows for items that failed, sorted by item id (those
                                          whose reason is retryable are *failed items*: the next run
                                          retries them, ``babelrag.failed_items``)
    <build_dir>/<stage>/manifest.json     fingerprint, inputs, counts, versions, usage — written last
    <build_dir>/.partial/<stage>/         shards of an unfinished run (resume after a crash / kill -9)
    <build_dir>/.staging/                 stage folders being assembled
    <build_dir>/_shared/                  caches shared by stages (content digests, vector store)
    <build_dir>/cache/llm/                the LLM response cache (unless llm.cache_dir is set)
    <build_dir>/annotate/                 pulled annotation responses, decisions, agreement
    <build_dir>/run_report.json           the last run's report
    <build_dir>/.lock                     held by the one process writing the build (``babelrag.build_lock``)

``babelrag.build_layout`` names them and this module is the only one that joins them to a path; a stage
may not be called like one of them (``RESERVED_NAMES``, checked when stages are declared).

A stage folder only ever appears complete: it is assembled in a temporary folder and renamed into place.
Shards are written the same way, so a killed run keeps every finished shard and nothing half-written.

Memory stays bounded however many records a stage writes: every shard is sorted by id when it is
written (``shards``), and the commit k-way merges the shards (``sorted_merge``) straight into
``records.parquet`` in fixed row groups (``parquet_io``). The bytes depend only on the records, not on
how the run was cut into shards, so a run killed and resumed produces the same file as an uninterrupted
one. Fingerprints and content digests live in ``hashing``.
"""
from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from babelrag.atomic import atomic_write_text, replace_dir
from babelrag.build_layout import (ANNOTATE_DIR, LLM_CACHE_DIR, LLM_SPEND_FILE, PARTIAL_DIR, RUN_REPORT_FILE, SHARED_DIR,
                                   STAGING_DIR)
from babelrag.errors import StageError
from babelrag.failed_items import count_failed
from babelrag.hashing import sha256_file
from babelrag.parquet_io import (iter_batches, iter_column, iter_columns, iter_records, missing_columns, read_by_ids,
                                 read_records, write_records)
from babelrag.records import ErrorRecord
from babelrag.shards import ERRORS_FILE, RECORDS_FILE, ShardWriter, reopen_as_shards

M = TypeVar("M", bound=BaseModel)

MANIFEST_FILE = "manifest.json"


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
    version: str = ""  # the stage's version (StageSpec.version) that wrote it; "" in older manifests

    @property
    def seconds(self) -> float:
        return max(0.0, self.finished_at - self.started_at)

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=2, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_path(cls, path: Path) -> Manifest:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


class BuildStore:
    """Reads and writes stage folders under one build directory."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def stage_dir(self, stage: str) -> Path:
        return self.root / stage

    def partial_dir(self, stage: str) -> Path:
        """Shards of the stage's unfinished run."""
        return self.root / PARTIAL_DIR / stage

    @property
    def llm_cache_dir(self) -> Path:
        return self.root / LLM_CACHE_DIR / "llm"

    @property
    def annotate_dir(self) -> Path:
        return self.root / ANNOTATE_DIR

    @property
    def run_report_path(self) -> Path:
        return self.root / RUN_REPORT_FILE

    @property
    def llm_spend_path(self) -> Path:
        """The spend ledger: what LLM calls of this build cost over all runs (``babelrag.llm.budget``)."""
        return self.root / LLM_SPEND_FILE

    def shared_dir(self, name: str) -> Path:
        """Folders shared across stages and re-runs (e.g. the Milvus Lite file, vector caches)."""
        path = self.shared_path(name)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def shared_path(self, name: str) -> Path:
        """Where ``shared_dir(name)`` is, without creating it (for callers that may never write there)."""
        return self.root / SHARED_DIR / name

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

    def iter_columns(self, stage: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """Only ``columns`` of a stage's records, as tuples in id order (e.g. ingest's titles without the texts)."""
        return iter_columns(self._columns_path(stage, columns), columns)

    def column_batches(self, stage: str, columns: Sequence[str], ids: Iterable[str] | None = None) -> Iterator[Any]:
        """Only ``columns`` of a stage's records as Arrow record batches in id order, no record object per row
        (``parquet_io.iter_batches``); with ``ids``, only those records' rows, reading the row groups that hold them."""
        return iter_batches(self._columns_path(stage, columns), columns, ids)

    def _columns_path(self, stage: str, columns: Sequence[str]) -> Path:
        """The stage's records file, checked to hold ``columns``: a build written by an older version that lacks
        one is a StageError naming the folder and the fix, not a pyarrow traceback from the reader."""
        self.require(stage)
        path = self.stage_dir(stage) / RECORDS_FILE
        missing = missing_columns(path, columns) if path.exists() else []
        if missing:
            raise StageError(f"the {stage} stage's records in {self.stage_dir(stage)} have no column(s) "
                             f"{', '.join(missing)} (written by an older version); re-run that stage: "
                             f"babelrag construct {stage} --force")
        return path

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

    def failed_items(self, stage: str, folder: Path | None = None) -> dict[str, int]:
        """Failed items (``babelrag.failed_items``: retried by the next run) per reason in the stage's
        committed output, or in ``folder`` (a staging folder about to be committed)."""
        path = (folder or self.stage_dir(stage)) / ERRORS_FILE
        return dict(sorted(count_failed(iter_column(path, "reason")).items())) if path.exists() else {}

    def reopen_for_retry(self, stage: str, fingerprint: str) -> None:
        """The committed output becomes the stage's unfinished run, so the run that retries its failed
        items keeps everything else (its writer skips what is done)."""
        reopen_as_shards(self.stage_dir(stage), self.partial_dir(stage), fingerprint)

    def partial_writer(self, stage: str, model: type[M], fingerprint: str, **kw: Any) -> ShardWriter:
        return ShardWriter(self.partial_dir(stage), model, fingerprint, **kw)

    def new_staging_dir(self, stage: str) -> Path:
        path = self.root / STAGING_DIR / f"{stage}-{uuid.uuid4().hex[:8]}"
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
        shutil.rmtree(self.partial_dir(stage), ignore_errors=True)
        return manifest

    def clean_staging(self) -> None:
        """Remove leftovers of killed runs (never visible as stage output)."""
        shutil.rmtree(self.root / STAGING_DIR, ignore_errors=True)
        for old in self.root.glob(".*.old-*"):
            shutil.rmtree(old, ignore_errors=True)
