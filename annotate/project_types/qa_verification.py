"""Q&A verification (XRAG-style): is a cross-document question natural, answerable from its two source
articles, and is its answer right? Shows both articles with the facts the question used highlighted."""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Optional

from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.projects import HINTS, FieldSpec, ProjectRecord, ProjectSpec, QuestionSpec, Suggestion
from babelrag.annotate.registry import register
from babelrag.annotate.sources import LexicalHighlighter, source_fields
from babelrag.records import Article, QAItem
from babelrag.rows import parse

YES_NO = {"yes": "Yes", "no": "No"}

SPEC = ProjectSpec(
    "qa_verification",
    fields=(
        FieldSpec("question", "Question"),
        FieldSpec("answer", "Answer"),
        HINTS,
        FieldSpec("article_a", "Source article 1", required=False, markdown=True),
        FieldSpec("article_b", "Source article 2", required=False, markdown=True),
        FieldSpec("evidence", "Summaries and the facts the question uses", markdown=True),
    ),
    questions=(
        QuestionSpec("natural", "Is the question natural?", YES_NO),
        QuestionSpec("answerable", "Is it answerable from the two articles together?", YES_NO),
        QuestionSpec("answer_correct", "Is the answer correct?", YES_NO),
        QuestionSpec("corrected_answer", "Corrected answer (edit the pre-filled answer if wrong)", None, required=False),
    ),
    metadata=("q_type", "pair_id"),
)


def _agent(item: Any) -> str:
    prov = getattr(item, "provenance", None)
    return (prov.model if prov and prov.model else "babelrag") + (f"/{prov.prompt_id}" if prov and prov.prompt_id else "")


def _article_map(articles: Optional[Mapping[str, Article | dict]]) -> Optional[dict[str, Article]]:
    if articles is None:
        return None
    return {k: a if isinstance(a, Article) else Article.model_validate(a) for k, a in articles.items()}


def qa_verification_records(items: Iterable[QAItem | dict],
                            articles: Optional[Mapping[str, Article | dict]] = None,
                            highlighter: Optional[LexicalHighlighter] = None) -> list[ProjectRecord]:
    """``articles`` (id -> Article) adds both source articles with the facts used highlighted (see sources.py)."""
    arts = _article_map(articles)
    qas = parse(QAItem, list(items), "qa_verification input")
    if arts is not None and highlighter is not None:
        highlighter.prepare(arts[a] for a in dict.fromkeys(a for qa in qas for a in qa.article_ids) if a in arts)
    out = []
    for qa in qas:
        evidence = [f"**Summary {i}.** {s}" for i, s in enumerate(qa.summaries, 1)]
        evidence += [f"- *{s.article_id}*: {s.question} → {s.answer}" for s in qa.selected]
        filters = json.loads(qa.filters_json or "{}")
        suggestions = [
            Suggestion("answer_correct", "yes", _agent(qa)),
            Suggestion("corrected_answer", qa.answer, _agent(qa)),
        ]
        if "well_formed" in filters:
            passed = bool(filters["well_formed"].get("passed", False))
            suggestions.append(Suggestion("natural", "yes" if passed else "no", "babelrag.filters.well_formed"))
        out.append(
            ProjectRecord(
                id=qa.id,
                fields={"question": qa.question, "answer": qa.answer, "evidence": "\n\n".join(evidence) or "(none)",
                        **source_fields(qa.article_ids, qa.selected, arts, highlighter)},
                metadata={"q_type": qa.q_type, "pair_id": qa.pair_id},
                suggestions=suggestions,
            )
        )
    return out


def missing_articles(items: Iterable[QAItem | dict], articles: Mapping[str, Any]) -> list[str]:
    """Source article ids the items name that ``articles`` lacks (sorted, each once)."""
    wanted = {a for qa in parse(QAItem, list(items), "qa_verification input") for a in qa.article_ids}
    return sorted(wanted - set(articles))


@register
class QaVerification(ProjectType):
    name = "qa_verification"
    spec = SPEC
    input_model = QAItem
    needs_articles = True

    def build(self, rows: list, ctx: BuildContext) -> list[ProjectRecord]:
        return qa_verification_records(rows, ctx.articles, ctx.highlighter)
