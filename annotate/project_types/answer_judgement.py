"""Answer judgement: is a model's answer correct against the gold answer?"""
from __future__ import annotations

from typing import Iterable

from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.projects import HINTS, FieldSpec, ProjectRecord, ProjectSpec, QuestionSpec, Suggestion
from babelrag.annotate.inputs import ModelAnswer
from babelrag.annotate.registry import register
from babelrag.rows import parse

VERDICT = {"correct": "Correct", "incorrect": "Incorrect"}

SPEC = ProjectSpec(
    "answer_judgement",
    fields=(
        FieldSpec("question", "Question"),
        FieldSpec("gold_answer", "Gold answer"),
        FieldSpec("model_answer", "Model answer"),
        HINTS,
    ),
    questions=(QuestionSpec("verdict", "Is the model answer correct?", VERDICT),),
    metadata=("model", "language", "setting", "qa_id"),
)


def answer_judgement_records(answers: Iterable[ModelAnswer | dict]) -> list[ProjectRecord]:
    out = []
    for ans in parse(ModelAnswer, list(answers), "answer_judgement input"):
        suggestions = [Suggestion("verdict", ans.judge_verdict, "judge-panel")] if ans.judge_verdict else []
        out.append(
            ProjectRecord(
                id=ans.id,
                fields={"question": ans.question, "gold_answer": ans.gold_answer, "model_answer": ans.answer},
                metadata={"model": ans.model, "language": ans.language, "setting": ans.setting, "qa_id": ans.qa_id},
                suggestions=suggestions,
            )
        )
    return out


@register
class AnswerJudgement(ProjectType):
    name = "answer_judgement"
    spec = SPEC
    input_model = ModelAnswer

    def build(self, rows: list, ctx: BuildContext) -> list[ProjectRecord]:
        return answer_judgement_records(rows)
