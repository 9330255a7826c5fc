"""Translation post-editing: the English question and answer beside their machine translation; one
dataset per target language."""
from __future__ import annotations

import json
from typing import Iterable

from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.projects import FieldSpec, ProjectRecord, ProjectSpec, QuestionSpec, Suggestion
from babelrag.annotate.registry import register
from babelrag.records import QAItem
from babelrag.rows import parse

SPEC = ProjectSpec(
    "translation",
    fields=(FieldSpec("source_and_mt", "English source and machine translation", markdown=True),),
    questions=(
        QuestionSpec("question_translation", "Question in the target language (post-edit)"),
        QuestionSpec("answer_translation", "Answer in the target language (post-edit)"),
        QuestionSpec("comment", "Comment (problems with the English source)", None, required=False),
    ),
    metadata=("language", "q_type"),
)


def _cell(text: str) -> str:
    """Text as one markdown table cell: pipes escaped, line breaks kept."""
    return text.replace("|", "\\|").replace("\r", "").replace("\n", "<br>") if text else "*(none)*"


def side_by_side(language: str, question: str, answer: str, mt: dict) -> str:
    """English source and machine translation as one two-column markdown table (rows: question, answer)."""
    model = f", {mt['model']}" if mt.get("model") else ""
    right = f"Machine translation ({language}{model})" if mt.get("question") else \
        f"Machine translation ({language}): none, translate from scratch"
    return "\n".join([f"| English source | {right} |", "|---|---|",
                      f"| **Q:** {_cell(question)} | **Q:** {_cell(mt.get('question', ''))} |",
                      f"| **A:** {_cell(answer)} | **A:** {_cell(mt.get('answer', ''))} |"])


def translation_records(items: Iterable[QAItem | dict], language: str) -> list[ProjectRecord]:
    out = []
    for qa in parse(QAItem, list(items), "translation input"):
        mt = json.loads(qa.translations_json or "{}").get(language, {})
        suggestions = []
        if mt.get("question"):
            agent = mt.get("model", "machine-translation")
            suggestions = [Suggestion("question_translation", mt["question"], agent),
                           Suggestion("answer_translation", mt.get("answer") or "", agent)]
            suggestions = [s for s in suggestions if s.value]
        out.append(
            ProjectRecord(
                id=qa.id,
                fields={"source_and_mt": side_by_side(language, qa.question, qa.answer, mt)},
                metadata={"language": language, "q_type": qa.q_type},
                suggestions=suggestions,
            )
        )
    return out


@register
class Translation(ProjectType):
    name = "translation"
    spec = SPEC
    input_model = QAItem
    per_language = True

    def build(self, rows: list, ctx: BuildContext) -> list[ProjectRecord]:
        return translation_records(rows, ctx.language)
