"""Loaders that read external benchmark files into our records, validating strictly.

Every problem names the file and the line (or record) and what is expected; all problems of a file are
reported together (up to ``MAX_PROBLEMS``) as one InputError, so a user fixes them in one pass.
"""
from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from babelrag.errors import InputError
from babelrag.rows import BadLine, iter_jsonl

MAX_PROBLEMS = 20
_DATE_LABEL = re.compile(r"^\s*(?:(?:(?:first\s+)?published|updated|posted|last\s+modified)(?:\s+date)?|date)"
                         r"\s*(?:on|:)?\s*", re.IGNORECASE)
# what the published files write where a passage has no date: read as "no date" and counted, not guessed
NO_DATE = frozenset({"", "n/a", "na", "none", "null", "unknown", "not defined", "not available", "undefined", "-",
                     "--", "nan"})
_YMD = re.compile(r"^(\d{4})[-/](\d{1,2})[-/](\d{1,2})")
_TEXT_FORMATS = ("%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y")


class Problems:
    """Collects ``file:line: message`` problems and raises them as one InputError."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{self.source}:{where}: {message}")

    def raise_if_any(self) -> None:
        if self.items:
            extra = f"\n... and {len(self.items) - MAX_PROBLEMS} more" if len(self.items) > MAX_PROBLEMS else ""
            raise InputError(f"{len(self.items)} invalid record(s) in {self.source}:\n" +
                             "\n".join(self.items[:MAX_PROBLEMS]) + extra)


def read_jsonl(path, problems: Problems):  # noqa: ANN001, ANN201 - yields (line number, object)
    """Yield (line number, dict) for each non-empty line; bad JSON / non-objects become problems."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    for n, obj in iter_jsonl(path, keep_bad=True):
        if isinstance(obj, BadLine):
            problems.add(f"{n}", obj.detail)
            continue
        yield n, obj


def is_no_date(raw: str) -> bool:
    """True when the date string says there is no date (``N/A``, ``not defined``, ``Published date: N/A``, "")."""
    return _DATE_LABEL.sub("", str(raw or "")).strip().rstrip(".").lower() in NO_DATE


def iso_date(raw: str) -> str:
    """``YYYY-MM-DD`` from a published date string, "" when it holds none.

    Accepts ISO dates/datetimes and common English forms (``March 5, 2023``, ``5 Mar 2023``,
    ``2023/03/05``), optionally after a label such as ``Published`` / ``Updated:`` / ``Published on`` /
    ``Published date:``. ``is_no_date`` tells "no date given" (``N/A``) from an unreadable one.
    """
    text = _DATE_LABEL.sub("", str(raw or "")).strip().rstrip(".")
    if not text:
        return ""
    m = _YMD.match(text)
    if m:
        try:
            return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))).isoformat()
        except ValueError:
            return ""
    words = " ".join(text.replace(",", ", ").replace(".", " ").split()).replace(" ,", ",").split(" ")
    for fmt in _TEXT_FORMATS:
        try:
            return dt.datetime.strptime(" ".join(words[:3]).rstrip(","), fmt).date().isoformat()
        except ValueError:
            continue
    return ""
