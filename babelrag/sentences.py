"""Sentence splitting (citation markers stay with the sentence they follow): the evaluators split answers
with it, annotation splits articles to highlight sentences, so it lives in the core both import."""
from __future__ import annotations

import re

_TERMINAL = "[.!?\u3002\uff01\uff1f\u061f\u0964]+"
# citation markers standing after the full stop ("...2022.[cite_1] It", "...2022. [3] It") stay with
# the sentence they follow; a bracket counts as a marker when it holds a digit
_MARKERS_AFTER = r"(?:[ \t]*\[[^\[\]\n]{0,80}\d[^\[\]\n]{0,80}\])*"
_SENT_END = re.compile(rf"{_TERMINAL}{_MARKERS_AFTER}(?=\s|$)|[\u3002\uff01\uff1f]+{_MARKERS_AFTER}|\n+")


def split_sentences(text: str) -> list[str]:
    """Rough sentence split on terminal punctuation (Latin, CJK, Arabic, Devanagari) and newlines;
    citation markers after the full stop belong to the sentence before them."""
    pieces, start = [], 0
    for m in _SENT_END.finditer(text):
        newline = m.group(0).startswith("\n")
        pieces.append(text[start:m.start() if newline else m.end()])
        start = m.end()
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]
