"""Token counting and language identification (lingua, restricted to the project's languages)."""
from __future__ import annotations

import re
from dataclasses import dataclass

# CJK / kana / hangul characters count one token each; other scripts count word runs.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def count_tokens(text: str) -> int:
    return sum(1 for _ in _TOKEN.finditer(text))


@dataclass
class LanguageGuess:
    language: str | None
    confidence: float


class LanguageIdentifier:
    """lingua detector over the configured languages only (fast, and no exotic false positives).

    A text in a language outside the set gets low confidence and is skipped by the threshold.
    """

    def __init__(self, languages: list[str]) -> None:
        from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

        wanted = []
        for code in languages:
            try:
                wanted.append(Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper())))
            except (AttributeError, ValueError):
                continue
        self.codes = {lang: lang.iso_code_639_1.name.lower() for lang in wanted}
        if len(wanted) == 1:
            self._detector = None  # lingua needs two languages; one configured language is accepted as is
            self._only = next(iter(self.codes.values()))
        else:
            self._detector = LanguageDetectorBuilder.from_languages(*wanted).build()

    def detect(self, text: str) -> LanguageGuess:
        sample = text[:1200]
        if self._detector is None:
            return LanguageGuess(self._only, 1.0)
        values = self._detector.compute_language_confidence_values(sample)
        if not values:
            return LanguageGuess(None, 0.0)
        top = values[0]
        return LanguageGuess(self.codes[top.language], float(top.value))
