"""A toy metric with its own report view, written as one module the way evaluators/metric.py says: it scores,
writes its view (``views``), and renders it (``view_results``, ``view_html``, ``view_markdown``, ``view_plots``).
No shared file names it."""
from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from babelrag.evaluators.metric import Column, Metric, MetricRun
from babelrag.evaluators.registry import register, register_lazy
from babelrag.evaluators.results import ScoreResult, make_result

register_lazy("answer_chars", f"{__name__}:AnswerChars")


@register
class AnswerChars(Metric):
    name = "answer_chars"
    description = "characters in the answer, with the longest answer of each model shown in the report"
    columns = (Column("answer_chars", "chars"),)
    scores_unanswered = True

    def score(self, run: MetricRun, model: str, answers: Sequence[Any]) -> ScoreResult:
        rows = [{"query_id": a.id, "chars": float(len(a.answer))} for a in answers]
        return make_result(self.name, rows, ("chars",), rounds=run.settings.rounds, seed=run.settings.seed)

    def views(self, run: MetricRun, model: str, result: ScoreResult, evaluation: Any) -> None:
        longest = max(result.items, key=lambda r: r["chars"])
        evaluation.view(self.name).setdefault("longest", {})[model] = {"answer_id": longest["query_id"],
                                                                        "chars": longest["chars"]}

    def view_html(self, view: Mapping[str, Any], page: Any) -> str:
        rows = "".join(f"<li>{html.escape(m)}: {int(v['chars'])} characters ({html.escape(v['answer_id'])})</li>"
                       for m, v in sorted(view["longest"].items()))
        return f'<h2 id="answer-chars">Longest answers</h2>\n<ul>{rows}</ul>\n'

    def view_markdown(self, view: Mapping[str, Any], page: Any) -> str:
        return "\n## Longest answers\n\n" + "".join(f"- {m}: {int(v['chars'])} characters\n"
                                                     for m, v in sorted(view["longest"].items()))
