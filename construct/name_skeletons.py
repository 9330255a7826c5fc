"""Names across scripts: find a Latin-script name of one article written in another script in the other article
(the cross-script anchors of the translation tier, construct/pair_anchors.py).

A translation into Korean, Telugu, Arabic, Japanese, Thai, ... writes "Barcelona" as 바르셀로나, బార్సిలోనా, برشلونة,
バルセロナ, บาร์เซโลนา. Romanised character by character (``anyascii``: one table for every script, no model) and
reduced to a **consonant skeleton** they all read B-L-S-L-N, as "Barcelona" does (Chinese 巴塞罗那 drops the r:
B-S-L-N, one edit away):

- vowels, ``h``, ``w`` and ``y`` are dropped (scripts write them as vowels or not at all: Arabic writes no short
  vowel, Indic and Chinese transliterations add vowels between consonants);
- the other consonants fall into six classes of sounds that transliterations swap for one another: labials
  (``b p f v``), dentals (``t d``), velars (``k g q`` and a hard ``c``), sibilants and affricates (``s z j``, a soft
  ``c``, ``sh ch zh``), nasals (``m n``), liquids (``l r``: Korean, Japanese and Chinese have one liquid);
- a class repeated in a row is one (``ll``, and the ``l`` of ``셀`` + ``로``).

English spelling is read with English rules (``c`` before ``e i y`` is a sibilant, ``x`` is ``ks`` inside a word
and a sibilant at its start); the romanised side with anyascii's (``c`` and ``x`` are sibilants: Indic ``c`` is
"ch", pinyin ``c x q`` are "ts", "sh", "ch").

A name is found in a text when some span of a run of non-Latin letters (from a word's start in spaced scripts and
Katakana, whole segmenter words in Chinese and Thai) has a skeleton within ``max_edits`` edits of the name's; names whose skeleton is shorter
than ``min_consonants`` are not looked for (a two-consonant skeleton occurs by chance in any long run). Both limits
are calibrated with the tier's threshold by ``bench/bench_anchor_pairs.py``.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import regex
from anyascii import anyascii

from babelrag.tokens import segmenter_for

# a run: a word of a spaced script (letters and marks, with the zero-width (non-)joiners Indic spellings use inside
# words) or of Katakana (with its prolonged sound mark; names are split by a middle dot), where a name starts at the
# word's start; or a run of a script written without spaces between words (Han, Thai, Lao, Khmer, Myanmar), where
# it starts and ends with one of the segmenter's words (babelrag.tokens.SEGMENTERS: jieba, PyThaiNLP), or anywhere
# without one. Latin is matched verbatim (pair_anchors.anchors); Hiragana writes no names.
_UNSPACED = {"Han": "zh", "Thai": "th", "Lao": None, "Khmer": None, "Myanmar": None}  # script -> segmenter
_RUN = regex.compile("|".join(rf"(?P<{s}>\p{{{s}}}+)" for s in _UNSPACED)
                     + r"|(?P<word>[\p{Katakana}\u30fc]+|[[\p{L}\p{M}\u200c\u200d]--[\p{Latin}\p{Hiragana}\p{Katakana}"
                     + "".join(rf"\p{{{s}}}" for s in _UNSPACED) + "]]+)", regex.V1)
_CLASS = {**dict.fromkeys("bpfv", "P"), **dict.fromkeys("td", "T"), **dict.fromkeys("kgq", "K"),
          **dict.fromkeys("szj", "S"), **dict.fromkeys("mn", "N"), **dict.fromkeys("lr", "L")}
_DIGRAPHS = (("sch", "s"), ("ph", "f"), ("th", "t"), ("sh", "s"), ("ch", "s"), ("zh", "s"), ("kh", "k"),
             ("gh", "g"), ("ck", "k"), ("qu", "k"), ("ng", "n"))

# calibrated defaults (bench/bench_anchor_pairs.py; docs/construct.md, "Translation tier")
MIN_CONSONANTS = 4
MAX_EDITS = 0


def _classes(spelling: str) -> str:
    out = []
    for c in spelling:
        k = _CLASS.get(c, "")
        if k and (not out or out[-1] != k):
            out.append(k)
    return "".join(out)


def _digraphs(s: str) -> str:
    for a, b in _DIGRAPHS:
        s = s.replace(a, b)
    return s


def latin_skeleton(name: str) -> str:
    """The consonant skeleton of a Latin-script name (folded: lower case, no diacritics), read as English spells."""
    s = _digraphs(name)
    s = regex.sub(r"c(?=[eiy])", "s", s).replace("c", "k")
    s = regex.sub(r"^x", "s", s).replace("x", "ks")
    return _classes(s)


@lru_cache(maxsize=65536)
def char_skeleton(char: str) -> str:
    """The consonant skeleton of one non-Latin character as anyascii romanises it ('' for a vowel or a mark)."""
    s = _digraphs(anyascii(char).casefold())
    if "CJK" in unicodedata.name(char, ""):  # a Han character: pinyin, whose q is "ch"
        s = s.replace("q", "s")
    return _classes(s.replace("c", "s").replace("x", "s"))


@dataclass(frozen=True)
class Spelled:
    """The consonant skeletons of every span of the non-Latin runs of one text (spans no longer than ``longest``
    consonants), computed once per article."""

    spans: dict[int, frozenset[str]]  # skeleton length -> the spans' skeletons of that length

    @classmethod
    def of(cls, text: str, longest: int = 16) -> "Spelled":
        found: dict[int, set[str]] = {}
        for run in _RUN.finditer(unicodedata.normalize("NFC", text)):
            units, starts = _units(run)
            pieces = [_joined(char_skeleton(c) for c in u) for u in units]
            for i in starts:
                span = ""
                for piece in pieces[i:]:
                    span = _joined((span, piece))
                    if len(span) > longest:
                        break
                    if span:
                        found.setdefault(len(span), set()).add(span)
        return cls({n: frozenset(s) for n, s in found.items()})

    def spells(self, key: str, max_edits: int) -> bool:
        """Whether some span's skeleton is within ``max_edits`` edits of ``key``."""
        if key in self.spans.get(len(key), ()):
            return True
        return any(within_edits(key, s, max_edits) for n in range(len(key) - max_edits, len(key) + max_edits + 1)
                   for s in self.spans.get(n, ()))


