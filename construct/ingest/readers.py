"""Streaming corpus readers: JSONL (news-please fields), HTML folders and WARC files.

Each reader yields ``RawArticle`` or ``Skip`` one at a time, so nothing holds the corpus in memory.
Bad input (unparsable lines, corrupt WARC records, pages without article text) becomes a ``Skip`` with a
reason that the ingest stage counts; readers never raise on one bad item.
"""
from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Union

from babelrag.errors import InputError
from babelrag.rows import BadLine, iter_jsonl
from babelrag.text_input import Encoding, TextLines

from .dates import DateHints
from .extract import extract_item
from .items import Item, RawArticle, Skip, parse_date, stable_id
from .page import Page
from .warc_records import WarcDamage, iter_warc

OnEncoding = Callable[[Path, Encoding], None]

# news-please fields read here and the JSON types they may have (null everywhere means "not given")
_STRING_FIELDS = ("title", "maintext", "text", "url", "language", "date_publish", "published")


def field_type_problem(data: dict[str, Any]) -> str:
    """'' or what is wrong with the types of the fields read (a number or list where text belongs)."""
    for name in _STRING_FIELDS:
        value = data.get(name)
        if value is not None and not isinstance(value, str):
            return f"field {name!r} must be a string or null, got {type(value).__name__} {json_preview(value)}"
    rid = data.get("id")
    if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (str, int))):
        return f"field 'id' must be a string or an integer, got {type(rid).__name__} {json_preview(rid)}"
    return ""


def json_preview(value: Any, chars: int = 40) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= chars else text[:chars] + "..."


def _article_from_fields(data: dict[str, Any], source: str, where: str = "", fallback_url: str = "") -> Item:
    where = where or source
    problem = field_type_problem(data)
    if problem:
        return Skip("bad-field", where, problem)
    title = (data.get("title") or "").strip()
    text = (data.get("maintext") or data.get("text") or "").strip()
    url = data.get("url") or fallback_url or ""
    if not text:
        return Skip("no-article-text", where, url or title[:80])
    if not title:
        return Skip("no-title", where, url)
    published = parse_date(data.get("date_publish") or data.get("published"))
    art_id = str(data.get("id") or "").strip() or stable_id(url, title)
    lang = data.get("language")
    hints = DateHints(modified=parse_date(data.get("date_modify")), fetched=parse_date(data.get("date_download")))
    return RawArticle(id=art_id, title=title, text=text, published=published, url=url,
                      source=source, declared_language=str(lang) if lang else None, hints=hints)


def read_jsonl(path: Path, on_encoding: OnEncoding | None = None) -> Iterator[Item]:
    """One JSON object per line with news-please fields (id, title, maintext, language, date_publish, url).
    A line that is not a JSON object, holds a lone surrogate or a wrongly typed field is a counted skip
    naming file:line; a file that cannot be decoded is refused (``text_input``)."""
    try:
        for lineno, data in iter_jsonl(path, keep_bad=True, on_encoding=on_encoding):
            if isinstance(data, BadLine):
                yield Skip(data.kind, f"{path}:{lineno}", data.detail)
                continue
            yield _article_from_fields(data, str(path), f"{path}:{lineno}")
    except OSError as exc:
        raise InputError(f"cannot open corpus file {path}: {exc}") from None


def read_url_map(path: Path) -> dict[str, str]:
    """TSV ``file<TAB>url`` (a header line ``file<TAB>url`` is allowed)."""
    mapping: dict[str, str] = {}
    try:
        lines = list(TextLines(path))
    except OSError as exc:
        raise InputError(f"cannot read URL map {path}: {exc}") from None
    for lineno, line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) < 2:
            raise InputError(f"{path}:{lineno}: expected 'file<TAB>url', got {line[:80]!r}")
        name, url = parts[0].strip(), parts[1].strip()
        if lineno == 1 and name.lower() in ("file", "filename", "path") and not url.startswith("http"):
            continue
        mapping[name] = url
    return mapping


def iter_html_pages(folder: Path, url_map: Path | None = None) -> Iterator[Union["Page", Skip]]:
    """Every ``*.html``/``*.htm`` file below ``folder`` as a ``Page`` (bytes; decoding and extraction
    happen in ``extract.extract_item``, possibly in a worker process)."""
    if not folder.is_dir():
        raise InputError(f"HTML corpus folder not found: {folder}")
    urls = read_url_map(url_map) if url_map else {}
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".html", ".htm") and p.is_file())
    for path in files:
        rel = str(path.relative_to(folder))
        try:
            body = path.read_bytes()
        except OSError as exc:
            yield Skip("unreadable-file", str(path), str(exc))
            continue
        yield Page(body=body, url=urls.get(rel) or urls.get(path.name) or "", where=str(path), source=str(path))


