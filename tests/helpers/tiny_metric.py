"""A tiny metric written the way docs/architecture.md says to add one: a registered Metric subclass."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from babelrag.evaluators.metric import Column, Metric, MetricRun
from babelrag.evaluators.registry import register, register_lazy
from babelrag.evaluators.results import ScoreResult, make_result

register_lazy("answer_words", f"{__name__}:AnswerWords")


@register
class AnswerWords(Metric):
    name = "answer_words"
    description = "number of words in the answer"
    columns = (Column("answer_words", "words"),)

    def score(self, run: MetricRun, model: str, answers: Sequence[Any]) -> ScoreResult:
        rows = [{"query_id": a.id, "words": float(len(a.answer.split()))} for a in answers]
        return make_result(self.name, rows, ("words",), rounds=run.settings.rounds, seed=run.settings.seed)
