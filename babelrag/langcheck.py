"""The one language check of babelrag: construct (machine translations), release validation and evaluation
(XRAG language correctness, MIRAGE language share) all read a text's language here, by one rule.

**A text is in the language of its function words.** Names say nothing about the language a sentence is
written in — "Olaf Scholz and Friedrich Merz met at the Düsseldorfer Rheinterrasse on Monday." is English
— yet they are what lingua weighs most in a short answer. So before lingua reads a text, every name is
masked: capitalised words (and all-caps acronyms, words with figures) and the particles between them
("Ursula von der Leyen", "Banco de España"). What is left ("and met at the on") is the grammar. A
sentence's first word is capitalised either way: when it may be an ordinary word, the text is read both
with and without it.

Texts that say little are counted as unchecked, never failed: fewer than ``MIN_LETTERS`` letters in all;
a short run of capitalised words and figures ("Calloway Freight", "Port Velmar 2026"), a name that reads
the same in every Latin-script language; or fewer than ``MIN_FUNCTION_LETTERS`` letters once the names
are masked ("Olaf Scholz met Friedrich Merz." — "met" alone decides nothing). German capitalises its
nouns, so a German text loses them too; its articles, verbs and prepositions are still there to read.

Restricting the detector to the languages in play makes it both fast and far more accurate. A text
fits its declared language when lingua's top language is the declared one or the declared language trails
it by at most ``MAX_CONFIDENCE_GAP`` (a short clause such as "presidente de la Cromwell Society" may read a
little more Portuguese than Spanish; an English sentence declared German trails by far more).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Optional

from babelrag.errors import ConfigError

MIN_LETTERS = 12  # fewer letters than this: too short to judge
MIN_FUNCTION_LETTERS = 6  # fewer letters than this once names are masked: nothing but names to go on
MAX_NAME_WORDS = 4  # up to this many capitalised words / figures: a name, not a sentence
MAX_CONFIDENCE_GAP = 0.2  # the declared language may trail lingua's top language by at most this confidence

# candidates for evaluation, where a wrong-language answer may be in any language (not only the expected one)
DEFAULT_LANGUAGES = ("en", "de", "es", "fr", "zh", "ar", "ru", "ja", "it", "pt", "ro", "hi")

# a word: letters (any script) and figures; apostrophes split ("l'Allemagne" -> "l", "Allemagne")
_WORD = re.compile(r"[^\W_]+")
# lower-case particles that stand inside names: "von der Leyen", "Banco de España", "Juan del Río"
NAME_PARTICLES = frozenset("von van der den de del della degli di da das do dos du la le les zu ter ten al bin "
                           "of the y e".split())


@lru_cache(maxsize=16)
def lingua_detector(languages: tuple[str, ...]) -> Any:
    """A lingua detector over exactly these ISO 639-1 codes, built once per set (building it is the slow
    part); None for fewer than two languages (lingua needs two)."""
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    langs = []
    for code in sorted({c.lower() for c in languages}):
        iso = getattr(IsoCode639_1, code.upper(), None)
        if iso is None:
            raise ConfigError(f"language {code!r} is not an ISO 639-1 code lingua knows")
        langs.append(Language.from_iso_code_639_1(iso))
    return LanguageDetectorBuilder.from_languages(*langs).build() if len(langs) >= 2 else None


def code_of(language: Any) -> str:
    """The ISO 639-1 code of a lingua ``Language``."""
    return language.iso_code_639_1.name.lower()


def _is_name(word: str) -> bool:
    return word[0].isupper() or any(ch.isdigit() for ch in word)


def mask_names(text: str) -> str:
    """``text``'s words without its names: capitalised words, words with figures, and the particles
    that stand between two name words. Scripts without case (Chinese, Arabic, …) are left whole."""
    words = _WORD.findall(text)
    name = [_is_name(w) for w in words]
    for i, w in enumerate(words):
        if not name[i] and w in NAME_PARTICLES and i > 0 and name[i - 1]:
            j = i
            while j < len(words) and not name[j] and words[j] in NAME_PARTICLES:
                j += 1
            if j < len(words) and name[j]:
                for k in range(i, j):
                    name[k] = True
    return " ".join(w for w, is_name in zip(words, name) if not is_name)


def letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def name_like(text: str) -> bool:
    """A short run of capitalised words and figures: a name, not a sentence."""
    words = _WORD.findall(text)
    return 0 < len(words) <= MAX_NAME_WORDS and all(_is_name(w) for w in words)


@dataclass(frozen=True)
class LanguageReading:
    """What the function words of a text say. ``language`` None: too little to read (unchecked)."""

    language: Optional[str] = None
    confidence: dict[str, float] = field(default_factory=dict)

    def fits(self, declared: str, max_gap: float = MAX_CONFIDENCE_GAP) -> bool:
        """True unless the text was read and reads as another language than ``declared``."""
        if self.language is None or self.language == declared:
            return True
        return self.confidence[self.language] - self.confidence.get(declared, 0.0) <= max_gap


def _first_word_variant(text: str, masked: str) -> Optional[str]:
    """``masked`` with the text's first word put back (lower-cased) when it may be an ordinary word written
    with a capital because it starts the sentence ("Earthquakes and tsunamis in Indonesia"): a capitalised
    first word followed by a lower-case word that is not a name particle. None when it cannot be one."""
    words = _WORD.findall(text)
    if len(words) > 1 and words[0][0].isupper() and not _is_name(words[1]) and words[1] not in NAME_PARTICLES \
            and not any(ch.isdigit() for ch in words[0]):
        return f"{words[0].lower()} {masked}"
    return None


def read_language(text: str, languages: Iterable[str]) -> LanguageReading:
    """The language of ``text``'s function words among ``languages`` (names masked; see the module).

    The first word of a sentence is capitalised whether it is a name ("Merkel and Macron met …") or not
    ("Earthquakes and tsunamis …"), so when it may be an ordinary word the text is read both without and
    with it, and the more confident of the two readings counts."""
    if letters(text) < MIN_LETTERS or name_like(text):
        return LanguageReading()
    detector = lingua_detector(_key(languages))
    if detector is None:  # a one-language project: nothing to tell apart
        return LanguageReading()
    masked = mask_names(text)
    if letters(masked) < MIN_FUNCTION_LETTERS:
        return LanguageReading()
    best: list[Any] = []
    for variant in filter(None, (masked, _first_word_variant(text, masked))):
        values = detector.compute_language_confidence_values(variant)
        if values and (not best or values[0].value > best[0].value):
            best = values
    if not best:
        return LanguageReading()
    return LanguageReading(code_of(best[0].language), {code_of(v.language): v.value for v in best})


def detect(text: str, languages: Iterable[str] = DEFAULT_LANGUAGES) -> Optional[str]:
    """ISO 639-1 code of ``text``'s language (its function words), or None when there is too little to read."""
    return read_language(text, languages).language


def _key(languages: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({code.lower() for code in languages}))


@dataclass
class LanguageChecker:
    """``check(text, declared)`` -> None when fine or unchecked, else the detected language code.
    Counts the unchecked texts (for the release report)."""

    languages: list[str]
    max_gap: float = MAX_CONFIDENCE_GAP
    unchecked: int = 0

    def check(self, text: str, declared: str) -> Optional[str]:
        reading = read_language(text, self.languages)
        if reading.language is None:
            self.unchecked += 1
            return None
        return None if reading.fits(declared, self.max_gap) else reading.language
