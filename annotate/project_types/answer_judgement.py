"""Answer judgement: is a model's answer correct against the gold answer? (``projects.answer_judgement_records``)"""
from __future__ import annotations

from babelrag.annotate import projects
from babelrag.annotate.decisions import DecisionRules
from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.registry import register
from babelrag.annotate.inputs import ModelAnswer


@register
class AnswerJudgement(ProjectType):
    name = "answer_judgement"
    spec = projects.ANSWER_JUDGEMENT
    input_model = ModelAnswer
    rules = DecisionRules(decides=("verdict",))
    dataset_annotation = False

    def build(self, rows: list, ctx: BuildContext) -> list[projects.ProjectRecord]:
        return projects.answer_judgement_records(rows)

    def skipped(self, rows: list, language: str = "") -> dict[str, int]:
        failed = sum(1 for r in rows if not _ok(r))
        return {"model call failed (ok: false), nothing to judge": failed} if failed else {}


def _ok(row: object) -> bool:
    return bool(row.get("ok", True) if isinstance(row, dict) else getattr(row, "ok", True))
