"""Answer-language detection with lingua, restricted to the languages in play (fast and exact).

The detector is built once per language set (building it is the slow part) and cached.
"""
from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from babelrag.errors import ConfigError
from babelrag.evaluators.text import split_sentences

DEFAULT_LANGUAGES = ("en", "de", "es", "fr", "zh", "ar", "ru", "ja", "it", "pt", "ro", "hi")


@lru_cache(maxsize=8)
def _detector(languages: tuple[str, ...]):
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    langs = []
    for code in languages:
        iso = getattr(IsoCode639_1, code.upper(), None)
        if iso is None:
            raise ConfigError(f"language {code!r} is not an ISO 639-1 code lingua knows")
        langs.append(Language.from_iso_code_639_1(iso))
    if len(langs) < 2:
        raise ConfigError("language detection needs at least two candidate languages")
    return LanguageDetectorBuilder.from_languages(*langs).build()


def _key(languages: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({code.lower() for code in languages}))


def detect(text: str, languages: Iterable[str] = DEFAULT_LANGUAGES) -> str | None:
    """ISO 639-1 code of ``text``'s language, or None when there is nothing to detect."""
    if not text.strip():
        return None
    lang = _detector(_key(languages)).detect_language_of(text)
    return None if lang is None else lang.iso_code_639_1.name.lower()


def language_share(text: str, target: str, languages: Iterable[str] = DEFAULT_LANGUAGES) -> float:
    """Share of the answer's characters in sentences detected as ``target`` (0 for an empty answer)."""
    langs = set(_key(languages)) | {target.lower()}
    sentences = split_sentences(text)
    total = sum(len(s) for s in sentences)
    if total == 0:
        return 0.0
    hit = sum(len(s) for s in sentences if detect(s, langs) == target.lower())
    return hit / total
