"""One HTML page's bytes -> text, canonical URL and headline, the parts the extractors get wrong.

Why our own code for these three: on real pages (tests/fixtures/realpages) the libraries decoded every file
as UTF-8 whatever its charset, broke on relative or entity-encoded canonical links, took Angular
``ng-href="{{...}}"`` templates as URLs, and cut headlines at the first hyphen ("Internet-User" ->
"User ...") or returned the site name. See docs/construct.md, "Extraction from HTML".
"""
from __future__ import annotations

import codecs
import html as htmllib
import json
import re
from urllib.parse import urljoin, urlsplit

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([-\w:.]+)""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([-\w:.]+)""", re.IGNORECASE)
_CANONICAL = re.compile(r"""<link\b[^>]*\brel\s*=\s*["']?canonical["']?[^>]*>""", re.IGNORECASE)
# ``\s`` before ``href`` so that ``ng-href=`` / ``data-href=`` (templates, lazy loaders) never match
_HREF = re.compile(r"""(?:^|\s)href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.IGNORECASE)
_TEMPLATE = re.compile(r"\{\{|\}\}|\{%|%\}|\$\{")
_TITLE_SEPARATORS = re.compile(r"\s+(?:[|–—·•»>:]|-|::|/)\s+|\s*\|\s*")
# WHATWG: these labels mean windows-1252 in HTML (iso-8859-1 pages use 0x80-0x9f for curly quotes etc.)
_LATIN1_LABELS = {"iso-8859-1", "iso8859-1", "latin1", "latin-1", "us-ascii", "ascii", "l1", "cp819"}


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in _LATIN1_LABELS:
        return "cp1252"
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def charset_from_content_type(content_type: str | None) -> str | None:
    """The codec named by an HTTP ``Content-Type`` header (``text/html; charset=ISO-8859-1``), or None."""
    m = _HEADER_CHARSET.search(content_type or "")
    return _codec(m.group(1)) if m else None


def decode_html(body: bytes | str, content_type: str | None = None) -> tuple[str, str]:
    """``(text, codec)``: byte-order mark, then the HTTP header's charset, then ``<meta charset>`` /
    ``http-equiv``, then statistical detection (charset-normalizer); UTF-8 with replacement last."""
    if isinstance(body, str):
        return body, "str"
    for bom, name in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if body.startswith(bom):
            return body.decode(name, errors="replace"), name
    declared = charset_from_content_type(content_type)
    if declared is None:
        m = _META_CHARSET.search(body[:8192])
        declared = _codec(m.group(1).decode("ascii", "replace")) if m else None
    if declared and declared.startswith("utf-16"):
        declared = "utf-8"  # a meta tag readable as ASCII cannot be UTF-16 (WHATWG rule)
    if declared:
        return body.decode(declared, errors="replace"), declared
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(body[:200_000]).best()
    name = _codec(best.encoding) if best is not None else None
    name = name or "utf-8"
    return body.decode(name, errors="replace"), name


def canonical_url(html: str, page_url: str = "") -> str:
    """The page's ``<link rel=canonical href=...>``: entity-decoded, resolved against ``page_url``
    (relative and scheme-relative links), templated values (``{{...}}``) ignored; '' when none is usable."""
    for tag in _CANONICAL.findall(html[:300_000]):
        m = _HREF.search(tag)
        if not m:
            continue
        href = htmllib.unescape(next(g for g in m.groups() if g is not None)).strip()
        if not href or _TEMPLATE.search(href):
            continue
        url = urljoin(page_url, href) if page_url else href
        if urlsplit(url).scheme in ("http", "https") and urlsplit(url).netloc:
            return url
    return ""


def _clean(text: str | None) -> str:
    return " ".join(htmllib.unescape(text or "").replace("\xad", "").split())


def _jsonld_headlines(tree) -> list[str]:
    out: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            kind = node.get("@type")
            kinds = kind if isinstance(kind, list) else [kind]
            if any(isinstance(k, str) and ("Article" in k or k in ("BlogPosting", "Report")) for k in kinds):
                for key in ("headline", "name"):
                    if isinstance(node.get(key), str):
                        out.append(node[key])
                        break
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for script in tree.xpath('//script[@type="application/ld+json"]'):
        try:
            walk(json.loads(script.text or ""))
        except (ValueError, RecursionError):
            continue
    return out


def _meta(tree, *names: str) -> list[str]:
    out = []
    for name in names:
        for value in tree.xpath(f'//meta[@property="{name}" or @name="{name}"]/@content'):
            out.append(value)
    return out


def _site_words(url: str, site_names: list[str]) -> set[str]:
    host = urlsplit(url).netloc.lower().split(":")[0]
    host = host[4:] if host.startswith("www.") else host
    words = {host, host.split(".")[0]}
    words.update(_norm_key(s) for s in site_names if s)
    return {w for w in words if w}


def _norm_key(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def _strip_site_name(title: str, site_words: set[str]) -> str:
    """``Headline - Site`` / ``Site | Headline`` -> ``Headline``; splits only at spaced separators, so
    ``Internet-User`` or ``t-distributed`` stay whole."""
    parts = [p for p in _TITLE_SEPARATORS.split(title) if p.strip()]
    if len(parts) < 2:
        return title
    keep = [p for p in parts if not _is_site_part(p, site_words)]
    if not keep or len(keep) == len(parts):
        return title
    if len(keep) == 1:
        return keep[0].strip()
    # several non-site parts left (e.g. "Section - Headline - Site"): keep the longest contiguous text
    return max(keep, key=len).strip()


def _is_site_part(part: str, site_words: set[str]) -> bool:
    """``CNET.de``, ``Rosa-Luxemburg-Stiftung``, ``| TagesWoche``: a part naming the site (host or
    ``og:site_name``), possibly with a few more characters ("Harper's Magazine" for harpers.org)."""
    key = _norm_key(part)
    if not key:
        return True
    for word in site_words:
        site = _norm_key(word)
        if len(site) < 4 or len(key) < 3:
            if key == site:
                return True
        elif key in site or (site in key and len(key) <= len(site) + 9):
            return True
    return False


_KICKER = re.compile(r"kicker|dachzeile|topline|overline|eyebrow|roofline|super-?title|visually-hidden|sr-only|"
                     r"screen-reader", re.IGNORECASE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _heading_text(h1) -> str:
    """An ``<h1>``'s text without its kicker/roof line (``<span class="dachzeile">``) and hidden parts."""
    parts: list[str] = []

    def walk(node) -> None:
        parts.append(node.text or "")
        for child in node:
            if isinstance(child.tag, str) and not _KICKER.search(f"{child.get('class', '')} {child.get('id', '')}"):
                walk(child)
            parts.append(child.tail or "")

    walk(h1)
    return _clean(" ".join(parts))


def _strip_cjk_site(title: str) -> str:
    """CJK titles put the site after an unspaced ``-``/``_``/``|``: ``标题-新华网`` -> ``标题``."""
    if not _CJK.search(title):
        return title
    parts = re.split(r"[-_|｜]", title)
    if len(parts) > 1 and len(parts[-1].strip()) <= 10 and len(parts[0].strip()) > len(parts[-1].strip()):
        return "-".join(parts[:-1]).strip() if len(parts) > 2 and len(parts[-2]) > 10 else parts[0].strip()
    return title


def page_title(tree, url: str) -> str:
    """The headline. An ``<h1>`` that the page's metadata titles (``og:title``, JSON-LD ``headline``,
    ``twitter:title``, ``<title>``) also contain wins; else the first metadata title with the site name
    removed; else the first ``<h1>``."""
    metas = [_clean(t) for t in (_meta(tree, "og:title") + _jsonld_headlines(tree) + _meta(tree, "twitter:title")
                                 + tree.xpath("//title/text()")[:1])]
    metas = [m for m in metas if m]
    h1s = [_heading_text(h) for h in tree.xpath("//h1")[:5]]
    h1s = [h for h in h1s if len(h) >= 3]
    meta_keys = [_norm_key(m) for m in metas]
    for h in h1s:
        hk = _norm_key(h)
        if len(hk) >= 3 and any(hk == mk or (hk in mk and len(hk) >= 0.3 * len(mk)) for mk in meta_keys):
            return h
    site = _site_words(url, [_clean(s) for s in _meta(tree, "og:site_name", "application-name")])
    stripped = [_strip_cjk_site(_strip_site_name(m, site)) for m in metas]
    stripped = [m for m in stripped if m]
    if stripped:
        first = stripped[0]
        # a metadata title cut short (an unescaped quote ended the attribute) is a prefix of a longer one
        longer = [m for m in stripped[1:] if len(m) > len(first) and m.startswith(first.rstrip())
                  and not re.match(r"\s*(?:[|–—·•»>:/-]|::)", m[len(first.rstrip()):])]  # not "Title - Site"
        return longer[0] if longer else first
    return h1s[0] if h1s else ""


_LEAD = re.compile(r"lead|teaser|intro|chapo|chapeau|preface|deck|standfirst|summary|excerpt|abstract|"
                   r"subtitle|subline|faits|editors?[-_]?note", re.IGNORECASE)


def lead_paragraphs(tree, main_text: str, title: str = "") -> list[str]:
    """Lead/teaser paragraphs that the main-text extractor left out.

    News pages put the lead between the headline and the body in its own block (``div.teaser-text``,
    ``p.story-lead-text``, ``header > h2``, ``div.chapo``); trafilatura often drops it. Taken only from
    between the headline (the last ``<h1>`` or element reading exactly ``title`` before the body) and the
    element where the extracted text starts, and only from blocks marked as lead (class/id) or inside the
    article ``<header>``, so teasers of other articles (sidebars, lists after the body) are never picked up.
    """
    norm = lambda text: " ".join((text or "").split())  # noqa: E731
    title_key = norm(title)
    paragraphs = [p for p in main_text.split("\n") if len(p.strip()) >= 20 and norm(p) != title_key]
    elements = [el for el in tree.iter() if isinstance(el.tag, str)]
    anchors = [i for i, el in enumerate(elements)
               if el.tag == "h1" or (title_key and el.tag not in ("title", "meta", "script") and norm(el.text) == title_key)]
    if not anchors or not paragraphs:
        return []
    body_at = None
    for para in paragraphs[:3]:  # the first paragraph may be split over inline elements: try the next ones
        key = norm(para)[:16]
        body_at = next((i for i in range(anchors[0] + 1, len(elements)) if key in norm(elements[i].text)), None)
        if body_at is not None:
            break
    if body_at is None:
        return []
    start = max(a for a in anchors if a < body_at)
    have = norm(main_text)
    found: list[str] = []
    for i in range(start + 1, body_at):
        el = elements[i]
        if el.tag in ("script", "style", "a", "nav", "figure", "figcaption", "button"):
            continue
        marked = _LEAD.search(f"{el.get('class', '')} {el.get('id', '')}")
        in_header = el.tag in ("h2", "p") and any(a.tag in ("header", "hgroup") for a in el.iterancestors())
        if not (marked or in_header):
            continue
        text = norm(el.text_content())
        if not 30 <= len(text) <= 1500 or text in have or any(text in f or f in text for f in found):
            continue
        found.append(text)
    return found
