"""One HTML page -> ``RawArticle`` or a counted ``Skip``: the extraction path chosen by bench_extraction.

Measured on tests/fixtures/realpages (72 public pages, de/en/fr/es and five more languages):
trafilatura gives the main text (lead/last paragraph recall well above news-please's, ~5x faster),
htmldate the publication date (original date, extensive search; news-please dated a page showing
only "5:11 AM" with the day of the run), and ``html.page_title`` the headline. news-please stays the
reader of its own JSON lines (``read_jsonl``) and is kept here as the ``newsplease`` extractor that the
bench compares against.

Everything a worker process needs is in ``Page`` (picklable), so ``extract_item`` runs in a process pool
with the output order of the input (babelrag.executor).
"""
from __future__ import annotations

import datetime as dt
import logging
import re
from typing import Any

from .html import (UndecodablePage, article_paragraphs, canonical_url, dateline_day, decode_page, lead_paragraphs,
                   other_stories_text, page_title, without_hidden_lines, without_related, without_trailing_teasers)
from .dates import DateHints
from .page import Page
from .items import RawArticle, Skip, parse_date, stable_id

# the upper bound htmldate checks dates against when the fetch time is unknown: a fixed date, never the
# clock, so the same page gives the same date on every day it is ingested
LATEST_DATE = dt.date(2099, 12, 31)
EARLIEST_DATE = dt.date(1995, 1, 1)


