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
from babelrag.parquet_io import read_rows as read_parquet_rows

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class BadLine:
    """A line of a JSONL file that is not a JSON object (what ``iter_jsonl(..., keep_bad=True)`` yields)."""

    detail: str


def iter_jsonl(path: Path, error: type[BabelragError] = InputError, keep_bad: bool = False,
               errors: str = "strict") -> Iterator[tuple[int, Any]]:
    """(line number, object) for each non-blank line. A line that is not UTF-8 (with ``errors="strict"``)
    or not a JSON object raises ``error`` naming file and line, or with ``keep_bad`` is yielded as a
    ``BadLine`` for the caller to count. Lines are decoded one at a time, so the error names the line."""
    with Path(path).open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8", errors=errors)
            except UnicodeDecodeError as exc:
                detail = (f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); re-save the file as "
                          "UTF-8, e.g. `iconv -f latin1 -t utf-8 IN > OUT` for a Latin-1 file")
                if keep_bad:
                    yield lineno, BadLine(detail)
                    continue
                raise error(f"{path}:{lineno}: {detail}") from None
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
        rows = read_parquet_rows(path)
    else:
        rows = [row for _, row in iter_jsonl(path)]
    if not rows:
        raise InputError(f"{path}: no records")
    return rows


def parse(model: type[M], rows: list[dict], source: str = "input", max_shown: int = 20) -> list[M]:
    """Validate rows as ``model``; every bad row is reported together (id and problem; at most
    ``max_shown`` listed) in one InputError, so a user fixes the file in one pass."""
    out, problems = [], []
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
            problems.append(f"record {rid}: {where}: {first['msg']} (expected a {model.__name__})")
    if problems:
        more = f"; ... and {len(problems) - max_shown} more" if len(problems) > max_shown else ""
        total = f" ({len(problems)} bad records)" if len(problems) > 1 else ""
        raise InputError(f"{source}: " + "; ".join(problems[:max_shown]) + more + total)
    return out
