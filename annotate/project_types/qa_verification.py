"""Q&A verification (XRAG-style): is a cross-document question natural, answerable from its two source
articles, and is its answer right? Annotators see both articles with the facts the question used
highlighted (``projects.qa_verification_records``)."""
from __future__ import annotations

from babelrag.annotate import projects
from babelrag.annotate.decisions import DecisionRules, TextRule
from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.registry import register
from babelrag.records import QAItem


@register
class QaVerification(ProjectType):
    name = "qa_verification"
    spec = projects.QA_VERIFICATION
    input_model = QAItem
    needs_articles = True
    # a decided "not natural" or "not answerable" rejects whatever the other labels say; otherwise each
    # label needs a majority, and a wrong answer a majority correction
    rules = DecisionRules(decides=("natural", "answerable", "answer_correct"),
                          settles=(("natural", "no"), ("answerable", "no")),
                          texts=(TextRule("corrected_answer", ("answer_correct", "no"), draft_is_no_answer=True),))

    def build(self, rows: list, ctx: BuildContext) -> list[projects.ProjectRecord]:
        return projects.qa_verification_records(rows, ctx.articles, ctx.highlighter)
