"""Reading record files a user hands over (JSONL or parquet) with errors that name file, line and record.

Stages read their own inputs through the store; these helpers are for files from outside a build:
annotation exports, reviewed records, event lists, gazetteers.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, TypeVar

from pydantic import BaseModel, ValidationError

from babelrag.errors import BabelragError, InputError
from babelrag.parquet_io import read_rows as read_parquet_rows
from babelrag.text_input import Encoding, TextLines

M = TypeVar("M", bound=BaseModel)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # a JSON escape of a UTF-16 surrogate half


@dataclass(frozen=True)
class BadLine:
    """A line of a JSONL file that is not a JSON object (what ``iter_jsonl(..., keep_bad=True)`` yields).
    ``kind``: "bad-json" or "lone-surrogate" (the reason a counting caller files it under)."""

    detail: str
    kind: str = "bad-json"


def iter_jsonl(path: Path, error: type[BabelragError] = InputError, keep_bad: bool = False,
               on_encoding: Optional[Callable[[Path, Encoding], None]] = None,
               surrogates: bool = True) -> Iterator[tuple[int, Any]]:
    """(line number, object) for each non-blank line, decoded by ``text_input.TextLines`` (UTF-8 with or
    without a byte-order mark, UTF-16 with one, a detected legacy encoding; an undecodable file raises
    ``error`` naming file, line and byte). A line that is not a JSON object, or holds a lone UTF-16
    surrogate (``"\\ud800"``: no UTF-8 writer can store it), raises ``error`` naming file and line, or
    with ``keep_bad`` is yielded as a ``BadLine`` for the caller to count. ``surrogates=False`` leaves
    surrogates to a caller that checks every record and reports them together (annotate push)."""
    for lineno, line in TextLines(path, error, on_encoding):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            detail = "" if isinstance(row, dict) else f"expected a JSON object, got {type(row).__name__}"
        except json.JSONDecodeError as exc:
            detail = f"not valid JSON ({exc.msg} at column {exc.colno})"
        kind = "bad-json"
        if not detail and surrogates and _SURROGATE_ESCAPE.search(line):
            detail, kind = lone_surrogate(row), "lone-surrogate"
        if not detail:
            yield lineno, row
        elif keep_bad:
            yield lineno, BadLine(detail, kind)
        else:
            raise error(f"{path}:{lineno}: {detail}; fix or remove the line")


def lone_surrogate(value: Any, where: str = "") -> str:
    """'' or what names the first string (key or value) holding half of a UTF-16 surrogate pair."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")  # fails on surrogates only
        except UnicodeEncodeError as exc:
            return (f"{where or 'value'} holds a lone surrogate \\u{ord(value[exc.start]):04x} (half of a UTF-16 "
                    f"pair, not a character)")
        return ""
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{where}.{key}" if where else f"field {key!r}"
            found = lone_surrogate(key, f"a key in {where or 'the record'}") or lone_surrogate(item, name)
            if found:
                return found
    elif isinstance(value, list):
        for k, item in enumerate(value):
            found = lone_surrogate(item, f"{where or 'value'}[{k}]")
            if found:
                return found
    return ""


def read_rows(path: Path, surrogates: bool = True) -> list[dict]:
    """Rows of a .jsonl or .parquet file; a missing, empty or malformed file raises InputError (a JSONL line
    holding a lone surrogate too, unless ``surrogates=False``: the caller checks every record itself)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.suffix == ".parquet":
        rows = read_parquet_rows(path)
    else:
        rows = [row for _, row in iter_jsonl(path, surrogates=surrogates)]
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
