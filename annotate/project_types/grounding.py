"""Grounding (GaRAGe-style): a label per passage of an instance, plus question-level annotations."""
from __future__ import annotations

from typing import Iterable

from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.projects import HINTS, FieldSpec, ProjectRecord, ProjectSpec, QuestionSpec, Suggestion
from babelrag.annotate.registry import register
from babelrag.errors import InputError
from babelrag.records import Instance
from babelrag.rows import parse

GARAGE_LABELS = {
    "answer-the-question": "Answers the question",
    "related-information": "Related information",
    "outdated": "Outdated",
    "unknown": "Unknown",
    "irrelevant": "Irrelevant",
}
TIME_SENSITIVITY = {"static": "Static", "slow-changing": "Slow-changing", "fast-changing": "Fast-changing"}
COMPLEXITY = {
    "simple": "Simple", "with-condition": "Simple with condition", "set": "Set", "comparison": "Comparison",
    "aggregation": "Aggregation", "multi-hop": "Multi-hop",
}
POPULARITY = {"head": "Head", "torso": "Torso", "tail": "Tail"}
CATEGORIES = {
    "politics": "Politics", "business": "Business & finance", "sports": "Sports", "science": "Science & tech",
    "health": "Health", "culture": "Culture & entertainment", "world": "World events", "other": "Other",
}
DEFLECTION = {"enough-grounding": "Enough grounding", "not-enough-grounding": "Not enough grounding"}
MAX_PASSAGES = 8


SPEC = ProjectSpec(
    "grounding",
    fields=(
        FieldSpec("question", "Question"),
        FieldSpec("answer", "Reference answer"),
        HINTS,
        *(FieldSpec(f"passage_{i}", f"Passage {i}", required=False, markdown=True) for i in range(1, MAX_PASSAGES + 1)),
    ),
    questions=(
        *(QuestionSpec(f"relevance_{i}", f"Passage {i}", GARAGE_LABELS, required=False) for i in range(1, MAX_PASSAGES + 1)),
        QuestionSpec("time_sensitivity", "Time-sensitivity of the question", TIME_SENSITIVITY),
        QuestionSpec("complexity", "Complexity", COMPLEXITY),
        QuestionSpec("popularity", "Popularity of the topic", POPULARITY),
        QuestionSpec("category", "Category", CATEGORIES),
        QuestionSpec("deflection", "Do the passages let one answer?", DEFLECTION),
    ),
    metadata=("language", "setting", "q_type", "n_passages"),
)


_KIND_TO_LABEL = {"relevant": "answer-the-question", "related": "related-information",
                  "seemingly_relevant": "related-information", "irrelevant": "irrelevant"}
_QTYPE_TO_COMPLEXITY = {"aggregation": "aggregation", "comparison": "comparison", "multi-hop": "multi-hop", "set": "set"}


def grounding_records(instances: Iterable[Instance | dict]) -> list[ProjectRecord]:
    out = []
    for inst in parse(Instance, list(instances), "grounding input"):
        if len(inst.documents) > MAX_PASSAGES:
            raise InputError(
                f"grounding input: instance {inst.id} has {len(inst.documents)} documents; at most {MAX_PASSAGES} fit a record"
            )
        fields = {"question": inst.question, "answer": inst.answer}
        suggestions = [Suggestion("complexity", _QTYPE_TO_COMPLEXITY[inst.q_type], "babelrag.construct")]
        for i, doc in enumerate(inst.documents, 1):
            mt = " *(machine-translated)*" if doc.machine_translated else ""
            fields[f"passage_{i}"] = f"**{doc.title}** ({doc.language}, {doc.published}){mt}\n\n{doc.text}"
            suggestions.append(Suggestion(f"relevance_{i}", _KIND_TO_LABEL[doc.kind], "babelrag.construct"))
        has_support = any(d.role == "supporting" for d in inst.documents)
        suggestions.append(
            Suggestion("deflection", "enough-grounding" if has_support else "not-enough-grounding", "babelrag.construct")
        )
        out.append(
            ProjectRecord(
                id=inst.id,
                fields=fields,
                metadata={"language": inst.language, "setting": inst.setting, "q_type": inst.q_type,
                          "n_passages": str(len(inst.documents))},
                suggestions=suggestions,
            )
        )
    return out


@register
class Grounding(ProjectType):
    name = "grounding"
    spec = SPEC
    input_model = Instance

    def build(self, rows: list, ctx: BuildContext) -> list[ProjectRecord]:
        return grounding_records(rows)
