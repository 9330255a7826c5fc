"""Forced choice between two responses for one criterion (contrastive pairs); the better response's
position is a seeded coin per pair (``projects.forced_choice_records``)."""
from __future__ import annotations

from babelrag.annotate import projects
from babelrag.annotate.decisions import DecisionRules
from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.registry import register
from babelrag.annotate.inputs import ContrastivePair


@register
class ForcedChoice(ProjectType):
    name = "forced_choice"
    spec = projects.FORCED_CHOICE
    input_model = ContrastivePair
    rules = DecisionRules(decides=("choice",))
    dataset_annotation = False

    def build(self, rows: list, ctx: BuildContext) -> list[projects.ProjectRecord]:
        return projects.forced_choice_records(rows, ctx.settings.seed)
