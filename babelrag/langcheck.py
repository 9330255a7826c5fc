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
from dataclasses import dataclass, field
from typing import Any, Optional

MIN_LETTERS = 12  # fewer letters than this: too short to judge
MAX_NAME_WORDS = 4  # up to this many capitalised words / figures: a name, not a sentence
MIN_CONFIDENCE = 0.2  # the declared language must keep at least this share of lingua's confidence


@dataclass
class LanguageChecker:
    """``check(text, declared)`` -> None when fine or unchecked, else the detected language code."""

    languages: list[str]
    min_letters: int = MIN_LETTERS
    min_confidence: float = MIN_CONFIDENCE
    unchecked: int = 0
    _detector: Any = field(default=None, repr=False)
    _codes: dict[Any, str] = field(default_factory=dict, repr=False)

    def _build(self) -> Any:
        if self._detector is None:
            from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

            langs = []
            for code in sorted(set(self.languages)):
                lang = Language.from_iso_code_639_1(IsoCode639_1.from_str(code))
                langs.append(lang)
                self._codes[lang] = code
            if len(langs) < 2:  # lingua needs two; a one-language project can only be right
                self._detector = False
            else:
                self._detector = LanguageDetectorBuilder.from_languages(*langs).build()
        return self._detector

    def check(self, text: str, declared: str) -> Optional[str]:
        if sum(ch.isalpha() for ch in text) < self.min_letters or _name_like(text):
            self.unchecked += 1
            return None
        detector = self._build()
        if detector is False:
            return None
        values = detector.compute_language_confidence_values(text)
        if not values:
            self.unchecked += 1
            return None
        conf = {self._codes[v.language]: v.value for v in values}
        top = self._codes[values[0].language]
        if top != declared and conf.get(declared, 0.0) < self.min_confidence:
            return top
        return None


def _name_like(text: str) -> bool:
    words = re.findall(r"[^\W_]+", text)
    return 0 < len(words) <= MAX_NAME_WORDS and all(w[0].isupper() or w[0].isdigit() for w in words)
