"""Sentence splitting for the evaluators; tokens come from the project-wide ``babelrag.tokens``."""
from __future__ import annotations

import re

from babelrag.tokens import tokenize  # noqa: F401  (re-exported: the evaluators' one tokenizer)

_SENT_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f\u061f\u0964])\s+|(?<=[\u3002\uff01\uff1f])|\n+")


def split_sentences(text: str) -> list[str]:
    """Rough sentence split on terminal punctuation (Latin, CJK, Arabic, Devanagari) and newlines."""
    return [s.strip() for s in _SENT_END.split(text) if s and s.strip()]
