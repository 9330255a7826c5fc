"""Does an encoder pair an article in language X with its English original? Measured on real news.

The set is ``tests/fixtures/ntrex_languages`` (NTREX-128, CC BY-SA 4.0; source in its README): twelve English
news leads and their professional translations into the 18 MIRAGE-Bench languages and Polish. For each X
article the encoder ranks the twelve English leads by cosine; it is matched when its own original comes first.
``coverage.py``'s ``measured`` claims (a language outside a model's documented list, admitted because it passed:
at least 10 of 12) are re-checked from this by ``tests/test_encoder_coverage.py``; ``bench/bench_encoder_coverage.py``
prints the whole table (docs/construct.md, "Languages").
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PASS = 10  # of 12: a language outside the documented list is admitted as measured at this or better


@dataclass(frozen=True)
class LanguageScore:
    language: str
    matched: int  # X articles whose English original ranks first
    total: int
    margin: float  # mean cosine gap between the first and the second English lead

    @property
    def passed(self) -> bool:
        return self.matched >= PASS * self.total / 12


def _doc(row: dict[str, Any]) -> str:
    return row.get("ntrex_doc") or row["id"].split("-", 1)[1]


def _text(row: dict[str, Any]) -> str:
    return f"{row.get('title') or ''}. {(row.get('maintext') or row.get('text') or '')[:1000]}"


def read_set(path: Path) -> dict[str, list[dict[str, Any]]]:
    """language -> its articles, from ``path`` (``tests/fixtures/ntrex_languages/articles.jsonl``)."""
    by: dict[str, list[dict[str, Any]]] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                by.setdefault(row["language"], []).append(row)
    return by


def score_languages(encoder: Any, languages: list[str], by: dict[str, list[dict[str, Any]]]) -> list[LanguageScore]:
    """X -> English top-1 per language, with ``encoder`` (``Encoder.encode``: L2-normalised rows)."""
    import numpy as np

    english = by["en"]
    en_vecs = encoder.encode([_text(r) for r in english], "passage")
    en_docs = [_doc(r) for r in english]
    out = []
    for lang in languages:
        rows = by[lang]
        sims = encoder.encode([_text(r) for r in rows], "passage") @ en_vecs.T
        best = np.argmax(sims, axis=1)
        ranked = np.sort(sims, axis=1)
        matched = sum(en_docs[int(best[i])] == _doc(row) for i, row in enumerate(rows))
        out.append(LanguageScore(lang, int(matched), len(rows), float(np.mean(ranked[:, -1] - ranked[:, -2]))))
    return out