def _quiet_libraries() -> None:
    for name in ("trafilatura", "htmldate", "newsplease", "readability", "charset_normalizer"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _trafilatura(html: str, url: str, precision: bool) -> str:
    import trafilatura

    _quiet_libraries()
    text = trafilatura.extract(html, url=url or None, include_comments=False, include_tables=True,
                               favor_precision=precision, with_metadata=False, deduplicate=False, output_format="txt")
    return (text or "").strip()


def main_text(html: str, url: str, tree=None) -> str:
    """trafilatura's main text: paragraphs joined by newlines, no comments.

    ``favor_precision`` keeps menus and side boxes out, but on some long articles it keeps only the part
    before an inline box (1,083 of 7,015 characters on one page): when its text is less than half of the
    page's article paragraphs (``tree`` given), the default extraction is run too and taken when it is at
    least twice as long, holds the precise text and adds paragraphs (not form labels or link lists)."""
    text = _trafilatura(html, url, precision=True)
    if tree is None or not text:
        return text
    paragraphs = article_paragraphs(tree)
    # a page without <p> paragraphs (text in <div>s and <br>s) can't be measured: there only a precise
    # text too short to be an article (a date line, a browser warning) is a reason to look further
    if len(text) < (0.5 * sum(len(p) for p in paragraphs) if paragraphs else _NO_ARTICLE_CHARS):
        fuller = _trafilatura(html, url, precision=False)
        if len(fuller) >= 2 * len(text) and _same_article_longer(fuller, text, paragraphs):
            return fuller
    return text


_NO_ARTICLE_CHARS = 200


def _same_article_longer(fuller: str, text: str, paragraphs: list[str]) -> bool:
    """``fuller`` holds most of ``text`` (by characters: the same article, not another block; a precise
    text too short to be an article holds nothing to compare) and what it adds is mostly the page's article
    paragraphs (``html.article_paragraphs``), or, on a page without ``<p>`` paragraphs, long lines of prose
    - not form labels and link lists."""
    norm = lambda line: " ".join(line.split())  # noqa: E731
    have = norm(fuller)
    lines = [norm(line) for line in text.split("\n") if len(line.strip()) >= 20]
    if len(text) >= _NO_ARTICLE_CHARS and sum(len(line) for line in lines if line in have) < 0.8 * sum(map(len, lines)):
        return False
    known = {norm(line) for line in text.split("\n")}
    added = [line for line in map(norm, fuller.split("\n")) if line and line not in known]
    page = "\n".join(paragraphs)
    added_chars = sum(len(line) for line in added)
    return added_chars > 0 and sum(len(line) for line in added
                                   if len(line) >= 80 and (line in page or not paragraphs)) >= 0.6 * added_chars


# what a kicker leaves before the headline on the ``<h1>``'s line: ``Strompreisbremse – Erlösabschöpfung: ``,
# ``Nach Corona-Lockerungen `` (a dachzeile span and the headline span, no separator)
_KICKER_LINE = re.compile(r".{2,60}?(?::|\s[-–—|])? ")


def without_headline(text: str, title: str) -> str:
    """trafilatura keeps the ``<h1>`` as the first line, with its kicker when it has one ("Kicker: Headline");
    the article text starts after the headline."""
    lines = text.split("\n")
    key = " ".join(title.split())
    while lines and key and ((first := " ".join(lines[0].split())) == key
                             or first.endswith(key) and _KICKER_LINE.fullmatch(first[: -len(key)])):
        lines.pop(0)
    return "\n".join(lines).strip()


def with_lead(tree, text: str, title: str = "") -> str:
    """``text`` with the lead/teaser paragraphs the extractor dropped put in front (html.lead_paragraphs)."""
    if tree is None or not text:
        return text
    leads = lead_paragraphs(tree, text, title)
    return "\n".join([*leads, text]) if leads else text


# image markup: upload paths (/uploads/2015/03/foto.jpg) date the picture, not the article
_IMAGE_MARKUP = re.compile(
    r"""<(?:img|source)\b[^>]*>|<meta\b[^>]*(?:og:image|twitter:image|thumbnail)[^>]*>|"""
    r"""<link\b[^>]*\brel\s*=\s*["']?(?:image_src|preload)[^>]*>""", re.IGNORECASE)


def publication_date(html: str, url: str, latest: dt.date | None = None, tree=None) -> dt.date | None:
    """htmldate's original (published, not modified) date; None when the page carries none.

    ``original_date`` prefers the publication over the modification date; the bounds are fixed dates
    (or the fetch day), never the clock; image markup is removed first (upload paths are not article dates)
    and so are lists of other stories (a related-story teaser's ``<span class="date">`` dates another
    article). ``tree``: the page already parsed (``parse_tree(html)``); it is changed in place."""
    from htmldate import find_date

    _quiet_libraries()
    # a day of slack: the page states its date in its own time zone, the WARC-Date is UTC
    latest = latest + dt.timedelta(days=1) if latest else LATEST_DATE
    if tree is None:
        html = _IMAGE_MARKUP.sub(" ", html)
        tree = parse_tree(html)
    else:
        _drop_image_markup(tree)
    document = without_related(tree) if tree is not None else html
    found = None
    # markup and URL first (fast); the slow search through the text only when they hold no date
    for extensive in (False, True):
        try:
            found = find_date(document, url=url or None, original_date=True, extensive_search=extensive,
                              outputformat="%Y-%m-%d", min_date=EARLIEST_DATE.isoformat(),
                              max_date=latest.isoformat())
        except Exception:  # htmldate raises on odd markup (deep trees, bad encodings)
            found = None
        if found:
            break
        day = dateline_day(document) if tree is not None else None
        if day is not None and EARLIEST_DATE <= day <= latest:
            return day  # the text's own dateline, before a search of the text that takes its oldest date
    return parse_date(found)


def modified_date(html: str, url: str, latest: dt.date | None = None) -> dt.date | None:
    """htmldate's most recent date of the page (``original_date=False``: a modification date counts), for
    ``corpus.undated: infer`` on a page without a publication date; image markup removed as above."""
    from htmldate import find_date

    _quiet_libraries()
    latest = latest + dt.timedelta(days=1) if latest else LATEST_DATE
    try:
        found = find_date(_IMAGE_MARKUP.sub(" ", html), url=url or None, original_date=False, extensive_search=False,
                          outputformat="%Y-%m-%d", min_date=EARLIEST_DATE.isoformat(), max_date=latest.isoformat())
    except Exception:  # htmldate raises on odd markup
        return None
    return parse_date(found)


def _drop_image_markup(tree) -> None:
    """What ``_IMAGE_MARKUP`` removes from the text, removed from a parsed page."""
    for el in tree.xpath("//img | //source | //meta | //link"):
        values = " ".join(el.attrib.values())
        if el.tag in ("img", "source") or (el.tag == "meta" and re.search("og:image|twitter:image|thumbnail", values, re.I)) \
                or (el.tag == "link" and re.match(r"\s*(?:image_src|preload)", el.get("rel", ""), re.I)):
            el.drop_tree()


def parse_tree(html: str):
    from lxml import html as lxml_html

    try:
        return lxml_html.fromstring(html)
    except Exception:  # lxml raises on empty or non-HTML documents
        return None


def headline(html: str, url: str, tree=None) -> str:
    tree = tree if tree is not None else parse_tree(html)
    return page_title(tree, url) if tree is not None else ""


def article_from_html(body: bytes | str, url: str = "", content_type: str = "", *, where: str = "",
                      source: str = "", fetched: dt.date | None = None, modified: dt.date | None = None,
                      infer_dates: bool = False, record_id: str = "") -> RawArticle | Skip:
    """Decode (charset from the HTTP header, ``<meta>`` or detection; a page no encoding decodes strictly is
    the skip ``undecodable-page``; a UTF-8 page declaring a legacy charset is read as UTF-8 and its article
    carries ``mislabelled_charset``), find the URL (given, else the canonical link), then headline, main text
    and publication date. ``infer_dates`` (``corpus.undated: infer``): a page without a publication date also
    gets its modification date looked for (``hints``)."""
    try:
        page = decode_page(body, content_type)
    except UndecodablePage as exc:
        named = " ".join(part for part in (record_id, url) if part)
        return Skip("undecodable-page", where, f"{named}: {exc}" if named else str(exc))
    html = page.text
    url = url or canonical_url(html)
    if not url:
        return Skip("no-url", where, "not in the URL map and no usable <link rel=canonical>")
    tree = parse_tree(html)
    try:
        text = main_text(html, url, tree)
    except Exception as exc:  # the extractor stack raises anything on odd markup
        return Skip("extract-failed", where, f"{type(exc).__name__}: {exc}"[:300])
    if not text:
        return Skip("no-article-text", where, url)
    title = headline(html, url, tree)
    text = without_headline(text, title)
    text = with_lead(tree, without_hidden_lines(text, tree) if tree is not None else text, title)
    if tree is not None:  # teasers of other stories that the extractor appended to the article
        text = without_trailing_teasers(text, other_stories_text(tree))
    if not text:
        return Skip("no-article-text", where, f"{url}: only the headline")
    if not title:
        return Skip("no-title", where, url)
    published = publication_date(html, url, latest=fetched, tree=tree)  # the last use of ``tree``
    hints = DateHints(modified=modified, fetched=fetched)
    if published is None and infer_dates:
        hints.modified = modified_date(html, url, latest=fetched) or modified
    return RawArticle(id=stable_id(url), title=title, text=text, published=published, url=url,
                      source=source or where, hints=hints,
                      mislabelled_charset=(page.declared or "") if page.mislabelled else "")


def extract_item(item: Page | Any, infer_dates: bool = False) -> Any:
    """Pool task: a ``Page`` becomes an article or a skip; anything else (a reader's Skip) passes through."""
    if isinstance(item, Page):
        return article_from_html(item.body, item.url, item.content_type, where=item.where, source=item.source,
                                 fetched=item.fetched, modified=item.modified, infer_dates=infer_dates,
                                 record_id=item.record_id)
    return item


# imported once in the process pool's server instead of in every worker (babelrag.executor)
extract_item.preload_modules = ("lxml.html", "trafilatura", "htmldate", "charset_normalizer",  # type: ignore[attr-defined]
                                 "babelrag.construct.ingest.warmup")


def newsplease_fields(html: str, url: str) -> dict[str, Any]:
    """news-please's title/text/date for the same page (the bench's baseline extractor)."""
    from newsplease import NewsPlease

    _quiet_libraries()
    article = NewsPlease.from_html(html, url=url, fetch_images=False)
    return {"title": getattr(article, "title", None), "maintext": getattr(article, "maintext", None),
            "date_publish": getattr(article, "date_publish", None), "language": getattr(article, "language", None),
            "url": getattr(article, "url", None)}
