"""Grounding (GaRAGe-style): a label per passage of an instance, plus question-level annotations
(``projects.grounding_records``)."""
from __future__ import annotations

from babelrag.annotate import projects
from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.registry import register
from babelrag.records import Instance


@register
class Grounding(ProjectType):
    name = "grounding"
    spec = projects.GROUNDING
    input_model = Instance

    def build(self, rows: list, ctx: BuildContext) -> list[projects.ProjectRecord]:
        return projects.grounding_records(rows)
