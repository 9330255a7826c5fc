"""Config names: a small pure helper shared by build, convert and validation (language tags and size
categories for the card: ``hub_metadata``)."""
from __future__ import annotations

import re


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

