"""Language check of questions and answers with lingua, restricted to the project's languages.

Used by release validation and by construct on machine translations (a small model's half-English
"translation" is dropped there, as a counted skip, instead of stopping the release).

Restricting the detector to the declared languages makes it both fast and far more accurate; short
texts (names, numbers) say little about their language and are counted as unchecked, not failed —
that includes a short answer made only of capitalised words and figures ("Calloway Freight",
"Port Velmar 2026"), a name that reads the same in every Latin-script language.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

from babelrag.errors import ConfigError

MIN_LETTERS = 12  # fewer letters than this: too short to judge
MAX_NAME_WORDS = 4  # up to this many capitalised words / figures: a name, not a sentence
MIN_CONFIDENCE = 0.2  # the declared language must keep at least this share of lingua's confidence


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


@dataclass
class LanguageChecker:
    """``check(text, declared)`` -> None when fine or unchecked, else the detected language code."""

    languages: list[str]
    min_letters: int = MIN_LETTERS
    min_confidence: float = MIN_CONFIDENCE
    unchecked: int = 0

    def check(self, text: str, declared: str) -> Optional[str]:
        if sum(ch.isalpha() for ch in text) < self.min_letters or _name_like(text):
            self.unchecked += 1
            return None
        detector = lingua_detector(tuple(self.languages))
        if detector is None:  # a one-language project can only be right
            return None
        values = detector.compute_language_confidence_values(text)
        if not values:
            self.unchecked += 1
            return None
        conf = {code_of(v.language): v.value for v in values}
        top = code_of(values[0].language)
        if top != declared and conf.get(declared, 0.0) < self.min_confidence:
            return top
        return None


def _name_like(text: str) -> bool:
    words = re.findall(r"[^\W_]+", text)
    return 0 < len(words) <= MAX_NAME_WORDS and all(w[0].isupper() or w[0].isdigit() for w in words)