WARC_TYPES = {"warcinfo", "response", "resource", "request", "metadata", "revisit", "conversion", "continuation"}


def iter_warc_pages(path: Path) -> Iterator[Union["Page", Skip]]:
    """HTML responses of a WARC file (gzipped per record, as Common Crawl writes them, or uncompressed) as
    ``Page``s. Damage is counted and reading goes on (see ``warc_records``): a broken gzip member is one
    ``corrupt-warc-member``, a record shorter than its Content-Length is ``truncated-record``; other record
    types (warcinfo, request, metadata) are not articles and are not counted."""
    from warcio.archiveiterator import ArchiveIterator

    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot open WARC file {path}: {exc}") from None
    with fh:
        for item in iter_warc(fh):
            where = f"{path}@{item.offset}"
            if isinstance(item, WarcDamage):
                detail = f"{item.length} bytes skipped: {item.detail}" + (f" ({item.url})" if item.url else "")
                yield Skip(item.reason, where, detail[:300])
                continue
            try:
                record = next(iter(ArchiveIterator(io.BytesIO(item.raw))))
            except Exception as exc:  # warcio rejects the header block: nothing else to read in it
                yield Skip("corrupt-warc-record", where, f"{type(exc).__name__}: {exc}"[:300])
                continue
            if record.rec_type not in WARC_TYPES:  # a damaged header, not a record type to ignore
                yield Skip("corrupt-warc-record", where, f"unknown WARC-Type {record.rec_type!r}"[:300])
                continue
            if record.rec_type != "response":
                continue  # warcinfo/request/metadata records are not articles (not counted)
            ctype = ""
            if record.http_headers is not None:
                ctype = (record.http_headers.get_header("Content-Type") or "")
            if "html" not in ctype.lower():
                yield Skip("non-html-record", where, ctype.lower() or "no content type")
                continue
            try:
                page = warc_page(record, where, str(path))
            except Exception as exc:
                yield Skip("corrupt-warc-record", where, f"{type(exc).__name__}: {exc}"[:300])
                continue
            yield page


def warc_page(record: Any, where: str, source: str) -> "Page":
    """One WARC response record -> ``Page``: payload bytes, target URI, HTTP Content-Type (charset)
    and WARC-Date (the fetch day bounds the publication date)."""
    body = record.content_stream().read()
    ctype = ""
    if record.http_headers is not None:
        ctype = record.http_headers.get_header("Content-Type") or ""
    modified = None
    if record.http_headers is not None and (last := record.http_headers.get_header("Last-Modified")):
        modified = http_date(last)
    return Page(body=body, url=record.rec_headers.get_header("WARC-Target-URI") or "", where=where,
                source=source, content_type=ctype, fetched=parse_date(record.rec_headers.get_header("WARC-Date")),
                modified=modified, record_id=record.rec_headers.get_header("WARC-Record-ID") or "")


def http_date(value: str) -> dt.date | None:
    """An HTTP date header (``Last-Modified: Tue, 15 Nov 1994 08:12:31 GMT``) as a date, None if unreadable."""
    from email.utils import parsedate_to_datetime

    try:
        return parsedate_to_datetime(value).date()
    except (TypeError, ValueError, IndexError):
        return None


def read_warc(path: Path) -> Iterator[Item]:
    """WARC file -> articles, in this process (the ingest stage runs the extraction in its executor)."""
    for item in iter_warc_pages(path):
        yield extract_item(item)


def iter_input(path: Path, fmt: str, url_map: Path | None = None,
               on_encoding: OnEncoding | None = None) -> Iterator[Any]:
    """Items before extraction: ``RawArticle``/``Skip`` for JSON lines, ``Page``/``Skip`` for HTML and WARC.
    ``on_encoding(file, encoding)`` hears of each JSONL file read in another encoding than plain UTF-8."""
    if fmt == "jsonl":
        if not path.exists():
            raise InputError(f"corpus file not found: {path} (check corpus.inputs[].path)")
        if path.is_dir():
            for child in sorted(path.glob("*.jsonl")):
                yield from read_jsonl(child, on_encoding)
            return
        yield from read_jsonl(path, on_encoding)
    elif fmt == "html":
        yield from iter_html_pages(path, url_map)
    elif fmt == "warc":
        if not path.exists():
            raise InputError(f"WARC file not found: {path} (check corpus.inputs[].path)")
        files = sorted(path.glob("*.warc*")) if path.is_dir() else [path]
        for f in files:
            yield from iter_warc_pages(f)
    else:  # config validation prevents this
        raise InputError(f"unknown corpus format {fmt!r}")
