"""A tiny metric written the way docs/architecture.md says to add one: a registered Metric subclass in one
module, with its own report view (``views`` writes it, ``view_html`` / ``view_markdown`` render it) and its own
column in the per-answer view (``answer_column``, ``answer_html``)."""
from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
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
    answer_column = "answer length"
    answer_verdict_means = "short enough"

    def answer_verdict(self, item: Mapping[str, Any] | None) -> bool | None:
        return item["words"] <= 3 if item else None

    def answer_html(self, item: Mapping[str, Any] | None) -> str:
        return f'<span class="tiny-words">{int(item["words"])} words</span>' if item else ""

    def score(self, run: MetricRun, model: str, answers: Sequence[Any]) -> ScoreResult:
        rows = [{"query_id": a.id, "words": float(len(a.answer.split()))} for a in answers]
        return make_result(self.name, rows, ("words",), rounds=run.settings.rounds, seed=run.settings.seed)

    def views(self, run: MetricRun, model: str, result: ScoreResult, evaluation: Any) -> None:
        """Its view: each model's longest answer."""
        longest = max(result.items, key=lambda r: r["words"])
        evaluation.view(self.name).setdefault("longest", {})[model] = {"answer_id": longest["query_id"],
                                                                        "words": longest["words"]}

    def view_html(self, view: Mapping[str, Any], page: Any) -> str:
        rows = "".join(f"<li>{html.escape(m)}: {int(v['words'])} words ({html.escape(v['answer_id'])})</li>"
                       for m, v in sorted(view["longest"].items()))
        return f'<h2 id="answer-words">Longest answers</h2>\n<ul>{rows}</ul>\n'

    def view_markdown(self, view: Mapping[str, Any], page: Any) -> str:
        return "\n## Longest answers\n\n" + "".join(f"- {m}: {int(v['words'])} words\n"
                                                     for m, v in sorted(view["longest"].items()))
