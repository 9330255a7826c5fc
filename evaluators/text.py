"""Tokenisation shared by answer length, ROUGE-L and sentence splitting.

CJK (Han, Kana, Hangul) has no spaces, so each such character is one token; elsewhere a token is a
run of letters/digits. Lower-cased, punctuation dropped. Same rule everywhere so lengths compare.
"""
from __future__ import annotations

import re

_CJK = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}_]+", re.UNICODE)
_SENT_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f\u061f\u0964])\s+|(?<=[\u3002\uff01\uff1f])|\n+")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens; each CJK character is its own token."""
    return _TOKEN.findall(text.lower())


def split_sentences(text: str) -> list[str]:
    """Rough sentence split on terminal punctuation (Latin, CJK, Arabic, Devanagari) and newlines."""
    return [s.strip() for s in _SENT_END.split(text) if s and s.strip()]
