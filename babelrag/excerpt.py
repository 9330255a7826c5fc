"""Cutting article text to a budget the same way everywhere it is shown to a model."""
from __future__ import annotations

from typing import Optional


def excerpt(text: str, chars: Optional[int]) -> str:
    """``text`` cut at the last word boundary within ``chars`` characters, marked with " …";
    unchanged when it fits or ``chars`` is None/0."""
    if not chars or len(text) <= chars:
        return text
    cut = text[:chars]
    return cut[: cut.rfind(" ")] + " …" if " " in cut else cut
