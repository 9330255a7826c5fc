"""Mined pairs before and after the LLM relevance check, scored on the real NTREX same-event sets.

Dense similarity does not tell one event from the next event of the same running story (docs/construct.md: on
the held-out NTREX data no threshold of any offline score meets the pair bars); the ``relevance`` stage with
``relevance.criterion: event`` is built to make that cut. This measures it: the pipeline runs ingest, index,
pairs and relevance on one language of ``tests/fixtures/ntrex_samelang`` (same-language pairs: two outlets'
reports in that language) or on one X-English set made from it (``cross_language_set``: dense X-English pairs),
and the pairs are scored before the check and after it (those judged related), on both halves: the check
chooses no threshold, so neither half was used to calibrate it. Used by ``bench/bench_pair_relevance.py``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from babelrag import llm_session
from babelrag.records import ArticlePair
from babelrag.store import BuildStore
from babelrag.testing import pair_calibration, samelang_calibration
from babelrag.testing.pair_calibration import HALVES


@dataclass(frozen=True)
class Checked:
    """One set's pairs: every mined pair, the ones the judge called related, and how many got no verdict."""

    mined: list
    related: list
    unanswered: int  # pairs whose reply could not be parsed (ErrorRecords): neither kept nor rejected


def one_language(data: samelang_calibration.SameLanguageSet, language: str,
                 out_dir: Path) -> samelang_calibration.SameLanguageSet:
    """The nine-language set cut to ``language``: its articles only, so the pipeline mines same-language pairs
    and no translation pairs across languages."""
    rows = [json.loads(line) for line in data.articles.read_text(encoding="utf-8").splitlines() if line]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"ntrex-{language}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows if r["language"] == language),
                    encoding="utf-8")
    keep = {a for a, lang in data.language.items() if lang == language}
    return samelang_calibration.SameLanguageSet(
        articles=path, language={a: data.language[a] for a in keep}, outlet={a: data.outlet[a] for a in keep},
        event={a: data.event[a] for a in keep}, topic=data.topic, half=data.half)


def _checked(build_dir: Path, data: Any, encoder: str, pairs_cfg: dict, relevance: dict, llm: dict,
             dense: dict | None = None) -> tuple[list, list]:
    dense_cfg = {"encoder": {"kind": encoder}, **(dense or {})}
    try:
        checked = pair_calibration.run_pairs_stage(build_dir, data, dense_cfg, pairs_cfg, until="relevance",
                                                   sections={"relevance": relevance, "llm": llm})
    finally:
        llm_session.reset()  # the next set starts with fresh clients and counters
    return BuildStore(build_dir).read("pairs", ArticlePair), checked


def same_language(build_dir: Path, data: samelang_calibration.SameLanguageSet, encoder: str, relevance: dict,
                  llm: dict, pairs: dict | None = None) -> Checked:
    """Same-language pairs of a one-language set (``one_language``) before and after the check."""
    pairs_cfg = {"graphml": False, "same_language_in": "all", **(pairs or {})}
    mined, checked = _checked(build_dir, data, encoder, pairs_cfg, relevance, llm)

    def as_mined(ps: list) -> list[samelang_calibration.MinedPair]:
        return [samelang_calibration.MinedPair(p.article_a, p.article_b, p.language_a, p.method, float(p.score))
                for p in ps if p.language_a == p.language_b]

    return Checked(as_mined(mined), as_mined([p for p in checked if p.relevant]), len(mined) - len(checked))


def cross_language(build_dir: Path, data: pair_calibration.LabelledSet, encoder: str, relevance: dict, llm: dict,
                   dense: dict | None = None) -> Checked:
    """Dense X-English pairs of a ``cross_language_set`` before and after the check (no same-language pairs:
    the judge is asked about the cross-language ones only)."""
    mined, checked = _checked(build_dir, data, encoder, {"graphml": False, "same_language_dense": "off"},
                              relevance, llm, dense)

    def as_tuples(ps: list) -> list[tuple[str, str, float]]:
        lang = data.language
        out = []
        for p in ps:
            if p.method == "dense":
                x, en = (p.article_a, p.article_b) if lang[p.article_b] == "en" else (p.article_b, p.article_a)
                out.append((x, en, float(p.score)))
        return out

    dense_mined = as_tuples(mined)
    return Checked(dense_mined, as_tuples([p for p in checked if p.relevant]),
                   len(dense_mined) - len(as_tuples(checked)))


def scores(result: Checked, data: Any) -> dict[str, tuple]:
    """(before, after) per half; same-language or cross-language scores by the set's type."""
    out = {}
    for half in HALVES:
        if isinstance(data, samelang_calibration.SameLanguageSet):
            out[half] = (samelang_calibration.score(result.mined, data, half),
                         samelang_calibration.score(result.related, data, half))
        else:
            out[half] = (pair_calibration.score(result.mined, data, half, -1.0),
                         pair_calibration.score(result.related, data, half, -1.0))
    return out


__all__ = ["Checked", "one_language", "same_language", "cross_language", "scores"]
