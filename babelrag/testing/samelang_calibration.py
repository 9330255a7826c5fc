"""Same-language pair mining measured on real news: one language at a time, same-event reports by different outlets.

The set (``tests/fixtures/ntrex_samelang``, source and licence in its README) holds all 123 WMT19 newstest2019
documents (NTREX-128) in nine languages: the English originals and professional translations into de, fr, es,
zh, ar, ru, it, pt. Inside one language no document is a translation of another, so a correct same-language pair
joins two outlets' reports of one event. Events (hand labels at document level) are split by a fixed seed into a
calibration half and a held-out half.

Pairs are mined by the pairs stage itself (ingest with its NER, index, pairs) on the whole multilingual corpus,
once per ``pairs.hybrid_min_score`` to score (the ingest and index stages run once, the pairs stage per
threshold): exactly what the stage keeps, entity-graph pairs after the hybrid's gate included. Used by
``bench/bench_samelang_pairs.py`` and ``tests/test_samelang_calibration.py``; ``cross_language_set`` makes
one-language-per-document X-English sets from it for the cross-language defaults (``bench_dense_threshold``).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from babelrag.testing import pair_calibration
from babelrag.testing.pair_calibration import HALVES, choose_threshold



@dataclass(frozen=True)
class MinedPair:
    a: str
    b: str
    language: str
    method: str  # entity_graph | hybrid
    score: float


@dataclass(frozen=True)
class SameLanguageSet(pair_calibration.LabelledSet):
    """The labelled set's fields (article -> language, outlet, event; event -> topic, half), every language's
    articles scored against their own language."""

    @property
    def languages(self) -> list[str]:
        return sorted(set(self.language.values()))

    def articles_of(self, language: str, half: str) -> list[str]:
        return sorted(a for a, lang in self.language.items() if lang == language and self.half[self.event[a]] == half)

    def has_counterpart(self, article: str) -> bool:
        """Another outlet's report of its event exists in its language."""
        lang = self.language[article]
        return any(self.independent(article, b) for b, lb in self.language.items() if lb == lang and b != article)


def load_set(root: Path) -> SameLanguageSet:
    """The set in ``root`` (``tests/fixtures/ntrex_samelang``: articles.jsonl and events.json)."""
    rows = [json.loads(line) for line in (root / "articles.jsonl").read_text(encoding="utf-8").splitlines() if line]
    labels = json.loads((root / "events.json").read_text(encoding="utf-8"))
    doc_event = {d: e["event"] for e in labels["events"] for d in e["docs"]}
    missing = sorted({r["ntrex_doc"] for r in rows} - set(doc_event))
    if missing:
        raise ValueError(f"{root / 'events.json'}: no event label for documents {missing[:5]}")
    return SameLanguageSet(
        articles=root / "articles.jsonl",
        language={r["id"]: r["language"] for r in rows},
        outlet={r["id"]: r["source_domain"] for r in rows},
        event={r["id"]: doc_event[r["ntrex_doc"]] for r in rows},
        topic={e["event"]: e.get("topic", "") for e in labels["events"]},
        half=split_events(labels["events"], labels["split_seed"]))


def split_events(events: list[dict], seed: int) -> dict[str, str]:
    """Halve the events so both halves hold about as many articles with a counterpart: events of several
    documents (they carry the recall), largest first (ties in a seeded order), each to the half with fewer
    documents so far; single-document events (they only test precision) alternate in a seeded order."""
    rng = random.Random(seed)
    half: dict[str, str] = {}
    several = sorted(events, key=lambda e: e["event"])
    rng.shuffle(several)
    several = sorted((e for e in several if len(e["docs"]) > 1), key=lambda e: -len(e["docs"]))
    size = {h: 0 for h in HALVES}
    for i, e in enumerate(several):
        h = min(HALVES, key=lambda h: (size[h], HALVES.index(h) != i % 2))
        half[e["event"]] = h
        size[h] += len(e["docs"])
    single = sorted(e["event"] for e in events if len(e["docs"]) == 1)
    rng.shuffle(single)
    for i, ev in enumerate(single):
        half[ev] = HALVES[i % 2]
    return half


