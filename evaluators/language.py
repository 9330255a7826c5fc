"""Answer-language detection with lingua, restricted to the languages in play (fast and exact).

The detector is built once per language set (building it is the slow part) and cached.
"""
from __future__ import annotations

from collections.abc import Iterable

from babelrag.errors import ConfigError
from babelrag.evaluators.sentences import split_sentences
from babelrag.langcheck import code_of, lingua_detector

DEFAULT_LANGUAGES = ("en", "de", "es", "fr", "zh", "ar", "ru", "ja", "it", "pt", "ro", "hi")


def _detector(languages: tuple[str, ...]):
    detector = lingua_detector(languages)
    if detector is None:
        raise ConfigError("language detection needs at least two candidate languages")
    return detector


def _key(languages: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({code.lower() for code in languages}))


def detect(text: str, languages: Iterable[str] = DEFAULT_LANGUAGES) -> str | None:
    """ISO 639-1 code of ``text``'s language, or None when there is nothing to detect."""
    if not text.strip():
        return None
    lang = _detector(_key(languages)).detect_language_of(text)
    return None if lang is None else code_of(lang)


def language_share(text: str, target: str, languages: Iterable[str] = DEFAULT_LANGUAGES) -> float:
    """Share of the answer's characters in sentences detected as ``target`` (0 for an empty answer)."""
    langs = set(_key(languages)) | {target.lower()}
    sentences = split_sentences(text)
    total = sum(len(s) for s in sentences)
    if total == 0:
        return 0.0
    hit = sum(len(s) for s in sentences if detect(s, langs) == target.lower())
    return hit / total
