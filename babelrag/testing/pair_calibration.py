"""Dense pair thresholds measured on real same-event news written by different outlets (NTREX-128).

The labelled set (``tests/fixtures/ntrex_events``, source and licence in its README) holds leads of WMT19
newstest documents, each in ONE language: some English originals, some professional translations into
de/fr/es/zh. No article is a translation of another, so a correct X-English pair joins two outlets' reports of
the same event. Events are split by a fixed seed into a calibration half and a held-out half.

Pairs are mined by the pairs stage itself (``Pipeline(...).run(until="pairs")``, every non-English article a
query, Milvus Lite, the configured encoder) with ``dense.min_pair_similarity`` at -1, so every candidate that
survives the mutual rule comes back with its cosine and any threshold can be applied afterwards: exactly what
the stage keeps at that threshold. Used by ``bench/bench_dense_threshold.py`` and the calibration test.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from babelrag.config import config_from_dict
from babelrag.pipeline import Pipeline
from babelrag.records import ArticlePair
from babelrag.store import BuildStore

HALVES = ("calibration", "held-out")


@dataclass(frozen=True)
class LabelledSet:
    articles: Path
    language: dict[str, str]  # article id -> language
    outlet: dict[str, str]  # article id -> source_domain
    event: dict[str, str]  # article id -> event id
    topic: dict[str, str]  # event id -> running story it belongs to ("" if none)
    half: dict[str, str]  # event id -> "calibration" | "held-out" (events with a non-English article)

    def queries(self, half: str) -> list[str]:
        """Non-English articles of the half's events: the articles whose pairs are scored there."""
        return sorted(a for a, lang in self.language.items() if lang != "en" and self.half[self.event[a]] == half)

    def has_counterpart(self, article: str) -> bool:
        """Has an English report of its event by another outlet."""
        return any(self.independent(article, b) for b in self.language if self.language[b] == "en")

    def independent(self, a: str, b: str) -> bool:
        return self.event[a] == self.event[b] and self.outlet[a] != self.outlet[b]

    def same_outlet_twin(self, a: str, b: str) -> bool:
        """Same event, same outlet (e.g. two Reuters pieces on the quake): neither right nor wrong here."""
        return self.event[a] == self.event[b] and self.outlet[a] == self.outlet[b]


def load_set(root: Path) -> LabelledSet:
    """The labelled set in ``root`` (``tests/fixtures/ntrex_events``: articles.jsonl and events.json)."""
    rows = [json.loads(line) for line in (root / "articles.jsonl").read_text(encoding="utf-8").splitlines() if line]
    labels = json.loads((root / "events.json").read_text(encoding="utf-8"))
    event = {a: e["event"] for e in labels["events"] for a in e["articles"]}
    topic = {e["event"]: e.get("topic", "") for e in labels["events"]}
    language = {r["id"]: r["language"] for r in rows}
    outlet = {r["id"]: r["source_domain"] for r in rows}
    return LabelledSet(root / "articles.jsonl", language, outlet, event, topic,
                       split_events(labels["events"], language, labels["split_seed"]))


def split_events(events: list[dict], language: dict[str, str], seed: int) -> dict[str, str]:
    """Halve the events that have a non-English article, by a seeded shuffle, separately for events with an
    English report too (they carry the recall) and events without one (they only test precision)."""
    half: dict[str, str] = {}
    with_x = [e for e in events if any(language[a] != "en" for a in e["articles"])]
    for paired in (True, False):
        group = sorted(e["event"] for e in with_x
                       if any(language[a] == "en" for a in e["articles"]) == paired)
        random.Random(seed).shuffle(group)
        for i, ev in enumerate(group):
            half[ev] = HALVES[i % 2]
    for e in events:
        half.setdefault(e["event"], "")  # English-only events: candidates, never queries
    return half


#: Sets up to this many articles are ingested in one process (no worker pool).
SMALL_SET = 300