def mine_pairs(build_dir: Path, data: SameLanguageSet, encoder: str, hybrid_min_score: float | None = None,
               same_language_dense: str | None = None, hybrid_score: str | None = None) -> list[MinedPair]:
    """Every same-language pair the pairs stage keeps on the whole set (entity graph and hybrid) at
    ``pairs.hybrid_min_score`` (``None``: the encoder kind's default). Re-running with another threshold in the
    same ``build_dir`` re-runs the pairs stage only (ingest and index are fingerprinted without it)."""
    pairs_cfg: dict = {"hybrid_min_score": hybrid_min_score, "graphml": False, "same_language_in": "all"}
    if same_language_dense is not None:
        pairs_cfg["same_language_dense"] = same_language_dense
    if hybrid_score is not None:
        pairs_cfg["hybrid_score"] = hybrid_score
    return [MinedPair(p.article_a, p.article_b, p.language_a, p.method, float(p.score))
            for p in pair_calibration.run_pairs_stage(build_dir, data, {"encoder": {"kind": encoder}}, pairs_cfg)
            if p.language_a == p.language_b]


@dataclass(frozen=True)
class Score(pair_calibration.Score):
    language: str = "all"
    by_method: tuple[tuple[str, int, int], ...] = ()  # (method, pairs, correct)


def score(pairs: list[MinedPair], data: SameLanguageSet, half: str, language: str | None = None,
          threshold: float = float("nan")) -> Score:
    """The pairs (of ``language``; all languages pooled if None) that touch an article of ``half``; same-outlet
    twins are not scored. ``threshold`` only labels the score."""
    languages = [language] if language else data.languages
    members = {a for lang in languages for a in data.articles_of(lang, half)}
    kept = [p for p in pairs if p.language in languages and (p.a in members or p.b in members)
            and not data.same_outlet_twin(p.a, p.b)]
    right = [p for p in kept if data.event[p.a] == data.event[p.b]]
    wrong = [p for p in kept if data.event[p.a] != data.event[p.b]]
    same_topic = sum(1 for p in wrong if data.topic[data.event[p.a]]
                     and data.topic[data.event[p.a]] == data.topic[data.event[p.b]])
    want = {a for a in members if data.has_counterpart(a)}
    hits = {a for p in right for a in (p.a, p.b)} & want
    methods = sorted({p.method for p in kept})
    by_method = tuple((m, sum(p.method == m for p in kept), sum(p.method == m for p in right)) for m in methods)
    return Score(threshold, len(kept), len(right), same_topic, len(hits), len(want), language or "all", by_method)


def cross_language_set(data: SameLanguageSet, language: str, out_dir: Path, events: "pair_calibration.LabelledSet",
                       seed: int = 27) -> "pair_calibration.LabelledSet":
    """A cross-language set from the nine-language one: every document once, in ``language`` or in English.

    Each multi-report event's documents alternate between the two in a seeded order (per language, so each
    language puts other documents on the English side), as do the single-report events, so no article is a
    translation of another and a correct X-English pair joins two outlets' reports. Events whose documents were
    in the calibration half of ``events`` (the ``tests/fixtures/ntrex_events`` set, which chose
    ``dense.min_pair_similarity``) are the ``calibration`` half here; all others are ``held-out``: a test of
    the cross-language defaults on data that chose nothing."""
    rows = [json.loads(line) for line in data.articles.read_text(encoding="utf-8").splitlines() if line]
    by_doc = {(r["ntrex_doc"], r["language"]): r for r in rows}
    xl = events
    calibration_docs = {a.split("-", 1)[1] for a, ev in xl.event.items() if xl.half[ev] == "calibration"}
    docs_of: dict[str, list[str]] = {}
    for (doc, lang), r in sorted(by_doc.items()):
        if lang == "en":
            docs_of.setdefault(data.event[r["id"]], []).append(doc)
    rng = random.Random(f"{seed}-{language}")
    chosen: dict[str, str] = {}
    singles = []
    for event in sorted(docs_of):
        docs = sorted(docs_of[event])
        if len(docs) == 1:
            singles.append(docs[0])
            continue
        rng.shuffle(docs)
        chosen.update((d, language if i % 2 == 0 else "en") for i, d in enumerate(docs))
    rng.shuffle(singles)
    chosen.update((d, language if i % 2 == 0 else "en") for i, d in enumerate(singles))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"ntrex-{language}-en.jsonl"
    picked = [by_doc[(doc, lang)] for doc, lang in sorted(chosen.items())]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in picked), encoding="utf-8")
    half = {event: ("calibration" if set(docs) & calibration_docs else "held-out") for event, docs in docs_of.items()}
    return pair_calibration.LabelledSet(
        articles=path, language={r["id"]: r["language"] for r in picked},
        outlet={r["id"]: r["source_domain"] for r in picked}, event={r["id"]: data.event[r["id"]] for r in picked},
        topic=data.topic, half=half)


__all__ = ["MinedPair", "SameLanguageSet", "Score", "load_set", "split_events", "mine_pairs", "score",
           "choose_threshold", "cross_language_set"]
