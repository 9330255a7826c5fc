"""One tokenisation for the whole project: length filters, overlap checks, ROUGE-L and answer length.

``tokenize``: scripts written without spaces between words (CJK: Han, Kana, Bopomofo, Hangul, half-width
Kana; Thai, Lao, Myanmar, Khmer) give one token per character; elsewhere a token is a run of letters,
digits and combining marks (no underscore), so Devanagari, Bengali or Telugu words keep their vowel signs
instead of falling apart at each one. Lower-cased, punctuation dropped. One rule everywhere, so an overlap
measured in a filter and one measured in an evaluator compare.

``count_tokens(text, language)`` is the length ``corpus.min_tokens`` is measured in: words. For Chinese,
Japanese and Thai a word segmenter splits the running text (jieba, TinySegmenter, PyThaiNLP's newmm;
``SEGMENTERS``), Korean counts its space-separated words; without its package installed the count falls
back to ``tokenize`` (one token per character of those scripts), and ``min_tokens_rule`` says which rule a
language gets.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import regex

CJK_RANGES = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
# Thai, Lao, Myanmar, Khmer: written without spaces between words either
SOUTHEAST_ASIAN_RANGES = "\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff"
NO_SPACE_RANGES = CJK_RANGES + SOUTHEAST_ASIAN_RANGES
# ``regex``'s \w holds letters, digits and combining marks (Unicode TR18), unlike ``re``'s
_TOKEN = regex.compile(rf"[{NO_SPACE_RANGES}]|[^\W{NO_SPACE_RANGES}_]+", regex.UNICODE)
_WORDLIKE = regex.compile(r"[^\W_]", regex.UNICODE)

# English function words left out of content-word overlaps (question/answer wording vs facts).
STOP_WORDS = frozenset(
    "the a an of in on at to for and or by with from is are was were be will did does do what which who "
    "how many much when where why that this these those its their his her it as has have had".split())


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens; each character of a script written without spaces is its own token."""
    return _TOKEN.findall(text.lower())


def content_words(text: str) -> set[str]:
    """Tokens that carry content: numbers, and words of 3+ characters that are not stop words."""
    return {t for t in tokenize(text) if t.isdigit() or (len(t) > 2 and t not in STOP_WORDS)}


@dataclass(frozen=True)
class Segmenter:
    """A word segmenter for a language written without spaces: the package it needs and how it splits."""
    package: str  # the import name
    label: str  # as the capability table shows it
    split: Callable[[str], list[str]]


_SPACED = regex.compile(r"[^\W_]+", regex.UNICODE)


def _spaced(text: str) -> list[str]:
    return _SPACED.findall(text)


def _jieba(text: str) -> list[str]:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba.lcut(text)


@lru_cache(maxsize=1)
def _tinysegmenter() -> object:
    import tinysegmenter

    return tinysegmenter.TinySegmenter()


def _tiny(text: str) -> list[str]:
    return _tinysegmenter().tokenize(text)  # type: ignore[attr-defined]


def _newmm(text: str) -> list[str]:
    from pythainlp.tokenize import word_tokenize

    return word_tokenize(text, engine="newmm", keep_whitespace=False)


SEGMENTERS: dict[str, Segmenter] = {
    "zh": Segmenter("jieba", "jieba word segmentation", _jieba),
    "ja": Segmenter("tinysegmenter", "TinySegmenter word segmentation", _tiny),
    "th": Segmenter("pythainlp", "PyThaiNLP newmm word segmentation", _newmm),
    # Korean writes spaces between words: count those words, not Hangul syllables (tokenize's rule)
    "ko": Segmenter("regex", "words between spaces (Hangul syllables joined)", _spaced),
}


@lru_cache(maxsize=None)
def _installed(package: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(package) is not None


def segmenter_for(language: Optional[str]) -> Optional[Segmenter]:
    """The word segmenter ``count_tokens`` uses for ``language`` (None: ``tokenize``'s rule)."""
    seg = SEGMENTERS.get(language or "")
    return seg if seg is not None and _installed(seg.package) else None


def min_tokens_rule(language: str) -> str:
    """What ``corpus.min_tokens`` counts in ``language`` (for the capability table)."""
    seg = SEGMENTERS.get(language)
    if seg is None:
        return "words (runs of letters, digits and marks)"
    if _installed(seg.package):
        return seg.label
    return f"characters ({seg.package} not installed: pip install {seg.package})"


def count_tokens(text: str, language: Optional[str] = None) -> int:
    """Words in ``text``: segmented for the languages of ``SEGMENTERS`` (punctuation and spaces not counted),
    else ``len(tokenize(text))`` without building the list."""
    seg = segmenter_for(language)
    if seg is not None:
        return sum(1 for w in seg.split(text) if _WORDLIKE.search(w))
    return sum(1 for _ in _TOKEN.finditer(text))
