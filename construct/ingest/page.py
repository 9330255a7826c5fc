"""``Page``: one HTML document between reading and extraction.

The readers (HTML folders, WARC files) make pages and the extractor turns them into articles; the type
lives here so neither module imports the other for it. It is picklable: a process pool gets pages.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass
class Page:
    """One HTML document waiting for extraction."""
    body: bytes
    url: str = ""             # from the URL map / WARC-Target-URI; '' = take the canonical link
    where: str = ""           # file or file#record, for skips
    source: str = ""          # input file the article came from
    content_type: str = ""    # HTTP Content-Type header (WARC), carries the charset
    fetched: dt.date | None = None  # WARC-Date: a page cannot be published after it was fetched
    modified: dt.date | None = None  # the HTTP Last-Modified header (WARC): a hint for corpus.undated: infer
    record_id: str = ""       # WARC-Record-ID, named in skips
