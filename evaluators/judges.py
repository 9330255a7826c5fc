"""LLM-judged steps of every evaluator, through ``babelrag.llm.LLMRunner``.

Each function renders one prompt file from ``prompts/`` (id + version go into the cache key and the
records), sends all items in one ``map_structured`` call, and turns replies into the judgement types
the metric modules score. A failed item (after the LLM layer's retries and JSON repair) becomes an
abstention / NaN / ``None`` that the metric counts — never a silent default verdict.
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, Optional

from pydantic import BaseModel, Field

from babelrag.evaluators.garage import GarageItem
from babelrag.evaluators.mirage import JudgedBattles, Matchup, judge_battles
from babelrag.evaluators.sentences import split_sentences

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.llm.client import LLMRunner, Result
    from babelrag.llm.prompts import Prompt

NAN = float("nan")


@lru_cache(maxsize=None)
def prompt(name: str) -> "Prompt":
    """Load ``prompts/<name>.yaml`` (cached)."""
    from babelrag.llm.prompts import Prompt

    return Prompt.beside(__file__, f"prompts/{name}.yaml")


# ---------------------------------------------------------------- schemas


class CorrectVerdict(BaseModel):
    correct: bool
    reason: str = ""


class PairVerdict(BaseModel):
    verdict: Literal["A", "B", "tie"]
    reason: str = ""


class Score15(BaseModel):
    score: int = Field(ge=1, le=5)


class Eligibility(BaseModel):
    eligible: bool
    major_issues: list[str] = Field(default_factory=list)


class Support(BaseModel):
    support: list[list[str]]


class Deflection(BaseModel):
    deflected: bool


class Statement(BaseModel):
    text: str
    supported: bool


class Statements(BaseModel):
    statements: list[Statement]


class GeneratedQuestions(BaseModel):
    questions: list[str]
    noncommittal: bool = False


class EssentialSentences(BaseModel):
    sentences: list[str]


class Choice(BaseModel):
    choice: Literal["A", "B"]


def _values(results: Sequence["Result"]) -> list[Any]:
    return [r.value if r.ok else None for r in results]


# ---------------------------------------------------------------- XRAG


def panel_votes(
    runner: "LLMRunner", judges: Sequence[str], items: Sequence[Mapping[str, str]], item_ids: Sequence[str],
    stage: str = "eval.xrag.judge",
) -> list[list[Optional[bool]]]:
    """One vote per judge endpoint per item (``None`` = that judge failed on the item).

    ``items`` carry ``question``, ``gold`` and ``answer``.
    """
    votes: list[list[Optional[bool]]] = [[] for _ in items]
    for judge in judges:
        res = runner.map_structured(endpoint=judge, prompt=prompt("xrag_judge"), items=list(items),
                                    schema=CorrectVerdict, stage=f"{stage}.{judge}", item_ids=list(item_ids))
        for k, v in enumerate(_values(res)):
            votes[k].append(None if v is None else v.correct)
    return votes


def repeated_votes(
    runner: "LLMRunner", judge: str, items: Sequence[Mapping[str, str]], item_ids: Sequence[str], repeats: int,
    temperature: float, stage: str = "eval.xrag.repeat",
) -> list[list[Optional[bool]]]:
    """``repeats`` fresh verdicts of one judge per item (one list per repeat): repeat r samples at
    ``temperature`` with seed = the endpoint's seed + r, so its cache key differs from every other repeat's."""
    base = runner.settings.endpoint(judge)[1].seed or 0
    out = []
    for r in range(1, repeats + 1):
        res = runner.map_structured(endpoint=judge, prompt=prompt("xrag_judge"), items=list(items),
                                    schema=CorrectVerdict, stage=f"{stage}.{judge}", item_ids=list(item_ids),
                                    sampling={"temperature": temperature, "seed": base + r})
        out.append([None if v is None else v.correct for v in _values(res)])
    return out


# ---------------------------------------------------------------- MIRAGE


def pairwise_battles(
    runner: "LLMRunner", endpoint: str, matchups: Sequence[Matchup], questions: Mapping[str, str],
    references: Mapping[str, str], seed: int = 0, stage: str = "eval.mirage.pairwise",
) -> JudgedBattles:
    """Judge every matchup in both orders with the pairwise prompt (one batched call)."""
    requests, ids, keys = [], [], []
    for n, mu in enumerate(matchups):
        for tag, (first, second) in (("ab", (mu.answer_a, mu.answer_b)), ("ba", (mu.answer_b, mu.answer_a))):
            requests.append({"question": questions[mu.query_id], "reference": references.get(mu.query_id, ""),
                             "first": first, "second": second})
            ids.append(f"{n}:{mu.query_id}:{mu.model_a}:{mu.model_b}:{tag}")
            keys.append((mu.query_id, first, second))
    res = runner.map_structured(endpoint=endpoint, prompt=prompt("mirage_pairwise"), items=requests,
                                schema=PairVerdict, stage=stage, item_ids=ids)
    table = {}
    for key, v in zip(keys, _values(res)):
        table[key] = "fail" if v is None else {"A": "first", "B": "second", "tie": "tie"}[v.verdict]
    return judge_battles(matchups, lambda q, f, s: table[(q, f, s)], seed=seed)


def scores_1_to_5(
    runner: "LLMRunner", endpoint: str, name: str, items: Sequence[Mapping[str, Any]], item_ids: Sequence[str],
) -> list[float]:
    """Run a 1-5 scoring prompt (``mirage_fluency``, ``mirage_overlap``, ``ragas_direct``); NaN on failure."""
    res = runner.map_structured(endpoint=endpoint, prompt=prompt(name), items=list(items), schema=Score15,
                                stage=f"eval.{name}", item_ids=list(item_ids))
    return [NAN if v is None else float(v.score) for v in _values(res)]


# ---------------------------------------------------------------- GaRAGe / support


def sentence_support(
    runner: "LLMRunner", endpoint: str, records: Sequence[Mapping[str, Any]], stage: str = "eval.garage.support",
) -> list[Optional[list[list[str]]]]:
    """Per record, the passage ids supporting each sentence of ``response`` (``passages``: {id: text}).

    Unknown ids the judge invents are dropped; a failed or misaligned reply gives None (unjudged),
    which callers count as unsupported.
    """
    sentences = [split_sentences(r["response"]) for r in records]
    res = _values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("garage_support"), schema=Support, stage=stage,
        items=[{"passages": "\n".join(f"[{pid}] {text}" for pid, text in r["passages"].items()),
                "sentences": "\n".join(f"{k + 1}. {x}" for k, x in enumerate(sents))}
               for r, sents in zip(records, sentences)],
        item_ids=[str(r["query_id"]) for r in records]))
    out: list[Optional[list[list[str]]]] = []
    for r, sents, s in zip(records, sentences, res):
        if s is None or len(s.support) != len(sents):
            out.append(None if sents else [])
        else:
            known = set(r["passages"])
            out.append([[pid for pid in ids_ if pid in known] for ids_ in s.support])
    return out


def support_share(support: Optional[list[list[str]]]) -> float:
    """Share of sentences with at least one supporting passage (MIRAGE's support feature); NaN if
    unjudged or empty."""
    if not support:
        return NAN
    return sum(1 for s in support if s) / len(support)


def garage_judgements(
    runner: "LLMRunner", endpoint: str, records: Sequence[Mapping[str, Any]],
) -> list[GarageItem]:
    """Judge responses into GarageItems.

    Each record: ``query_id``, ``question``, ``gold``, ``response``, ``passages`` ({id: text}),
    ``relevant`` (gold-relevant ids), ``requires_deflection``, optional ``cited`` (ids).
    """
    ids = [str(r["query_id"]) for r in records]
    defl = _values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("garage_deflection"), schema=Deflection, stage="eval.garage.deflection",
        items=[{"question": r["question"], "response": r["response"]} for r in records], item_ids=ids))
    elig = _values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("garage_eligibility"), schema=Eligibility, stage="eval.garage.eligibility",
        items=[{"question": r["question"], "gold": r["gold"], "response": r["response"]} for r in records],
        item_ids=ids))
    support = sentence_support(runner, endpoint, records)
    out = []
    for r, d, e, sup in zip(records, defl, elig, support):
        out.append(GarageItem(
            query_id=str(r["query_id"]), requires_deflection=bool(r["requires_deflection"]),
            deflected=None if d is None else d.deflected,  # None: the judge failed (counted)
            eligible=None if e is None else e.eligible,
            # an unjudged response counts every sentence as unsupported
            sentence_support=sup if sup is not None else [[] for _ in split_sentences(r["response"])],
            relevant=list(r.get("relevant", ())), cited=list(r.get("cited", ())),
            category=str(r.get("category") or ""),
        ))
    return out


# ---------------------------------------------------------------- Ragas


def ragas_decomposition(
    runner: "LLMRunner", endpoint: str, records: Sequence[Mapping[str, str]], n_questions: int = 3,
) -> dict[str, list[dict[str, Any]]]:
    """The three decomposition judgements per record (``query_id``, ``question``, ``context``, ``answer``).

    Returns items ready for ``score_faithfulness``, ``score_answer_relevance``, ``score_context_relevance``.
    """
    ids = [str(r["query_id"]) for r in records]
    st = _values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("ragas_statements"), schema=Statements, stage="eval.ragas.statements",
        items=[{k: r[k] for k in ("context", "question", "answer")} for r in records], item_ids=ids))
    qs = _values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("ragas_questions"), schema=GeneratedQuestions, stage="eval.ragas.questions",
        items=[{"answer": r["answer"], "n": n_questions} for r in records], item_ids=ids))
    cx = _values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("ragas_context"), schema=EssentialSentences, stage="eval.ragas.context",
        items=[{"question": r["question"], "context": r["context"]} for r in records], item_ids=ids))
    faith, rel, ctx = [], [], []
    for r, s, q, c in zip(records, st, qs, cx):
        qid = str(r["query_id"])
        faith.append({"query_id": qid, "supported": [] if s is None else [x.supported for x in s.statements]})
        rel.append({"query_id": qid, "question": r["question"], "generated": [] if q is None else q.questions,
                    "noncommittal": False if q is None else q.noncommittal})
        ctx.append({"query_id": qid, "context": r["context"], "essential": [] if c is None else c.sentences})
    return {"faithfulness": faith, "answer_relevance": rel, "context_relevance": ctx}


def ragas_compare(
    runner: "LLMRunner", endpoint: str, criterion: str, pairs: Sequence[Mapping[str, str]], seed: int = 0,
) -> list[Optional[str]]:
    """Comparative ranking: "a"/"b" per pair (None on failure). Sides are shown in a seeded random
    order per pair so position bias cannot line up with the human labels."""
    rng = random.Random(seed)
    swaps = [rng.random() < 0.5 for _ in pairs]
    items = []
    for p, swap in zip(pairs, swaps):
        a, b = ("b", "a") if swap else ("a", "b")
        items.append({"criterion": criterion, "question": p["question"],
                      "context_a": p[f"context_{a}"], "answer_a": p[f"answer_{a}"],
                      "context_b": p[f"context_{b}"], "answer_b": p[f"answer_{b}"]})
    res = _values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("ragas_compare"), schema=Choice, stage=f"eval.ragas.compare.{criterion}",
        items=items, item_ids=[str(p["pair_id"]) for p in pairs]))
    out: list[Optional[str]] = []
    for v, swap in zip(res, swaps):
        if v is None:
            out.append(None)
        else:
            shown_first = v.choice == "A"
            out.append("a" if shown_first != swap else "b")
    return out
