"""Translation post-editing: the English question and answer beside their machine translation, one
dataset per target language (``projects.translation_records``). Only reviewed, accepted questions are
sent (the input is the qa_verification merge output), and only into languages their instances use."""
from __future__ import annotations

from collections import Counter

from babelrag.annotate import projects
from babelrag.annotate.decisions import DecisionRules, TextRule
from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.registry import register
from babelrag.records import QAItem
from babelrag.rows import parse


@register
class Translation(ProjectType):
    name = "translation"
    spec = projects.TRANSLATION
    input_model = QAItem
    per_language = True
    rules = DecisionRules(texts=(TextRule("question_translation"), TextRule("answer_translation")))

    def build(self, rows: list, ctx: BuildContext) -> list[projects.ProjectRecord]:
        return projects.translation_records(self._kept(rows, ctx.language), ctx.language)

    def skipped(self, rows: list, language: str = "") -> dict[str, int]:
        return dict(Counter(reason for qa in self._parsed(rows) if (reason := projects.translation_skip(qa, language))))

    def _parsed(self, rows: list) -> list[QAItem]:
        return parse(QAItem, list(rows), "translation input")

    def _kept(self, rows: list, language: str) -> list[QAItem]:
        return [qa for qa in self._parsed(rows) if not projects.translation_skip(qa, language)]
