"""Config names and language tags: small pure helpers shared by build, card and validation."""
from __future__ import annotations

import re

# ISO 639-1 -> ISO 639-3 + ISO 15924 script, as MTEB writes them (e.g. ``deu-Latn``).
LANGUAGE_SCRIPT_TAGS: dict[str, str] = {
    "en": "eng-Latn", "de": "deu-Latn", "es": "spa-Latn", "zh": "zho-Hans", "ar": "arb-Arab",
    "fr": "fra-Latn", "it": "ita-Latn", "pt": "por-Latn", "ru": "rus-Cyrl", "ja": "jpn-Jpan",
    "ko": "kor-Hang", "hi": "hin-Deva", "ro": "ron-Latn", "tr": "tur-Latn", "nl": "nld-Latn",
}


def language_tag(code: str) -> str:
    """``de`` -> ``deu-Latn``; unknown codes are returned unchanged (validation reports them)."""
    return LANGUAGE_SCRIPT_TAGS.get(code, code)


def config_name(setting: str, language: str) -> str:
    """One release config per setting and question language.

    ``mono``/``de`` -> ``mono-de``; ``multi+EQ``/``en`` -> ``multi-eq-en``; a setting that already names
    its language (``en-baseline`` with English questions) keeps its own name. Hub config names are used
    as folder names, so ``+`` becomes ``-`` and everything is lower case.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", setting.lower()).strip("-")
    if slug.startswith(f"{language}-"):
        return slug
    return f"{slug}-{language}"

