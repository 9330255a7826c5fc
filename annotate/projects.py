"""What every annotation project shares: its records, dataset spec, guidelines, suggestion modes and
the Argilla SDK objects made from them. The project types themselves (one module each, in
``project_types/``) are found through ``registry``.

Records are first built as plain ``ProjectRecord`` values (testable without a server) and only turned
into Argilla SDK objects in ``to_argilla_settings`` / ``to_argilla_records``. Guidelines live beside this
module (``guidelines/<project>.md``, with an id and a version in their first line).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional

from babelrag.errors import InputError

from . import registry
from .settings import AnnotateSettings

GUIDELINES_DIR = Path(__file__).with_name("guidelines")



@dataclass(frozen=True)
class Guideline:
    id: str
    version: str
    text: str


@lru_cache(maxsize=None)
def guideline(project: str) -> Guideline:
    pt = registry.get(project)
    path = pt.guidelines_file or GUIDELINES_DIR / f"{project}.md"
    text = Path(path).read_text(encoding="utf-8")
    m = re.match(r"<!--\s*guideline-id:\s*(\S+);\s*version:\s*(\S+)\s*-->\s*", text)
    if not m:
        raise ValueError(f"{path}: first line must be '<!-- guideline-id: ID; version: V -->'")
    return Guideline(m.group(1), m.group(2), text[m.end():])


def guidelines_text(project: str) -> str:
    """What goes into the dataset's guidelines field: the text, then its id and version."""
    g = guideline(project)
    return f"{g.text}\n\n_Guideline {g.id}, version {g.version}._"


@dataclass
class Suggestion:
    question: str
    value: Any
    agent: str = ""
    score: Optional[float] = None


@dataclass
class ProjectRecord:
    """One record to annotate; ``id`` is the build record's id (Argilla's external id: upserts are idempotent).
    ``withheld``: the pipeline's answers not sent as Argilla suggestions (suggestion mode ``show``/``off``),
    kept locally so agreement can still compare them with the humans."""

    id: str
    fields: dict[str, str]
    metadata: dict[str, Any] = field(default_factory=dict)
    suggestions: list[Suggestion] = field(default_factory=list)
    withheld: list[Suggestion] = field(default_factory=list)


@dataclass(frozen=True)
class FieldSpec:
    name: str
    title: str
    required: bool = True
    markdown: bool = False


# Argilla 2.8's UI fills a pending record's form with its suggestions (Record.completeQuestion answers each
# question with its suggestion), so a suggested label is pre-selected and one click submits it. In mode
# "show" a judgement's suggestion goes into this field instead: visible, nothing selected.
HINTS = FieldSpec("hints", "Hints: what the pipeline thinks (nothing is pre-selected; judge for yourself)",
                  required=False, markdown=True)


@dataclass(frozen=True)
class QuestionSpec:
    name: str
    title: str
    labels: Optional[dict[str, str]] = None  # None = free text
    required: bool = True
    description: str = ""

    @property
    def is_label(self) -> bool:
        return self.labels is not None


@dataclass(frozen=True)
class ProjectSpec:
    name: str
    fields: tuple[FieldSpec, ...]
    questions: tuple[QuestionSpec, ...]
    metadata: tuple[str, ...] = ()  # terms metadata properties

    @property
    def label_questions(self) -> list[str]:
        return [q.name for q in self.questions if q.is_label]



def spec(project: str) -> ProjectSpec:
    """The dataset spec of a registered project (InputError naming the known ones if unknown)."""
    return registry.get(project).spec


def build_records(project: str, rows: list, settings: AnnotateSettings, language: str = "",
                  articles: Optional[Mapping[str, Any]] = None, highlighter: Optional[Any] = None) -> list[ProjectRecord]:
    """The project type's records for ``rows``, with suggestions as ``annotate.projects.<p>.suggestions``
    says. ``language``: required by per-language projects (translation); ``articles`` (id -> Article):
    the source articles of projects that show them, highlighted by ``highlighter`` (default: the one
    ``settings.highlight`` names, without a vector cache)."""
    from .project_type import BuildContext

    pt = registry.get(project)
    if pt.per_language and not language:
        raise InputError(f"the {project} project needs a target language (--language de)")
    if pt.needs_articles and articles is not None and highlighter is None:
        from .sources import make_highlighter

        highlighter = make_highlighter(settings.highlight)
    records = pt.build(list(rows), BuildContext(settings, language, articles, highlighter))
    return apply_suggestion_mode(records, pt.spec, settings.project(project).suggestions)


def hints_markdown(ps: ProjectSpec, suggestions: list[Suggestion]) -> str:
    """One short line: each judgement's question, the pipeline's label and who said so (the field must
    not push the record's text off screen)."""
    questions = {q.name: q for q in ps.questions}
    parts = []
    for s in suggestions:
        q = questions[s.question]
        label = (q.labels or {}).get(s.value, s.value)
        parts.append(f"{q.title} — *{label}* ({s.agent or 'pipeline'})")
    return " · ".join(parts)


def apply_suggestion_mode(records: list[ProjectRecord], ps: ProjectSpec, mode: str) -> list[ProjectRecord]:
    """Suggestions for judgement (label) questions as ``mode`` says: ``preselect`` keeps them as Argilla
    suggestions; ``show`` moves them to the ``hints`` field; ``off`` drops them from what is sent. In the
    last two they are kept in ``withheld``. Suggestions for text questions (drafts to edit) stay."""
    if mode == "preselect":
        return records
    labels = set(ps.label_questions)
    for r in records:
        judgements = [s for s in r.suggestions if s.question in labels]
        r.suggestions = [s for s in r.suggestions if s.question not in labels]
        r.withheld = judgements
        if mode == "show" and judgements and any(f.name == HINTS.name for f in ps.fields):
            r.fields[HINTS.name] = hints_markdown(ps, judgements)
    return records


# ----------------------------------------------------------------------------- Argilla SDK objects


def to_argilla_settings(project: str, settings: AnnotateSettings, client=None):
    """``rg.Settings`` for a project: fields, questions, metadata, guidelines and task distribution.

    ``client`` is the SDK client the dataset will use (the SDK otherwise builds a default one from env).
    """
    import argilla as rg

    ps = spec(project)
    fields = [rg.TextField(name=f.name, title=f.title, required=f.required, use_markdown=f.markdown, client=client)
              for f in ps.fields]
    questions = []
    for q in ps.questions:
        if q.is_label:
            questions.append(rg.LabelQuestion(name=q.name, title=q.title, labels=q.labels, required=q.required,
                                              description=q.description or None, client=client))
        else:
            questions.append(rg.TextQuestion(name=q.name, title=q.title, required=q.required,
                                             description=q.description or None, client=client))
    metadata = [rg.TermsMetadataProperty(name=m, client=client) for m in ps.metadata]
    return rg.Settings(
        fields=fields,
        questions=questions,
        metadata=metadata,
        guidelines=guidelines_text(project),
        allow_extra_metadata=True,
        distribution=rg.TaskDistribution(min_submitted=settings.project(project).min_submitted or 1),
    )


def to_argilla_records(records: list[ProjectRecord]):
    import argilla as rg

    return [
        rg.Record(
            id=r.id,
            fields={k: v for k, v in r.fields.items() if v not in (None, "")},
            metadata={k: v for k, v in r.metadata.items() if v not in (None, "")},
            suggestions=[rg.Suggestion(question_name=s.question, value=s.value, agent=s.agent or None, score=s.score)
                         for s in r.suggestions],
        )
        for r in records
    ]
