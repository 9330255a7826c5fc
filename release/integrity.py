"""A release folder checked against its own ``release.json`` (``release validate --folder``).

``release build`` and ``release convert`` record every data file's rows per config and split
(``configs``) and a hash of its content (``data_hashes``: canonical JSON of the rows sorted by id,
``versioning.rows_hash``). A copy of the folder is what was released only when every listed file is
there, no other data file is, and each file holds the recorded number of rows with the recorded content.
A damaged file (truncated, empty, not parquet) is named, never an ``ArrowInvalid`` traceback; a folder
with no release.json, or a release with no rows, is refused. The rows that could be read are returned so
the release rules still run on them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from babelrag.errors import InputError
from babelrag.parquet_io import read_rows
from babelrag.records import Instance
from babelrag.release import layout
from babelrag.release.versioning import rows_hash


@dataclass(frozen=True)
class FileProblem:
    """One data file that does not match release.json (``path`` relative to the release folder)."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


@dataclass
class FolderContents:
    """The rows of every readable data file (split per row) and what did not match release.json."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    splits: list[str] = field(default_factory=list)
    files: int = 0
    problems: list[FileProblem] = field(default_factory=list)

    def summary(self) -> str:
        return "\n".join([f"{len(self.problems)} data file problem(s) against release.json:",
                          *(f"  {p}" for p in self.problems)])


def content_hash(rows: list[dict[str, Any]]) -> str:
    """The hash release.json records for a split, recomputed from the rows read back (as the build
    hashed them: each row as its Instance's JSON; a row that is no Instance hashes as it is)."""
    canonical = []
    for row in rows:
        try:
            canonical.append(Instance.model_validate(row).model_dump(mode="json"))
        except ValidationError:
            canonical.append(json.loads(json.dumps({**row, "id": str(row.get("id"))}, default=str)))
    return rows_hash(canonical)


def _data_files(folder: Path) -> dict[str, Path]:
    """Every file under data/, by its path relative to the folder (POSIX, as release.json names it)."""
    root = folder / layout.DATA_DIR
    return {p.relative_to(folder).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()} \
        if root.is_dir() else {}


def check_folder(folder: Path) -> FolderContents:
    """Compare ``folder``'s data files with its release.json; InputError when there is nothing to compare."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder; pass a release folder written by `babelrag release build`")
    info = layout.read_info(folder)
    if info is None:
        raise InputError(f"{folder}: no {layout.RELEASE_INFO}; not a release folder written by `babelrag release "
                         "build` or `release convert` (rebuild it, or copy its release.json along)")
    configs = info.get("configs") or {}
    listed = {layout.split_path(c, s): int(n) for c, splits in configs.items() for s, n in splits.items()}
    present = _data_files(folder)
    if not sum(listed.values()):
        raise InputError(f"{folder}: an empty release ({layout.RELEASE_INFO} lists no rows"
                         + (f"; data/ holds {len(present)} file(s) it does not list" if present else "")
                         + "); nothing to validate — rebuild it with `babelrag release build`")
    hashes: dict[str, str] = info.get("data_hashes") or {}
    out = FolderContents()
    out.problems += [FileProblem(rel, f"listed in {layout.RELEASE_INFO} ({listed[rel]} rows) but missing")
                     for rel in sorted(set(listed) - set(present))]
    out.problems += [FileProblem(rel, f"an extra data file: not listed in {layout.RELEASE_INFO}")
                     for rel in sorted(set(present) - set(listed))]
    for rel, path in present.items():
        parts = rel.split("/")
        if len(parts) != 3 or not rel.endswith(".parquet"):
            continue  # not a config/split file: named as extra above, not read
        try:
            rows = read_rows(path, layout.REPAIR)
        except InputError as exc:
            out.problems.append(FileProblem(rel, str(exc).removeprefix(f"{path}: ")))
            continue
        out.files += 1
        config, split = parts[1], parts[2].removesuffix(".parquet")
        if rel in listed:
            if len(rows) != listed[rel]:
                out.problems.append(FileProblem(rel, f"{len(rows)} rows; {layout.RELEASE_INFO} records "
                                                     f"{listed[rel]}"))
            elif f"{config}/{split}" in hashes and content_hash(rows) != hashes[f"{config}/{split}"]:
                out.problems.append(FileProblem(rel, f"its rows differ from the content hash {layout.RELEASE_INFO} "
                                                     "records (a row was changed)"))
        out.rows += rows
        out.splits += [split] * len(rows)
    return out
