"""Translation post-editing: the English question and answer beside their machine translation, one
dataset per target language (``projects.translation_records``)."""
from __future__ import annotations

from babelrag.annotate import projects
from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.registry import register
from babelrag.records import QAItem


@register
class Translation(ProjectType):
    name = "translation"
    spec = projects.TRANSLATION
    input_model = QAItem
    per_language = True

    def build(self, rows: list, ctx: BuildContext) -> list[projects.ProjectRecord]:
        return projects.translation_records(rows, ctx.language)