def _joined(skeletons) -> str:
    """Skeletons one after the other, a class repeated across the joint counted once."""
    out = ""
    for s in skeletons:
        out += s[1:] if out and s and out[-1] == s[0] else s
    return out


def _units(run: regex.Match) -> tuple[list[str], range]:
    """A run's units (what a span is made of) and the units a span may start at."""
    text, script = run.group(), run.lastgroup
    if script == "word":
        return list(text), range(1)
    seg = segmenter_for(_UNSPACED[script])
    units = [w for w in seg.split(text) if w] if seg else list(text)
    return units, range(len(units))


def within_edits(a: str, b: str, limit: int) -> bool:
    """Whether the Levenshtein distance of ``a`` and ``b`` is at most ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return False
    if limit == 0:
        return a == b
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
        if min(row) > limit:
            return False
    return row[-1] <= limit


def found_names(names: frozenset[str], text: Spelled, min_consonants: int = MIN_CONSONANTS,
                max_edits: int = MAX_EDITS) -> frozenset[str]:
    """The Latin names (folded words) whose consonant skeleton some span of ``text``'s non-Latin runs spells
    within ``max_edits`` edits."""
    out = set()
    for name in names:
        key = latin_skeleton(name)
        if len(key) < min_consonants:
            continue
        if text.spells(key, max_edits):
            out.add(name)
    return frozenset(out)


__all__ = ["MAX_EDITS", "MIN_CONSONANTS", "Spelled", "char_skeleton", "found_names", "latin_skeleton",
           "within_edits"]
