"""Config names: a small pure helper shared by build, convert, validation and the evaluators' release reader
(language tags and size categories for the card: ``hub_metadata``)."""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# the controlled variants of a setting (``multi+ES``), spelled out in config names: ``es`` would read as Spanish
VARIANT_NAMES = {"EQ": "en_question", "ES": "en_support", "ED": "en_distractors"}
_VARIANT_SETTING = re.compile(r"^(mono|multi)((?:\+(?:EQ|ES|ED))+)$", re.I)
# config names of earlier releases: ``multi-es-de`` (multi+ES, German questions), ``multi-eq-es-de``
_OLD_VARIANT_NAME = re.compile(r"^(mono|multi)((?:-(?:eq|es|ed))+)-([a-z]{2,3})$")


def config_name(setting: str, language: str) -> str:
    """One release config per setting and question language, the question language right after the base
    setting and the variants spelled out after it.

    ``mono``/``de`` -> ``mono-de``; ``multi+ES``/``de`` -> ``multi-de-en_support`` (German questions, the English
    translation of the supporting article); ``multi+EQ+ED``/``es`` -> ``multi-es-en_question-en_distractors``;
    a setting that already names its language (``en-baseline`` with English questions) keeps its own name.
    Hub config names are used as folder names, so other settings are slugged (lower case, ``-``).
    Before this scheme a variant's config was ``multi-es-de``, which reads as Spanish–German;
    ``canonical_config`` maps those old names to these.
    """
    m = _VARIANT_SETTING.match(setting)
    if m:
        variants = [VARIANT_NAMES[v.upper()] for v in m.group(2).split("+") if v]
        return "-".join([m.group(1).lower(), language, *variants])
    slug = re.sub(r"[^a-z0-9]+", "-", setting.lower()).strip("-")
    if slug.startswith(f"{language}-"):
        return slug
    return f"{slug}-{language}"


def canonical_config(name: str) -> str:
    """The current name of a config: an old variant name (``multi-es-de``) becomes ``multi-de-en_support``;
    any other name is returned as it is."""
    m = _OLD_VARIANT_NAME.match(name)
    if not m:
        return name
    setting = m.group(1) + "".join(f"+{v.upper()}" for v in m.group(2).split("-") if v)
    return config_name(setting, m.group(3))


_NEW_VARIANT_NAME = re.compile(r"^(mono|multi)-([a-z]{2,3})((?:-en_(?:question|support|distractors))+)$")
_VARIANT_CODES = {name: code for code, name in VARIANT_NAMES.items()}


def config_aliases(name: str) -> list[str]:
    """Every name a config may have on disk or on the Hub: its current and its old name (a Hub download of
    ``multi-de-en_support`` also finds the ``multi-es-de`` of an older release, and the other way round)."""
    current = canonical_config(name)
    m = _NEW_VARIANT_NAME.match(current)
    if not m:
        return [current]
    old = "-".join([m.group(1), *(_VARIANT_CODES[v].lower() for v in m.group(3).split("-")[1:]), m.group(2)])
    return [current, old]


def resolve_configs(requested: Sequence[str], known: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the ``known`` configs the ``requested`` names mean, the requested names matching none): a name
    matches a known config under its current or its old name, so evaluation configs written for older
    releases keep working and new names work on older releases."""
    by_canonical = {canonical_config(k): k for k in known}
    found, unknown = [], []
    for name in requested:
        hit = by_canonical.get(canonical_config(name))
        (found if hit else unknown).append(hit or name)
    return found, unknown
