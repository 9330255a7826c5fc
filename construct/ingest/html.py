"""One HTML page's bytes -> text, canonical URL and headline, the parts the extractors get wrong.

Why our own code for these three: on real pages (tests/fixtures/realpages) the libraries decoded every file
as UTF-8 whatever its charset, broke on relative or entity-encoded canonical links, took Angular
``ng-href="{{...}}"`` templates as URLs, and cut headlines at the first hyphen ("Internet-User" ->
"User ...") or returned the site name. See docs/construct.md, "Extraction from HTML".
"""
from __future__ import annotations

import codecs
import datetime as dt
import html as htmllib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urljoin, urlsplit

from babelrag.text_input import SAMPLE_BYTES, detect
from babelrag.text_input import codec_name as _codec

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([-\w:.]+)""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([-\w:.]+)""", re.IGNORECASE)
_CANONICAL = re.compile(r"""<link\b[^>]*\brel\s*=\s*["']?canonical["']?[^>]*>""", re.IGNORECASE)
# ``\s`` before ``href`` so that ``ng-href=`` / ``data-href=`` (templates, lazy loaders) never match
_HREF = re.compile(r"""(?:^|\s)href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.IGNORECASE)
_TEMPLATE = re.compile(r"\{\{|\}\}|\{%|%\}|\$\{")
_TITLE_SEPARATORS = re.compile(r"\s+(?:[|–—·•»>:]|-|::|/)\s+|\s*[|｜]\s*")


def charset_from_content_type(content_type: str | None) -> str | None:
    """The codec named by an HTTP ``Content-Type`` header (``text/html; charset=ISO-8859-1``), or None."""
    m = _HEADER_CHARSET.search(content_type or "")
    return _codec(m.group(1)) if m else None


class UndecodablePage(ValueError):
    """A page whose bytes no single encoding decodes strictly: the ingest stage counts it as the skip
    ``undecodable-page`` (naming the file, or the WARC record and URL) instead of storing U+FFFD."""


def _bad_byte(body: bytes, exc: UnicodeDecodeError, codec: str) -> str:
    return f"byte 0x{body[exc.start]:02x} at offset {exc.start} is not {codec}"


def _utf8_counts(body: bytes) -> tuple[int, int]:
    """(valid multi-byte UTF-8 characters, bytes that are not UTF-8) in ``body``."""
    text = body.decode("utf-8", "surrogateescape")  # each stray byte -> one U+DC80..U+DCFF
    bad = len(_ESCAPED.findall(text))
    return len(_NON_ASCII.findall(text)) - bad, bad


_ESCAPED = re.compile("[\udc80-\udcff]")
_NON_ASCII = re.compile("[^\x00-\x7f]")


@dataclass(frozen=True)
class DecodedPage:
    """A page's text, the codec that decoded it and the charset the page declared (HTTP header or ``<meta>``;
    None when it declared none or has a byte-order mark)."""

    text: str
    codec: str
    declared: str | None = None

    @property
    def mislabelled(self) -> bool:
        """The declared charset was wrong: the page was read in another one (the run report counts these)."""
        return bool(self.declared) and self.codec != self.declared


def decode_html(body: bytes | str, content_type: str | None = None) -> tuple[str, str]:
    """``(text, codec)`` of ``decode_page``."""
    page = decode_page(body, content_type)
    return page.text, page.codec


def decode_page(body: bytes | str, content_type: str | None = None) -> DecodedPage:
    """The page decoded strictly (never ``errors="replace"``: a U+FFFD in a build was in the page).

    Order: byte-order mark; the HTTP header's charset, then ``<meta charset>`` / ``http-equiv``; when none is
    declared or the declared one does not decode the bytes, UTF-8, then the encoding charset-normalizer
    detects (``babelrag.text_input.detect``, the same detector as for JSONL files). A legacy charset that
    decodes the bytes is still not taken when they are UTF-8 (``_utf8_in_disguise``): windows-1252 or
    ISO-8859-1 decode any bytes, and a UTF-8 page labelled so (a template's or server's default) would be
    stored as mojibake ("Ã©" for "é"); it is read as UTF-8 and ``mislabelled``. Raises ``UndecodablePage``
    when

    - the bytes are mostly UTF-8 (at least as many valid multi-byte characters as stray bytes) but not all:
      a UTF-8 page with damaged or mixed-in bytes, which a legacy codec would turn into mojibake;
    - the detector's equally good guesses disagree, or its choice does not decode the page either.
    """
    if isinstance(body, str):
        return DecodedPage(body, "str")
    for bom, name in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if body.startswith(bom):
            try:
                return DecodedPage(body.decode(name), name)
            except UnicodeDecodeError as exc:
                raise UndecodablePage(f"the byte-order mark says {name}, but {_bad_byte(body, exc, name)}") from None
    declared, said = charset_from_content_type(content_type), "HTTP header"
    if declared is None:
        m = _META_CHARSET.search(body[:8192])
        declared, said = (_codec(m.group(1).decode("ascii")) if m else None), "<meta> charset"
    if declared and declared.startswith("utf-16"):
        declared = "utf-8"  # a meta tag readable as ASCII cannot be UTF-16 (WHATWG rule)
    why = ""
    if declared:
        try:
            text = body.decode(declared)
        except UnicodeDecodeError as exc:
            why = f"declared {declared} ({said}), but {_bad_byte(body, exc, declared)}; "
        else:
            if declared == "utf-8" or not _utf8_in_disguise(body):
                return DecodedPage(text, declared, declared)
            why = f"declared {declared} ({said}), but the bytes are UTF-8 (read so, it gives mojibake); "
    try:
        return DecodedPage(body.decode("utf-8"), "utf-8", declared)
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    good, bad = _utf8_counts(body)
    if good >= bad:
        raise UndecodablePage(f"{why}mostly UTF-8 ({good} multi-byte characters) but {bad} byte(s) are not, "
                              f"the first at offset {first_bad} (0x{body[first_bad]:02x})")
    detected, candidates = detect(body[:SAMPLE_BYTES])
    if detected is None:
        guess = f"could be any of {', '.join(dict.fromkeys(candidates))}" if candidates else "could not be detected"
        raise UndecodablePage(f"{why}not UTF-8 and its encoding {guess}")
    try:
        return DecodedPage(body.decode(detected), detected, declared)
    except UnicodeDecodeError as exc:
        raise UndecodablePage(f"{why}detected {detected}, but "
                              f"{_bad_byte(body, exc, detected)}") from None


def _utf8_in_disguise(body: bytes) -> bool:
    """Whether bytes that a declared legacy charset decodes are really UTF-8: valid multi-byte UTF-8
    characters, at least as many as stray bytes. Text in a legacy charset almost never forms them (a
    letter above 0x7F is followed by ASCII, not by continuation bytes 0x80-0xBF); its declared decoding
    would show the typical mojibake pairs ("Ã©", "Ã¼", "â€™"). Mostly but not wholly UTF-8: undecodable."""
    good, bad = _utf8_counts(body)
    return good > 0 and good >= bad


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


_KICKER = re.compile(r"kicker|dachzeile|topline|overline|eyebrow|roofline|roof-line|super-?title", re.IGNORECASE)
# parts a reader never sees: screen-reader separators (``<span class="offscreen">: </span>``) and the like
_HIDDEN = re.compile(r"visually-?hidden|vis-?hidden|sr-only|screen-?reader|off-?screen|invisible|a11y-hidden|"
                     r"(?:^|\s)(?:u-|is-)?hidden(?:\s|$)", re.IGNORECASE)
_HIDDEN_SEPARATOR = re.compile(r"[\s:|｜：–—·•/-]+")
# a headline ends with no separator; ``: Headline`` is what is left of ``Kicker<hidden>: </hidden>Headline``
_EDGE_SEPARATORS = re.compile(r"^[\s:|｜：–—·•/-]+|[\s:|｜：–—·•/-]+$")
# a photo credit after the headline: ``（写真＝ロイター）``, ``(Foto: dpa)``, ``(Photo: Reuters)``
_PHOTO_CREDIT = re.compile(r"\s*[（(]\s*(?:写真|画像|撮影|照片|图|圖|사진|photos?|foto|fotos|bild|image)\s*"
                           r"[＝=:：/／]\s*[^（）()]{1,40}[）)]", re.IGNORECASE)
# the page's own name in a heading: the site logo, not a headline (class/id words: ``hidden-logo``,
# ``site-title``, ``masthead``, ``brand``)
_LOGO_WORD = re.compile(r"\w*logo|logo\w*|brand|branding|masthead|sitetitle|sitename|blogtitle|blogname", re.IGNORECASE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _marks(node) -> str:
    return f"{node.get('class', '')} {node.get('id', '')}"


def _heading_texts(h1) -> list[str]:
    """An ``<h1>``'s readings, best first: without its kicker/roof line (``<span class="dachzeile">``),
    the kicker/roof line alone (some pages put the headline itself in a ``topline`` span), and the
    whole heading; hidden parts never count, except that a hidden separator ends the kicker (and stays
    in the whole heading)."""
    bare: list[str] = []
    kicker: list[str] = []
    whole: list[str] = []
    separator: list[str] = []

    def walk(node, in_kicker: bool) -> None:
        (kicker if in_kicker else bare).append(node.text or "")
        whole.append(node.text or "")
        for child in node:
            if not isinstance(child.tag, str) or child.tag in ("script", "style", "noscript", "template"):
                pass
            elif not _HIDDEN.search(_marks(child)):
                walk(child, in_kicker or bool(_KICKER.search(_marks(child))))
            elif _HIDDEN_SEPARATOR.fullmatch(child.text_content()):
                # ``<span>Kicker</span><span class="invisible">: </span><span>Headline</span>``: what a
                # screen reader hears before the separator is the kicker, whatever its class
                kicker.extend(bare)
                bare.clear()
                separator.append(child.text_content().strip())
            tail = child.tail or ""
            (kicker if in_kicker else bare).append(tail)
            whole.append(tail)

    walk(h1, False)
    if separator:  # "Kicker: Headline", as a screen reader reads it
        whole = [_clean_title(" ".join(kicker)) + (" " if separator[-1] in "-–—|" else "") + separator[-1], *bare]
    out = []
    for parts in (bare, kicker, whole):
        text = _clean_title(" ".join(parts))
        if len(text) >= 3 and text not in out:
            out.append(text)
    return out


def _heading_text(h1) -> str:
    """An ``<h1>``'s text without its kicker/roof line and hidden parts."""
    texts = _heading_texts(h1)
    return texts[0] if texts else ""


def _clean_title(text: str | None) -> str:
    """Whitespace collapsed, a trailing photo credit and separators left at either end removed."""
    text = _PHOTO_CREDIT.sub("", _clean(text))
    return _EDGE_SEPARATORS.sub("", text) or text


def _is_logo_heading(h1, site: set[str], sections: set[str] = frozenset()) -> bool:
    """A site logo or section name marked up as ``<h1>``: logo/brand classes on it or its parents, a link
    to the home page as its only content, a text that is the site's name or the page's
    ``article:section``."""
    if any(_has_word(node, _LOGO_WORD) for node in (h1, *list(h1.iterancestors())[:3])):
        return True
    links = [href.strip() for href in h1.xpath(".//a/@href")]
    home = lambda href: href == "/" or (bool(urlsplit(href).netloc) and urlsplit(href).path in ("", "/"))  # noqa: E731
    if links and all(home(href) for href in links) and not (h1.text or "").strip():
        return True
    text = _heading_text(h1)
    return bool(text) and (_is_site_part(text, site) or _norm_key(text) in sections)


def _strip_cjk_colon_site(title: str, site: set[str]) -> str:
    """``見出し ：日本経済新聞`` -> ``見出し``: a fullwidth colon before the site's name (only then: ``特集：…``
    keeps its colon)."""
    head, colon, tail = title.rpartition("：")
    return head.strip() if colon and head.strip() and _is_site_part(tail, site) else title


def _strip_cjk_site(title: str) -> str:
    """CJK titles put the site after an unspaced ``-``/``_``/``|``: ``标题-新华网`` -> ``标题``."""
    if not _CJK.search(title):
        return title
    parts = re.split(r"[-_|｜]", title)
    if len(parts) > 1 and len(parts[-1].strip()) <= 10 and len(parts[0].strip()) > len(parts[-1].strip()):
        return "-".join(parts[:-1]).strip() if len(parts) > 2 and len(parts[-2]) > 10 else parts[0].strip()
    return title


def page_title(tree, url: str) -> str:
    """The headline. An ``<h1>`` (not the site logo or a section name) that the page's metadata titles (``og:title``,
    JSON-LD ``headline``, ``twitter:title``, ``<title>``) also contain wins; else the first metadata title
    with the site name removed; else the first ``<h1>``. Photo credits ("（写真＝ロイター）") and separators
    left at either end are removed from every candidate."""
    metas = [_clean_title(t) for t in (_meta(tree, "og:title") + _jsonld_headlines(tree) + _meta(tree, "twitter:title")
                                       + tree.xpath("//title/text()")[:1])]
    metas = [m for m in metas if m]
    site = _site_words(url, [_clean(s) for s in _meta(tree, "og:site_name", "application-name")])
    sections = {_norm_key(s) for s in _meta(tree, "article:section") if _norm_key(s)}
    readings = [_heading_texts(h) for h in tree.xpath("//h1")[:5] if not _is_logo_heading(h, site, sections)]
    readings = [r for r in readings if r]
    meta_keys = [_norm_key(m) for m in metas]
    stripped = [_clean_title(_strip_cjk_site(_strip_cjk_colon_site(_strip_site_name(m, site), site))) for m in metas]
    stripped = [m for m in stripped if m]
    for texts in readings:
        for h in texts:
            hk = _norm_key(h)
            if len(hk) >= 3 and any(hk == mk or (hk in mk and len(hk) >= 0.3 * len(mk)) for mk in meta_keys):
                # the <h1> even when the metadata title puts a label before it ("Wahl: <h1>", "News - <h1>",
                # "Pressemitteilung: <h1>"): the page shows the <h1> as its headline
                return h
    if stripped:
        first = stripped[0]
        # a metadata title cut short (an unescaped quote ended the attribute) is a prefix of a longer one
        longer = [m for m in stripped[1:] if len(m) > len(first) and m.startswith(first.rstrip())
                  and not re.match(r"\s*(?:[|｜：–—·•»>:/-]|::)", m[len(first.rstrip()):])]  # not "Title - Site"
        return longer[0] if longer else first
    return readings[0][0] if readings else ""


# a block marked as the article's lead/teaser, in the words news sites use for it (a class or id token:
# ``story-lead-text``, ``articleLead``, ``bajada``, ``perex``, ``chapo``; not ``leaderboard``)
_LEAD_WORD = re.compile(r"[a-z]*?(?:lead|leadin|teaser|intro|introduction|chapo|chapeau|preface|deck|dek|standfirst|strapline|"
                        r"summary|excerpt|abstract|subtitle|subline|subhead|subheadline|subheading|faits|editorsnote|"
                        r"editornote|bajada|copete|entradilla|sumario|perex|vorspann|anriss|sottotitolo|sommario|"
                        r"linhafina|olho)(?:text|paragraph|para|block|wrapper|container|content|copy)?", re.IGNORECASE)
# blocks that are never the lead even inside the article header: ad slots, pop-ups, sign-up boxes
_NOISE_WORD = re.compile(r"ads?|advert\w*|advertisement|banner|promo\w*|sponsor\w*|popup|modal|overlay|dialog|"
                         r"newsletter|subscri\w*|signup|cookies?|consent|paywall|outbrain|taboola|leaderboard|"
                         r"dfp|gpt|billboard", re.IGNORECASE)
_UNSEEN_TAGS = ("script", "style", "noscript", "template", "button", "form", "dialog", "iframe")
_BYLINE = re.compile(r"^(?:by|von|par|por|di|door|from)\s", re.IGNORECASE)


def _tokens(marks: str) -> list[str]:
    """Class/id words: ``story-lead-text articleLead`` -> story, lead, text, article, lead."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", marks)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced) if t]


@lru_cache(maxsize=16384)
def _marks_say(marks: str, word: re.Pattern) -> bool:
    """A class/id word, or two adjacent ones (``editors-note``), is ``word`` (cached: pages repeat classes)."""
    hint = _HINTS.get(word)
    if hint is not None and not hint.search(marks):
        return False  # most class names hold none of the word's letters: no tokenising
    tokens = _tokens(marks)
    return any(word.fullmatch(t) for t in tokens) or any(word.fullmatch(a + b) for a, b in zip(tokens, tokens[1:]))


def _has_word(node, word: re.Pattern) -> bool:
    marks = _marks(node)
    return not marks.isspace() and _marks_say(marks, word)


def _is_noise(node) -> bool:
    return (node.tag in _UNSEEN_TAGS or node.get("role") in ("dialog", "alertdialog") or node.get("aria-modal") == "true"
            or _has_word(node, _NOISE_WORD))


def _visible_text(node, without_noise: bool = False) -> str:
    """The text a reader sees: without ``<script>``/``<style>``/form children (their code is text to lxml);
    ``without_noise``: without ad slots, pop-ups and sign-up boxes inside ``node`` either."""
    parts: list[str] = []

    def walk(el) -> None:
        parts.append(el.text or "")
        for child in el:
            if isinstance(child.tag, str) and child.tag not in _UNSEEN_TAGS and not (without_noise and _is_noise(child)):
                walk(child)
            parts.append(child.tail or "")

    walk(node)
    return " ".join("".join(parts).split())


def _next_element(node):
    """The next sibling element with visible text (empty wrappers and ad slots skipped)."""
    sibling = node.getnext()
    while sibling is not None and (not isinstance(sibling.tag, str) or _is_noise(sibling)
                                   or not _visible_text(sibling)):
        sibling = sibling.getnext()
    return sibling


def _unmarked_teaser(heading) -> object | None:
    """An unmarked teaser: the ``<h2>`` or paragraph right after the headline (a subtitle), not a byline."""
    nxt = _next_element(heading)
    if nxt is None or nxt.tag not in ("h2", "h3", "p"):
        return None
    text = _visible_text(nxt)
    links = sum(len(_visible_text(a)) for a in nxt.iter("a"))
    if len(text) < 50 or _BYLINE.match(text) or links > 0.3 * len(text):
        return None
    return nxt


def lead_paragraphs(tree, main_text: str, title: str = "") -> list[str]:
    """Lead/teaser paragraphs that the main-text extractor left out.

    News pages put the lead between the headline and the body in its own block (``div.teaser-text``,
    ``p.story-lead-text``, ``header > h2``, ``div.chapo``, ``p.bajada``, ``div.perex``) or, unmarked, as the
    ``<h2>``/paragraph right after the ``<h1>``; trafilatura often drops it. Taken only from between the
    headline (the last ``<h1>`` or element reading exactly ``title`` before the body) and the element where
    the extracted text starts, and only from blocks marked as lead (class/id words), inside the article
    ``<header>``, or right after the headline, so teasers of other articles (sidebars, lists after the body)
    are never picked up; ad slots (``leaderboard``), pop-ups and sign-up boxes never count, nor script code.
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
    window = elements[start + 1:body_at]
    inside = set(window)
    body = set(elements[body_at].iterancestors())  # the blocks holding the body are not its lead
    teaser = _unmarked_teaser(elements[start])
    have = norm(main_text)
    found: list[str] = []
    for el in window:
        if el.tag in ("script", "style", "a", "nav", "figure", "figcaption", "button") or el in body or _is_noise(el):
            continue
        ancestors = list(el.iterancestors())
        if any(a in inside and _is_noise(a) for a in ancestors):
            continue
        marked = _has_word(el, _LEAD_WORD)
        in_header = el.tag in ("h2", "p") and any(a.tag in ("header", "hgroup") for a in ancestors)
        if not (marked or in_header or el is teaser):
            continue
        text = _visible_text(el, without_noise=True)
        if not 30 <= len(text) <= 1500 or text in have or any(text in f or f in text for f in found):
            continue
        found.append(text)
    return found


def article_paragraphs(tree) -> list[str]:
    """The page's long paragraphs (``<p>`` of 80+ characters outside navigation, asides, forms and ads):
    what an article's body text is made of."""
    out = []
    noise: dict = {}  # element -> is it navigation/aside/footer/noise (each ancestor judged once)

    def noisy(el) -> bool:
        if el not in noise:
            noise[el] = el.tag in ("nav", "aside", "footer") or _is_noise(el)
        return noise[el]

    for p in tree.iter("p"):
        if any(noisy(a) for a in p.iterancestors()):
            continue
        text = _visible_text(p)
        if len(text) >= 80:
            out.append(text)
    return out


# lists of other stories: their teasers carry their own dates (``<span class="date">``)
_RELATED_WORD = re.compile(r"related\w*|relacionad\w*|correlat\w*|teasers|recommend\w*|recirc\w*|morestories|"
                           r"moreonthis|alsoread|readmore|readalso|mostread|mostpopular|trending|outbrain|taboola|"
                           r"nextarticle|weitere\w*|lireaussi|voiraussi|leggianche", re.IGNORECASE)


# readers' comments: their dates are the days the comments were written
_COMMENT_WORD = re.compile(r"comments?|commentlist|commentaires?|comentarios?|kommentare?|disqus\w*", re.IGNORECASE)

# a day in a teaser: 2018/6/18, 18.06.2018, 2018-06-18
_DAY = re.compile(r"\d{1,4}\s?[./-]\s?\d{1,2}\s?[./-]\s?\d{1,4}")


def _story_list(el) -> bool:
    """A ``<ul>``/``<ol>`` of other stories: two or more items, nearly all of them a link with a date."""
    if el.tag not in ("ul", "ol"):
        return False
    items = [li for li in el if li.tag == "li"]
    if len(items) < 2:
        return False
    dated = sum(1 for li in items if _DAY.search(li.text_content()) and li.find(".//a[@href]") is not None)
    return dated >= 2 and dated >= 0.8 * len(items)


# a cheap first look: a class/id that holds none of these can hold none of the words
_HINTS = {_RELATED_WORD: re.compile(r"relat|relacion|correlat|teaser|recommend|recirc|more|also|read|popular|trend|"
                                    r"outbrain|taboola|next|weitere|aussi|anche", re.IGNORECASE),
          _COMMENT_WORD: re.compile(r"comm|coment|kommentar|disqus", re.IGNORECASE)}


def without_hidden_lines(text: str, tree) -> str:
    """``text`` without the lines at its start that are hidden elements of the page: a screen-reader
    heading ``<h2 class="conHeadline hidden">Hauptinhalt</h2>`` ("main content") between the ``<h1>`` and
    the article, which trafilatura keeps as the text's first line."""
    hidden = {" ".join(el.text_content().split()) for el in tree.xpath("//*[@class]") if _HIDDEN.search(el.get("class"))}
    lines = text.split("\n")
    while lines and 0 < len(key := " ".join(lines[0].split())) <= 80 and key in hidden:
        lines.pop(0)
    return "\n".join(lines).strip()


def without_related(tree):
    """``tree`` with lists of dated links to other stories, blocks of other stories (related/teasers/
    recommended classes holding two or more links) and readers' comments (comment classes) removed, never
    a block around the headline. Changes ``tree`` in place."""
    keep = {a for h1 in tree.iter("h1") for a in h1.iterancestors()}
    blocks = "//ul | //ol | //div[@class or @id] | //section[@class or @id] | //aside[@class or @id] | //span[@class]"
    doomed = [el for el in tree.xpath(blocks) if el not in keep
              and (_story_list(el) or _has_word(el, _COMMENT_WORD)
                   or (_has_word(el, _RELATED_WORD) and len(el.xpath(".//a[@href]")) >= 2))]
    gone = set(doomed)
    for el in doomed:
        if el.getparent() is not None and not any(a in gone for a in el.iterancestors()):
            el.drop_tree()
    return tree


def other_stories_text(tree) -> str:
    """The text of lists of other stories (newline-joined, whitespace collapsed): blocks of two or more
    siblings that each hold a heading (``<h2>``–``<h4>``) whose text is a link to another page, the
    "Other columns" / "More stories" teasers extractors append to an article."""
    groups: dict = {}
    for heading in tree.xpath("//h2[.//a[@href]] | //h3[.//a[@href]] | //h4[.//a[@href]]"):
        text = _visible_text(heading)
        # links to other pages, not a table of contents' anchors (#section-2)
        links = " ".join(_visible_text(a) for a in heading.iter("a") if not a.get("href", "").lstrip().startswith("#"))
        block = heading.getparent()
        if not text or len(links) < 0.5 * len(text) or block is None or block.getparent() is None:
            continue
        groups.setdefault(block.getparent(), set()).add(block)
    return "\n".join(_visible_text(block) for parent, blocks in groups.items() if len(blocks) >= 2
                     for block in blocks)


def without_trailing_teasers(text: str, teasers: str) -> str:
    """``text`` without the lines at its end that come from lists of other stories (``other_stories_text``),
    and the short list heading just before them ("Other Opinion Columns")."""
    if not teasers:
        return text
    lines = text.split("\n")
    kept = len(lines)
    while kept and len(key := " ".join(lines[kept - 1].split())) >= 12 and key in teasers:
        kept -= 1
    if kept == len(lines):
        return text
    if kept and len(lines[kept - 1]) < 40 and not lines[kept - 1].rstrip().endswith((".", "!", "?", "\u201d", '"')):
        kept -= 1  # the list's own heading
    return "\n".join(lines[:kept]).strip()


# a dateline opening the article's text: ``29.11.2022 – Mehrfach …``, ``2022-11-29: …``
_DATELINE = re.compile(r"\s*(?:(?P<d>\d{1,2})\.\s?(?P<m>\d{1,2})\.\s?(?P<y>\d{4})|(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2}))"
                       r"\s*[–—:|-]\s")


def dateline_day(tree) -> dt.date | None:
    """The day a dateline states at the start of one of the first three paragraphs after the ``<h1>``;
    None when there is none. A page without a date in its markup states it there, and the text's other
    dates (a deadline, a past event) must not win over it."""
    h1 = next(tree.iter("h1"), None)
    paragraphs = h1.xpath("following::p") if h1 is not None else []
    for p in paragraphs[:3]:
        m = _DATELINE.match(p.text_content())
        if m:
            try:
                return dt.date(int(m["y"] or m["iy"]), int(m["m"] or m["im"]), int(m["d"] or m["id"]))
            except ValueError:
                return None
    return None
