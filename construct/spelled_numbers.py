"""Numbers a language writes in words, read as the translation tier's number anchors (``#`` + ASCII digits).

A translation keeps its original's digits in most languages, but Yoruba writes its numbers out, and in a vigesimal,
partly subtractive system: the NTREX-128 translator writes "aged 33, 34 and 39" as "mẹ́tàlélọ́gbọ̀n,
mẹ́rìnlélọ́gbọ̀n àti ọ̀kàndínlógójì" (three on thirty, four on thirty, one short of forty), "183 emissions" as
"mẹ́tàlélọ́gọ́sàn" (three on a hundred and eighty). Without them a Yoruba translation shares none of its original's
numbers (``construct/pair_anchors.py`` reads digits only) and its anchor overlap is diluted by every number the
English keeps. ``number_anchors`` reads them for the languages listed in ``READERS`` (Yoruba) and gives nothing
for the others.

``day_anchors`` reads the days of the week the same way (Yoruba Àbámẹ́ta is the anchor "saturday").

Only numbers of 10 and more are read: English news writes one to nine in words (``Three men``), so a digit in
the original is 10 or more, and a bare Yoruba unit ("mẹ́ta", three) is also a common word part. A tens word alone is
read only where it is no other common word: ogún (20) is also "war" and "medicine", ọgbọ̀n (30) "wisdom", igba
(200) "time", and the translator's tone marks are too irregular to tell them apart; inside a compound
("...lélógún", "...dínlọ́gbọ̀n") they are numbers. Words are matched with tone marks and under-dots folded,
hyphens dropped and repeated vowels collapsed (the translator writes "ààádọ́ta" and "àádọ́ta", "mẹ́ẹ̀ẹ́dógún" and
"mẹ́ẹ̀dógún").
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from babelrag.construct.pair_anchors import anchors, fold

# units after their prefix (m- counting form, k- / ik- ordinal, none): "mẹ́ta" = m + eta = 3
_YO_UNITS = {"okan": 1, "kan": 1, "eji": 2, "eta": 3, "erin": 4, "arun": 5, "efa": 6, "eje": 7, "ejo": 8,
             "esan": 9, "ewa": 10}
# tens, repeated vowels collapsed ("àádọ́ta" -> adota): 20 ogún ... 200 igba
_YO_TENS = {"ogun": 20, "ogbon": 30, "ogoji": 40, "adota": 50, "ogota": 60, "adorin": 70, "ogorin": 80,
            "adorun": 90, "ogorun": 100, "adofa": 110, "ogofa": 120, "adoje": 130, "ogoje": 140, "adojo": 150,
            "ogojo": 160, "adosan": 170, "ogosan": 180, "adowa": 190, "igba": 200}
_YO_AMBIGUOUS_ALONE = {"ogun", "ogbon", "igba"}  # also war/medicine, wisdom, time
_UNIT = "(?:i?k|m)?(?P<unit>" + "|".join(sorted(_YO_UNITS, key=len, reverse=True)) + ")"
_TENS = "(?P<tens>" + "|".join(sorted(_YO_TENS, key=len, reverse=True)) + ")"
_YO_COMPOUND = re.compile(rf"{_UNIT}(?P<op>le|din)l{_TENS}")  # unit on (le) / short of (din) the tens
_YO_TEEN = re.compile(rf"{_UNIT}la")  # 11-14: mọ́kànlá, méjìlá, mẹ́tàlá, mẹ́rìnlá (unit on ten)
_YO_FIVE_SHORT = re.compile(rf"(?:i?k|m)?ed{_TENS}")  # 15, 25, ...: mẹ́ẹ̀dógún = m + ẹ̀d + ogún (five short of twenty)
_WORD = re.compile(r"[^\W\d_][\w\u0300-\u036f'’-]*")


def _yoruba_value(word: str) -> int | None:
    """The value of one folded Yoruba word if it is a number of 10 or more, else None."""
    if m := _YO_COMPOUND.fullmatch(word):
        unit, tens = _YO_UNITS[m["unit"]], _YO_TENS[m["tens"]]
        return tens + unit if m["op"] == "le" else tens - unit
    if (m := _YO_TEEN.fullmatch(word)) and _YO_UNITS[m["unit"]] < 5:
        return 10 + _YO_UNITS[m["unit"]]
    if m := _YO_FIVE_SHORT.fullmatch(word):
        return _YO_TENS[m["tens"]] - 5
    if word == "mewa":  # ẹ̀wá alone is also "beauty"
        return 10
    if word in _YO_TENS and word not in _YO_AMBIGUOUS_ALONE:
        return _YO_TENS[word]
    return None


def _fold(word: str) -> str:
    """Tone marks and under-dots dropped, lower case, letters only, repeated vowels collapsed, the echo syllable of
    90 and 100 dropped ("àádọ́rùn-ún", "ọgọ́rùn-ún")."""
    return re.sub(r"unun$", "un", re.sub(r"([aeiou])\1+", r"\1", re.sub(r"[^a-z]", "", fold(word))))


def yoruba_numbers(text: str) -> set[int]:
    """The numbers of 10 or more that ``text`` (Yoruba) writes in words."""
    found = set()
    for m in _WORD.finditer(unicodedata.normalize("NFC", text)):
        value = _yoruba_value(_fold(m.group()))
        if value is not None:
            found.add(value)
    return found


READERS: dict[str, Callable[[str], set[int]]] = {"yo": yoruba_numbers}


def number_anchors(text: str, language: str) -> frozenset[str]:
    """The numbers ``text`` writes in words, as number anchors (``#183``); empty for a language without a reader."""
    reader = READERS.get(language)
    return frozenset(f"#{n}" for n in reader(text)) if reader else frozenset()


# the days of the week, as the anchors of the English day names: Yoruba capitalises them ("lọ́jọ́ Àbámẹ́ta", on
# Saturday) but names them its own way (Àbámẹ́ta, Saturday). Folded as pair_anchors.anchors folds a capitalised word.
_YO_DAYS = {"aiku": "sunday", "aje": "monday", "isegun": "tuesday", "ojoru": "wednesday", "ojobo": "thursday",
            "eti": "friday", "abameta": "saturday"}
DAY_NAMES: dict[str, dict[str, str]] = {"yo": _YO_DAYS}


def day_anchors(text: str, language: str) -> frozenset[tuple[str, str]]:
    """The days of the week ``text`` names capitalised in its language's own words, each as (its anchor, the English
    day's anchor): ("abameta", "saturday"); empty for a language without a table."""
    days = DAY_NAMES.get(language)
    if not days:
        return frozenset()
    return frozenset((w, days[w]) for w in anchors(text) if w in days)


__all__ = ["DAY_NAMES", "READERS", "day_anchors", "number_anchors", "yoruba_numbers"]
