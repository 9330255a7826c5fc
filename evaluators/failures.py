"""Answer-generation failures: a run that produced no answer must fail loudly, a partly failing one says so.

When *every* answer of a model failed (wrong URL, 404, refused key) there is nothing to score, and a report
saying "no results" with exit code 0 hides that; the run stops with an error naming the endpoint and the
first error instead. When only some failed, the failed instances are unanswered: they count as wrong in
the model's scores (``coverage``), every failing model is warned about (console and results.json
``warnings``), the report is written, and the run ends with ``IncompleteRunError`` (exit 3): a plain re-run
retries exactly the failed calls, the answers that succeeded come from the LLM cache. Judge calls that got
no answer (``judge_calls``) end the run the same way.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from babelrag.errors import BabelragError, IncompleteRunError
from babelrag.evaluators.judge_calls import describe
from babelrag.evaluators.metric import FailedJudgeCall


class GenerationFailed(BabelragError):
    """No answer could be produced by one or more model endpoints."""


@dataclass(frozen=True)
class ModelFailures:
    model: str
    endpoint: str  # base URL and served model name
    answers: int
    failed: int
    first_error: str

    @property
    def share(self) -> float:
        return self.failed / self.answers if self.answers else 0.0

    def line(self) -> str:
        return (f"model {self.model!r} ({self.endpoint}): {self.failed} of {self.answers} answers failed; "
                f"first error: {self.first_error}")


def model_failures(answers: Sequence[Any], endpoints: Mapping[str, str]) -> list[ModelFailures]:
    """Failure counts per model (every model that has answers), in model order."""
    total: Counter = Counter()
    failed: Counter = Counter()
    first: dict[str, str] = {}
    for a in answers:
        total[a.model] += 1
        if not a.ok:
            failed[a.model] += 1
            first.setdefault(a.model, a.error or "no error message")
    return [ModelFailures(m, endpoints.get(m, "?"), total[m], failed[m], first.get(m, "")) for m in sorted(total)]


def check_failures(answers: Sequence[Any], endpoints: Mapping[str, str]) -> list[str]:
    """Raise GenerationFailed when a model produced no answer at all; else one warning line per model
    with failed answers."""
    per_model = model_failures(answers, endpoints)
    dead = [f for f in per_model if f.answers and f.failed == f.answers]
    if dead:
        raise GenerationFailed("no answer could be produced: " + "; ".join(f.line() for f in dead)
                               + ". Check the endpoint's base_url, model name and key (answers.jsonl lists "
                                 "every error)")
    return [f.line() + f" ({f.share:.0%}; they count as unanswered, i.e. wrong, in its scores)" for f in per_model
            if f.failed]


def incomplete(answers: Sequence[Any], endpoints: Mapping[str, str], report: str,
               judge_calls: Sequence[FailedJudgeCall] = ()) -> IncompleteRunError | None:
    """The error that ends a run whose report is written but some of whose answer calls failed or some of
    whose judge calls got no answer (``judge_calls``); None if every call was answered."""
    failing = [f for f in model_failures(answers, endpoints) if f.failed]
    if not failing and not judge_calls:
        return None
    parts = []
    if failing:
        failed = sum(f.failed for f in failing)
        parts.append(f"{failed} answer call(s) failed (" + "; ".join(f"{f.model}: {f.failed} of {f.answers}"
                                                                   for f in failing)
                     + f"); they are scored as unanswered (wrong) in the report {report}")
    if judge_calls:
        parts.append(describe(judge_calls) + f"; the items they judge have no verdict from them in the report {report}")
    return IncompleteRunError(
        "incomplete: " + "; ".join(parts) + ". A plain re-run retries exactly the failed calls (answers and "
        "verdicts that succeeded come from the LLM cache)")
