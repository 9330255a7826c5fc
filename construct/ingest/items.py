"""What reading and extraction yield: an article (``RawArticle``) or a counted ``Skip``, and the small
helpers both use to fill one in (dates, stable ids).

They live apart from the readers so that the extractor, which the WARC reader runs, does not import the
readers back.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from typing import Any, Union

from .dates import DateHints


@dataclass
class RawArticle:
    id: str
    title: str
    text: str
    published: dt.date | None
    url: str = ""
    source: str = ""
    declared_language: str | None = None  # what the input claims (news-please's langdetect); lingua decides
    hints: DateHints = field(default_factory=DateHints)  # corpus.undated: infer reads them (dates.py)
    mislabelled_charset: str = ""  # the wrong charset the page declared (read in the right one; counted)


@dataclass
class Skip:
    reason: str
    where: str = ""
    detail: str = ""


Item = Union[RawArticle, Skip]


def parse_date(value: Any) -> dt.date | None:
    """news-please writes ``2026-03-01 10:00:00``; accept ISO dates/datetimes, return None otherwise."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    text = str(value).strip()
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        return None


def stable_id(*parts: str) -> str:
    return hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]
