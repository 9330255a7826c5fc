"""One tokenisation for the whole project: length filters, overlap checks, ROUGE-L and answer length.

CJK (Han, Kana, Bopomofo, Hangul, half-width Kana) has no spaces, so each such character is one token;
elsewhere a token is a run of letters/digits (no underscore). Lower-cased, punctuation dropped. One rule
everywhere, so a length measured at ingest and one measured in an evaluator compare.
"""
from __future__ import annotations

import re

CJK_RANGES = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
_TOKEN = re.compile(rf"[{CJK_RANGES}]|[^\W{CJK_RANGES}_]+", re.UNICODE)

# English function words left out of content-word overlaps (question/answer wording vs facts).
STOP_WORDS = frozenset(
    "the a an of in on at to for and or by with from is are was were be will did does do what which who "
    "how many much when where why that this these those its their his her it as has have had".split())


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens; each CJK character is its own token."""
    return _TOKEN.findall(text.lower())


def count_tokens(text: str) -> int:
    """``len(tokenize(text))`` without building the list."""
    return sum(1 for _ in _TOKEN.finditer(text))


def content_words(text: str) -> set[str]:
    """Tokens that carry content: numbers, and words of 3+ characters that are not stop words."""
    return {t for t in tokenize(text) if t.isdigit() or (len(t) > 2 and t not in STOP_WORDS)}