def run_pairs_stage(build_dir: Path, data: LabelledSet, dense: dict, pairs: dict, until: str = "pairs",
                    sections: dict | None = None) -> list:
    """The pairs stage (after ingest and index) on the labelled set with these ``dense`` / ``pairs``
    settings; its ArticlePairs. ``until="relevance"`` runs the LLM check too (``sections`` holds its
    ``relevance`` and ``llm`` settings) and returns the pairs it checked, each with its verdict. In the same
    ``build_dir`` only the stages whose settings changed re-run."""
    languages = sorted(set(data.language.values()))
    cfg = config_from_dict({
        # a one-language cut (pair_relevance.one_language) has no English: its language is the pivot
        "project": {"build_dir": str(build_dir), "languages": languages,
                    "pivot_language": "en" if "en" in languages else languages[0]},
        # NTREX leads; the documents carry no date of their own (all 28 Sep - 1 Oct 2018)
        "corpus": {"inputs": [{"path": str(data.articles), "format": "jsonl"}], "min_tokens": 10},
        "dense": dense,
        "pairs": pairs,
        # a pool's workers each import trafilatura and load lingua first: for a set of short leads that costs more
        # than it saves (the 55-lead set: 52 -> 38 s); the 1,107-lead one keeps the pool. Same output either way.
        **({"executor": {"processes": 1}} if len(data.language) <= SMALL_SET else {}),
        **(sections or {}),
    })
    Pipeline(cfg).run(until=until)
    return BuildStore(cfg.build_dir).read(until, ArticlePair)


def mine_pairs(build_dir: Path, data: LabelledSet, encoder: str, mutual_margin: float | None = None,
               min_pair_similarity: float | None = -1.0, pair_score: str | None = None,
               min_pair_margin: float | None = 0.0) -> list[tuple[str, str, float]]:
    """(non-English id, English id, score) of every dense pair the pairs stage mines; by default with no
    threshold (cosine -1, margin 0). ``None`` leaves a setting at the stage's own default (the encoder kind's
    calibrated one); ``pair_score`` ``margin`` scores (and thresholds) the ratio margin instead of the cosine."""
    dense = {"encoder": {"kind": encoder}, "min_pair_similarity": min_pair_similarity,
             "min_pair_margin": min_pair_margin}
    if pair_score is not None:
        dense["pair_score"] = pair_score
    if mutual_margin is not None:
        dense["mutual_margin"] = mutual_margin
    lang = data.language
    out = []
    for p in run_pairs_stage(build_dir, data, dense, {"same_language_dense": "off"}):
        if p.method != "dense":
            continue
        x, en = (p.article_a, p.article_b) if lang[p.article_b] == "en" else (p.article_b, p.article_a)
        out.append((x, en, float(p.score)))
    return out


@dataclass(frozen=True)
class Score:
    threshold: float
    pairs: int
    correct: int
    same_topic: int  # wrong pairs whose two events belong to one running story
    recall_hits: int  # non-English articles with an English same-event report that got a correct pair
    recall_of: int  # non-English articles with an English same-event report

    @property
    def precision(self) -> float:
        return self.correct / self.pairs if self.pairs else 1.0

    @property
    def recall(self) -> float:
        return self.recall_hits / self.recall_of if self.recall_of else 0.0


def pooled(scores: list[Score], threshold: float = float("nan")) -> Score:
    """Several sets' scores summed (pairs, correct, same-topic, articles): one figure over all of them."""
    return Score(threshold, *(sum(getattr(s, f) for s in scores)
                              for f in ("pairs", "correct", "same_topic", "recall_hits", "recall_of")))


def score(pairs: list[tuple[str, str, float]], data: LabelledSet, half: str, threshold: float) -> Score:
    queries = set(data.queries(half))
    kept = [(x, en) for x, en, s in pairs
            if x in queries and s >= threshold and not data.same_outlet_twin(x, en)]
    right = [(x, en) for x, en in kept if data.event[x] == data.event[en]]
    wrong = [(x, en) for x, en in kept if data.event[x] != data.event[en]]
    same_topic = sum(1 for x, en in wrong if data.topic[data.event[x]]
                     and data.topic[data.event[x]] == data.topic[data.event[en]])
    want = {x for x in queries if data.has_counterpart(x)}
    return Score(threshold, len(kept), len(right), same_topic, len({x for x, _ in right} & want), len(want))


def choose_threshold(scores: list[Score], min_precision: float = 0.8) -> Score:
    """The calibration rule: the highest article recall among thresholds with at least ``min_precision``
    (ties: the higher precision, then the lower threshold); if none reaches it, the highest precision."""
    ok = [s for s in scores if s.pairs and s.precision >= min_precision]
    if ok:
        return max(ok, key=lambda s: (s.recall, s.precision, -s.threshold))
    return max(scores, key=lambda s: (s.precision, s.recall, -s.threshold))
