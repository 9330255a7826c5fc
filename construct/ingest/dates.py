"""An article's date when it has no publication date of its own (``corpus.undated``).

``drop`` (the default) skips such articles as ``missing-date``; ``keep`` keeps them without a date; ``infer``
takes the first of the page's other signals, in this order of trust: a modification date in the page
(htmldate without ``original_date``; news-please's ``date_modify``), a date in the URL path
(``/2020/03/15/``, ``/2020-03-15/``, ``/20200315/``; a year and month alone give the month's first day), the
day the page was fetched (WARC-Date; news-please's ``date_download``). The source is stored on the article
(``Article.date_source``) and counted in the run report. Freshness never trusts an inferred date
(``Article.fresh_day``); windows only when the curator asks (``corpus.inferred_dates_in_windows``).
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Literal, Optional

from babelrag.records import DateSource

UndatedPolicy = Literal["drop", "keep", "infer"]

# a date as path segments: /2020/03/15/, /2020/3/5/, /2020-03-15, /20200315/; then a year and month: /2020/03/
_URL_DAY = re.compile(r"/((?:19|20)\d\d)([/_-])(0?[1-9]|1[0-2])\2(0?[1-9]|[12]\d|3[01])(?=[/_.-]|$)")
_URL_COMPACT = re.compile(r"/((?:19|20)\d\d)(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=[/_.-]|$)")
_URL_MONTH = re.compile(r"/((?:19|20)\d\d)/(0?[1-9]|1[0-2])(?=/)")


def url_date(url: str, earliest: dt.date, latest: dt.date) -> Optional[dt.date]:
    """The date in a URL's path, or None (query strings and the host are not read: ids there look like dates)."""
    path = re.sub(r"^[a-z]+://[^/]+", "", url or "", flags=re.IGNORECASE).split("?")[0].split("#")[0]
    matched_day = False
    for pattern, has_day in ((_URL_DAY, True), (_URL_COMPACT, True), (_URL_MONTH, False)):
        if not has_day and matched_day:
            break  # /2019/10/24/ out of bounds does not become /2019/10/
        for m in pattern.finditer(path):
            matched_day = matched_day or has_day
            year, month = int(m.group(1)), int(m.group(3) if pattern is _URL_DAY else m.group(2))
            day = int(m.group(4) if pattern is _URL_DAY else m.group(3)) if has_day else 1
            try:
                found = dt.date(year, month, day)
            except ValueError:
                continue
            if earliest <= found <= latest:
                return found
    return None


@dataclass
class DateHints:
    """What a reader knows besides the publication date: the inputs of ``infer``."""

    modified: Optional[dt.date] = None
    fetched: Optional[dt.date] = None


def infer_date(url: str, hints: DateHints, earliest: dt.date, latest: dt.date) -> tuple[Optional[dt.date], DateSource]:
    """(date, source) for an article without a publication date: modified, url, fetched, else (None, "none")."""
    if hints.modified is not None and earliest <= hints.modified <= latest:
        return hints.modified, "modified"
    found = url_date(url, earliest, min(latest, hints.fetched or latest))
    if found is not None:
        return found, "url"
    if hints.fetched is not None:
        return hints.fetched, "fetched"
    return None, "none"
