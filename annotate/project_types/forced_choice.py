"""Forced choice between two responses for one criterion (Ragas-for-Romanian contrastive pairs); the
better response's position is a seeded coin per pair."""
from __future__ import annotations

import random
from typing import Iterable

from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.projects import HINTS, FieldSpec, ProjectRecord, ProjectSpec, QuestionSpec, Suggestion
from babelrag.annotate.inputs import ContrastivePair
from babelrag.annotate.registry import register
from babelrag.rows import parse

CHOICE = {"A": "Response A", "B": "Response B"}

SPEC = ProjectSpec(
    "forced_choice",
    fields=(
        FieldSpec("task", "Criterion to judge"),
        FieldSpec("question", "Question"),
        FieldSpec("context", "Context", required=False, markdown=True),
        FieldSpec("response_a", "Response A"),
        FieldSpec("response_b", "Response B"),
        HINTS,
    ),
    questions=(QuestionSpec("choice", "Which response is better for the criterion?", CHOICE),),
    metadata=("criterion", "better_position", "language"),
)


def forced_choice_positions(pair_id: str, seed: int) -> str:
    """Where the better response goes ("A" or "B"): a seeded coin per pair, stable across pushes."""
    return "A" if random.Random(f"{seed}:{pair_id}").random() < 0.5 else "B"


def forced_choice_records(pairs: Iterable[ContrastivePair | dict], seed: int) -> list[ProjectRecord]:
    out = []
    for pair in parse(ContrastivePair, list(pairs), "forced_choice input"):
        better_pos = forced_choice_positions(pair.id, seed)
        a, b = (pair.better, pair.worse) if better_pos == "A" else (pair.worse, pair.better)
        suggestions = []
        if pair.judge_choice:
            pick = better_pos if pair.judge_choice == "better" else ("B" if better_pos == "A" else "A")
            suggestions.append(Suggestion("choice", pick, "llm-judge"))
        out.append(
            ProjectRecord(
                id=pair.id,
                fields={"task": pair.criterion.replace("_", " "), "question": pair.question,
                        "context": pair.context, "response_a": a, "response_b": b},
                metadata={"criterion": pair.criterion, "better_position": better_pos, "language": pair.language,
                          "seed": seed},
                suggestions=suggestions,
            )
        )
    return out


@register
class ForcedChoice(ProjectType):
    name = "forced_choice"
    spec = SPEC
    input_model = ContrastivePair

    def build(self, rows: list, ctx: BuildContext) -> list[ProjectRecord]:
        return forced_choice_records(rows, ctx.settings.seed)
