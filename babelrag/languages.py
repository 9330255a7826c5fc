"""Languages are data: every language the language identifier (lingua) knows, by its code, name and script.

``project.languages`` takes any BCP-47 tag, ISO 639-1 or ISO 639-3 code whose language lingua supports
(75 languages), case-insensitive, with ``-`` or ``_``. ``normalise_tag`` turns it into the ISO 639-1 code every
record, prompt and release uses:

- the primary subtag becomes lingua's ISO 639-1 code (``deu`` -> ``de``, ``EN`` -> ``en``);
- a region subtag is dropped (``pt-BR`` -> ``pt``, ``es-419`` -> ``es``): neither lingua nor the encoders tell
  regional variants apart, so keeping it would promise a distinction nothing in the build makes;
- a script subtag is dropped when it names the script the toolkit writes the language in (``zh-Hans`` -> ``zh``,
  ``sr-Cyrl`` -> ``sr``) and refused otherwise (``zh-Hant``, ``sr-Latn``): prompts, translations and the
  language check would silently produce the other script.

Language names come from lingua's own ``Language`` names (title-cased), with a few corrections where the
plain name is ambiguous or misspelt (``Bokmal``); ``zh`` keeps the name its prompts have always used, so
cached LLM answers of earlier builds stay valid.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


# ISO 15924 script of each lingua language that is not written in Latin script (the rest: Latn). Prompts ask
# for, and the language check expects, this script.
SCRIPTS: dict[str, str] = {
    "ar": "Arab", "fa": "Arab", "ur": "Arab", "hy": "Armn", "bn": "Beng", "be": "Cyrl", "bg": "Cyrl",
    "kk": "Cyrl", "mk": "Cyrl", "mn": "Cyrl", "ru": "Cyrl", "sr": "Cyrl", "uk": "Cyrl", "hi": "Deva",
    "mr": "Deva", "ka": "Geor", "el": "Grek", "gu": "Gujr", "pa": "Guru", "zh": "Hans", "he": "Hebr",
    "ja": "Jpan", "ko": "Kore", "ta": "Taml", "te": "Telu", "th": "Thai",
}
# Names where lingua's (upper-case, ASCII) enum name is not the name a prompt should use.
NAME_OVERRIDES: dict[str, str] = {
    "zh": "Chinese (Simplified)",  # the script we write; the name earlier builds' prompts used
    "nb": "Norwegian Bokmål", "nn": "Norwegian Nynorsk", "lg": "Luganda", "st": "Sesotho",
}
_TAG = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*$")


@dataclass(frozen=True)
class NormalisedTag:
    """A configured tag and the ISO 639-1 code it became; ``note`` says what was dropped ("" when nothing)."""
    tag: str
    code: str
    note: str = ""


@lru_cache(maxsize=1)
def _lingua_languages() -> dict[str, str]:
    """ISO 639-1 code -> lingua enum name, for every language lingua supports."""
    from lingua import Language

    return {lang.iso_code_639_1.name.lower(): lang.name for lang in Language.all()}


@lru_cache(maxsize=1)
def _iso639_3() -> dict[str, str]:
    from lingua import Language

    return {lang.iso_code_639_3.name.lower(): lang.iso_code_639_1.name.lower() for lang in Language.all()}


def supported_codes() -> tuple[str, ...]:
    """Every ISO 639-1 code lingua identifies, sorted."""
    return tuple(sorted(_lingua_languages()))


def is_supported(code: str) -> bool:
    return code in _lingua_languages()


def script_of(code: str) -> str:
    """The ISO 15924 script the toolkit writes ``code`` in."""
    return SCRIPTS.get(code, "Latn")


def language_name(code: str) -> str:
    """The English name of a language for prompts and reports (``sw`` -> ``Swahili``); an unknown code is
    returned as it is."""
    if code in NAME_OVERRIDES:
        return NAME_OVERRIDES[code]
    name = _lingua_languages().get(code)
    return name.title() if name else code


def language_label(code: str) -> str:
    """``Swahili (sw)``: a language named for people, with the code that records carry."""
    return f"{language_name(code)} ({code})"


def normalise_tag(tag: str) -> NormalisedTag:
    """``tag`` (BCP-47 / ISO 639-1 / ISO 639-3) as the ISO 639-1 code of a lingua language; ValueError with
    the reason and the fix otherwise (config validation turns it into a one-line error)."""
    raw = str(tag).strip()
    if not _TAG.match(raw):
        raise ValueError(f"{tag!r} is not a language tag (BCP-47 such as 'de', 'pt-BR', 'zh-Hans')")
    primary, *rest = re.split(r"[-_]", raw)
    primary = primary.lower()
    code = primary if len(primary) == 2 else _iso639_3().get(primary, primary)
    if not is_supported(code):
        raise ValueError(f"language {tag!r} is not one the language identifier (lingua) supports; supported: "
                         f"{', '.join(supported_codes())}")
    dropped = []
    for sub in rest:
        if len(sub) == 4 and sub.isalpha():  # a script subtag
            script = sub.title()
            if script != script_of(code):
                raise ValueError(f"{tag!r}: this toolkit writes {language_name(code)} in {script_of(code)} script "
                                 f"and cannot keep {script} apart from it (prompts, translations and the language "
                                 f"check would use {script_of(code)}); configure {code!r}")
            dropped.append(f"script {script}")
        else:
            dropped.append(f"region {sub.upper() if sub.isalpha() else sub}")
    note = (f"{raw} -> {code} ({', '.join(dropped)} dropped)" if dropped else
            (f"{raw} -> {code}" if raw != code else ""))
    return NormalisedTag(raw, code, note)


def normalise_languages(tags: list[str]) -> list[str]:
    """Each tag normalised (``normalise_tag``), in order; ValueError naming every bad tag."""
    out, problems = [], []
    for tag in tags:
        try:
            out.append(normalise_tag(tag).code)
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError("; ".join(problems))
    return out
