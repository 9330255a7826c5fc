"""Reading record files a user hands over (JSONL or parquet) with errors that name file, line and record.

Stages read their own inputs through the store; these helpers are for files from outside a build:
annotation exports, reviewed records, event lists, gazetteers.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from babelrag.errors import BabelragError, InputError

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class BadLine:
    """A line of a JSONL file that is not a JSON object (what ``iter_jsonl(..., keep_bad=True)`` yields)."""

    detail: str


def iter_jsonl(path: Path, error: type[BabelragError] = InputError, keep_bad: bool = False,
               errors: str = "strict") -> Iterator[tuple[int, Any]]:
    """(line number, object) for each non-blank line. A line that is not a JSON object raises ``error``
    naming file and line, or with ``keep_bad`` is yielded as a ``BadLine`` for the caller to count."""
    with Path(path).open(encoding="utf-8", errors=errors) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                detail = "" if isinstance(row, dict) else f"expected a JSON object, got {type(row).__name__}"
            except json.JSONDecodeError as exc:
                detail = f"not valid JSON ({exc.msg} at column {exc.colno})"
            if not detail:
                yield lineno, row
            elif keep_bad:
                yield lineno, BadLine(detail)
            else:
                raise error(f"{path}:{lineno}: {detail}; fix or remove the line")


def read_rows(path: Path) -> list[dict]:
    """Rows of a .jsonl or .parquet file; a missing, empty or malformed file raises InputError."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            rows = pq.read_table(path).to_pylist()
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for unreadable files
            raise InputError(f"{path}: not a readable parquet file ({exc})") from None
    else:
        rows = [row for _, row in iter_jsonl(path)]
    if not rows:
        raise InputError(f"{path}: no records")
    return rows


def parse(model: type[M], rows: list[dict], source: str = "input") -> list[M]:
    """Validate rows as ``model``; the first bad one raises InputError with its id and the problem."""
    out = []
    for i, row in enumerate(rows):
        if isinstance(row, model):
            out.append(row)
            continue
        try:
            out.append(model.model_validate(row))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            rid = row.get("id", f"#{i}") if isinstance(row, dict) else f"#{i}"
            raise InputError(
                f"{source}: record {rid}: {where}: {first['msg']} (expected a {model.__name__})"
            ) from None
    return out
