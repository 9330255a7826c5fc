"""What every metric's judge chain is built from, through ``babelrag.llm.LLMRunner``: the prompt loader,
the reply schemas, and the judged steps several metrics share (1-5 scores, sentence support). Each metric
module owns its own chain (``xrag_judge``, ``garage.garage_judgements``, ``mirage.pairwise_battles``,
``ragas.ragas_decomposition``, ``contrastive.ragas_compare``); this module imports none of them.

Each function renders one prompt file from ``prompts/`` (id + version go into the cache key and the
records), sends all items in one ``map_structured`` call, and turns replies into the judgement types
the metric modules score. A failed item (after the LLM layer's retries and JSON repair) becomes an
abstention / NaN / ``None`` that the metric counts — never a silent default verdict.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, Optional

from pydantic import BaseModel, Field, ValidationInfo, model_validator
from pydantic_core import PydanticCustomError

from babelrag.failed_items import MISALIGNED
from babelrag.llm.prompts import Prompt
from babelrag.sentences import split_sentences

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.llm.client import LLMRunner, Result

NAN = float("nan")


@lru_cache(maxsize=None)
def prompt(name: str) -> Prompt:
    """Load ``prompts/<name>.yaml`` (cached)."""
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
    """One list of passage ids per numbered sentence, in order. With a validation context
    ``{"sentences": n}`` a reply with another number of lists fails validation (reason ``misaligned``): the LLM
    layer re-asks once, then keeps it as an unreadable reply (counted as such), never as a verdict on sentences
    it does not line up with."""

    support: list[list[str]]

    @model_validator(mode="after")
    def _aligned(self, info: ValidationInfo) -> "Support":
        expected = (info.context or {}).get("sentences")
        if expected is not None and len(self.support) != expected:
            raise PydanticCustomError(MISALIGNED, "support has {got} lists for {expected} numbered sentences: give "
                                      "exactly one list per sentence, in order",
                                      {"got": len(self.support), "expected": expected})
        return self


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


def reply_values(results: Sequence["Result"]) -> list[Any]:
    """Each reply's parsed value, None where the call failed (the metric counts it)."""
    return [r.value if r.ok else None for r in results]


def scores_1_to_5(
    runner: "LLMRunner", endpoint: str, name: str, items: Sequence[Mapping[str, Any]], item_ids: Sequence[str],
) -> list[float]:
    """Run a 1-5 scoring prompt (``mirage_fluency``, ``mirage_overlap``, ``ragas_direct``); NaN on failure."""
    res = runner.map_structured(endpoint=endpoint, prompt=prompt(name), items=list(items), schema=Score15,
                                stage=f"eval.{name}", item_ids=list(item_ids))
    return [NAN if v is None else float(v.score) for v in reply_values(res)]


# ---------------------------------------------------------------- shared by several metrics


def sentence_support(
    runner: "LLMRunner", endpoint: str, records: Sequence[Mapping[str, Any]], stage: str = "eval.garage.support",
) -> list[Optional[list[list[str]]]]:
    """Per record, the passage ids supporting each sentence of ``response`` (``passages``: {id: text}).

    Unknown ids the judge invents are dropped. A reply with another number of lists than sentences fails
    ``Support``'s validation (repair re-ask, then an unreadable reply with reason ``misaligned``, which the
    ``JudgeRunner`` counts in ``judge_unusable``); a failed or unusable reply gives None (unjudged): the callers'
    support metrics are then undefined for the record, never 0. A response with no sentence gives ``[]``.
    """
    sentences = [split_sentences(r["response"]) for r in records]
    res = reply_values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("garage_support"), schema=Support, stage=stage,
        items=[{"passages": "\n".join(f"[{pid}] {text}" for pid, text in r["passages"].items()),
                "sentences": "\n".join(f"{k + 1}. {x}" for k, x in enumerate(sents))}
               for r, sents in zip(records, sentences)],
        item_ids=[str(r["query_id"]) for r in records], contexts=[{"sentences": len(s)} for s in sentences]))
    out: list[Optional[list[list[str]]]] = []
    for r, sents, s in zip(records, sentences, res):
        if s is None:
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


