"""The language check (babelrag/langcheck.py) on real news text: how often it fails a text in its own
language (false failures), leaves it unchecked, and lets a text in another language pass (misses).

Texts: every line (title + lead lines) of the NTREX-128 documents in tests/fixtures/ntrex_samelang and every
sentence of the demo's Wikinews stories (babelrag/data/wikinews), in en/de/es/fr, whole and cut at , ; :
(clauses: answer-sized pieces, often little more than names). Misses: each whole line checked in the slot of
another language (de in en, fr in es, en in de, es in fr). Two candidate sets: the four languages (as a
project validates them) and evaluation's ``DEFAULT_LANGUAGES``.

Usage: python bench/bench_langcheck.py
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from babelrag.sentences import split_sentences
from babelrag.langcheck import DEFAULT_LANGUAGES, LanguageChecker

ROOT = Path(__file__).resolve().parents[1]
FOUR = ("de", "en", "es", "fr")
SWAPS = (("de", "en"), ("fr", "es"), ("en", "de"), ("es", "fr"))


def texts() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(whole lines / sentences, clauses) as (language, text)."""
    whole: list[tuple[str, str]] = []
    for line in (ROOT / "tests/fixtures/ntrex_samelang/articles.jsonl").read_text(encoding="utf-8").splitlines():
        art = json.loads(line)
        if art["language"] in FOUR:
            whole += [(art["language"], t) for t in [art["title"], *art["maintext"].split("\n")]]
    for line in (ROOT / "babelrag/data/wikinews/articles.jsonl").read_text(encoding="utf-8").splitlines():
        art = json.loads(line)
        if art["language"] in FOUR:
            whole += [(art["language"], t) for t in [art["title"], *split_sentences(art["maintext"])]]
    clauses = [(lang, c) for lang, t in whole for c in re.split(r"[,;:]\s+", t) if c.strip()]
    return whole, clauses


def main() -> None:
    whole, clauses = texts()
    print(f"{len(whole)} lines/sentences, {len(clauses)} clauses (en/de/es/fr)")
    print(f"{'candidates':<12} {'texts':<8} {'false failures':>15} {'unchecked':>10} {'misses (wrong slot)':>38}")
    for name, langs in (("four", FOUR), ("evaluation", tuple(DEFAULT_LANGUAGES))):
        for kind, data in (("whole", whole), ("clauses", clauses)):
            checker = LanguageChecker(list(langs))
            wrong = sum(checker.check(text, lang) is not None for lang, text in data)
            unchecked = checker.unchecked
            misses = {f"{a}>{b}": (sum(LanguageChecker(list(langs)).check(t, b) is None for lang, t in data if lang == a),
                                   sum(lang == a for lang, _ in data))
                      for a, b in SWAPS} if kind == "whole" else {}
            miss = ", ".join(f"{k} {n}/{of}" for k, (n, of) in misses.items()) or "-"
            print(f"{name:<12} {kind:<8} {wrong:>9} of {len(data):<5} {unchecked:>6} {miss:>46}")


if __name__ == "__main__":
    main()
