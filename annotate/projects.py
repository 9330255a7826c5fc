"""The five built-in annotation projects (dataset specs and record builders) and what every project
shares: records, guidelines, suggestion modes, the Argilla SDK objects. Project types are found through
``registry``; the built-in ones are declared in ``project_types/`` (one module each), a new one is one
module of its own (docs/annotate.md, "Adding a project type").

Records are first built as plain ``ProjectRecord`` values (testable without a server) and only turned
into Argilla SDK objects in ``to_argilla_settings`` / ``to_argilla_records``. Guidelines live beside this
module (``guidelines/<project>.md``, with an id and a version in their first line).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from babelrag.errors import InputError
from babelrag.records import Article, Instance, QAItem, translation_targets

from . import registry
from .inputs import ContrastivePair, ModelAnswer, parse
from .project_type import BuildContext
from .settings import AnnotateSettings
from .sources import LexicalHighlighter, make_highlighter, source_fields

GUIDELINES_DIR = Path(__file__).with_name("guidelines")
YES_NO = {"yes": "Yes", "no": "No"}
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
VERDICT = {"correct": "Correct", "incorrect": "Incorrect"}
CHOICE = {"A": "Response A", "B": "Response B"}
MAX_PASSAGES = 8


@dataclass(frozen=True)
class Guideline:
    id: str
    version: str
    text: str


@lru_cache(maxsize=None)
def guideline(project: str) -> Guideline:
    path = registry.get(project).guidelines_file or GUIDELINES_DIR / f"{project}.md"
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


# ----------------------------------------------------------------------------- project specs

QA_VERIFICATION = ProjectSpec(
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

TRANSLATION = ProjectSpec(
    "translation",
    fields=(FieldSpec("source_and_mt", "English source and machine translation", markdown=True),),
    questions=(
        QuestionSpec("question_translation", "Question in the target language (post-edit)"),
        QuestionSpec("answer_translation", "Answer in the target language (post-edit)"),
        QuestionSpec("comment", "Comment (problems with the English source)", None, required=False),
    ),
    metadata=("language", "q_type"),
)

GROUNDING = ProjectSpec(
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

FORCED_CHOICE = ProjectSpec(
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

ANSWER_JUDGEMENT = ProjectSpec(
    "answer_judgement",
    fields=(
        FieldSpec("question", "Question"),
        FieldSpec("gold_answer", "Gold answer"),
        FieldSpec("model_answer", "Model answer"),
        HINTS,
    ),
    questions=(QuestionSpec("verdict", "Is the model answer correct?", VERDICT),),
    metadata=("model", "language", "setting", "qa_id"),
)

def spec(project: str) -> ProjectSpec:
    """The dataset spec of a registered project (ConfigError naming the known ones if unknown)."""
    return registry.get(project).spec


# ----------------------------------------------------------------------------- record builders


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
        well_formed = qa.verdict("well_formed")
        suggestions = [
            Suggestion("answer_correct", "yes", _agent(qa)),
            Suggestion("corrected_answer", qa.answer, _agent(qa)),
        ]
        if well_formed is not None and well_formed.status != "not_run":
            suggestions.append(Suggestion("natural", "yes" if well_formed.passed else "no",
                                          "babelrag.filters.well_formed"))
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


NOT_REVIEWED = "not reviewed yet: push the qa_verification merge output (`annotate pull qa_verification --merge-into`)"
REJECTED = "rejected (by the filters or the review): never released"
LANGUAGE_UNUSED = "no instance of the question uses this language (an X-English question is only asked in X)"
WRITTEN_IN_X = "a monolingual question, written in its own language: nothing to translate"


def translation_skip(qa: QAItem, language: str) -> str:
    """Why a question is not sent to human translation into ``language`` ("" when it is): translators
    post-edit the reviewed English, and only for languages the question's instances use."""
    if not qa.accepted or (qa.human_review is not None and not qa.human_review.passed):
        return REJECTED
    if qa.human_review is None:
        return NOT_REVIEWED
    if qa.language:
        return WRITTEN_IN_X
    if qa.x_language is not None and language not in translation_targets(qa.x_language, "", [language]):
        return LANGUAGE_UNUSED
    return ""


def translation_records(items: Iterable[QAItem | dict], language: str) -> list[ProjectRecord]:
    """One record per question (the English source, its machine translation and, in the metadata,
    ``en_source``: the fingerprint of the English shown, which the merge stores on the post-edit)."""
    out = []
    for qa in parse(QAItem, list(items), "translation input"):
        mt = qa.translation(language)
        suggestions = []
        if mt is not None and mt.question and not mt.error:
            agent = mt.model or "machine-translation"
            suggestions = [Suggestion("question_translation", mt.question, agent),
                           Suggestion("answer_translation", mt.answer, agent)]
            suggestions = [s for s in suggestions if s.value]
        out.append(
            ProjectRecord(
                id=qa.id,
                fields={"source_and_mt": side_by_side(language, qa.question, qa.answer,
                                                             mt.model_dump() if mt is not None else {})},
                metadata={"language": language, "q_type": qa.q_type, "en_source": qa.source_fingerprint},
                suggestions=suggestions,
            )
        )
    return out


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


def forced_choice_positions(pair_id: str, seed: int) -> str:
    """Where the better response goes ("A" or "B"): a seeded coin per pair, stable across pushes."""
    return "A" if random.Random(f"{seed}:{pair_id}").random() < 0.5 else "B"


def forced_choice_records(pairs: Iterable[ContrastivePair | dict], seed: int) -> list[ProjectRecord]:
    """Records from ``construct contrastive``'s pairs: the better option goes to a seeded position."""
    out = []
    for pair in parse(ContrastivePair, list(pairs), "forced_choice input"):
        better_pos = forced_choice_positions(pair.id, seed)
        better, worse = (pair.option_a, pair.option_b) if pair.better == "a" else (pair.option_b, pair.option_a)
        a, b = (better, worse) if better_pos == "A" else (worse, better)
        suggestions = []
        if pair.judge_choice:
            pick = better_pos if pair.judge_choice == pair.better else ("B" if better_pos == "A" else "A")
            suggestions.append(Suggestion("choice", pick, "llm-judge"))
        out.append(
            ProjectRecord(
                id=pair.id,
                fields={"task": pair.kind.replace("_", " "), "question": pair.question,
                        "context": pair.context, "response_a": a, "response_b": b},
                metadata={"criterion": pair.kind, "better_position": better_pos, "language": pair.language,
                          "seed": seed},
                suggestions=suggestions,
            )
        )
    return out


def answer_judgement_records(answers: Iterable[ModelAnswer | dict]) -> list[ProjectRecord]:
    """Records from ``evaluate run``'s answers.jsonl."""
    out = []
    for ans in parse(ModelAnswer, list(answers), "answer_judgement input"):
        if not ans.ok:  # a failed model call has no answer to judge (counted by the project type's `skipped`)
            continue
        suggestions = [Suggestion("verdict", ans.judge_verdict, "judge-panel")] if ans.judge_verdict else []
        out.append(
            ProjectRecord(
                id=ans.id,
                fields={"question": ans.question, "gold_answer": ans.gold_answer, "model_answer": ans.answer},
                metadata={"model": ans.model, "language": ans.language, "setting": ans.setting, "qa_id": ans.qa_id},
                suggestions=suggestions,
            )
        )
    return out


def build_records(project: str, rows: list, settings: AnnotateSettings, language: str = "",
                  articles: Optional[Mapping[str, Any]] = None, highlighter: Optional[Any] = None) -> list[ProjectRecord]:
    """The project type's records for ``rows``, with suggestions as ``annotate.projects.<p>.suggestions``
    says. ``language``: required by per-language projects (translation); ``articles`` (id -> Article):
    the source articles of projects that show them, highlighted by ``highlighter`` (default: the one
    ``settings.highlight`` names, without a vector cache)."""
    pt = registry.get(project)
    if pt.per_language and not language:
        raise InputError(f"the {project} project needs a target language (--language de)")
    if pt.needs_articles and articles is not None and highlighter is None:
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


def shown_fields(record: ProjectRecord) -> dict[str, str]:
    """The fields as the server stores them (empty ones are not sent)."""
    return {k: v for k, v in record.fields.items() if v not in (None, "")}


def shown_metadata(record: ProjectRecord) -> dict[str, Any]:
    """The metadata as the server stores it (empty values are not sent)."""
    return {k: v for k, v in record.metadata.items() if v not in (None, "")}


def to_argilla_records(records: list[ProjectRecord]):
    import argilla as rg

    return [
        rg.Record(
            id=r.id,
            fields=shown_fields(r),
            metadata=shown_metadata(r),
            suggestions=[rg.Suggestion(question_name=s.question, value=s.value, agent=s.agent or None, score=s.score)
                         for s in r.suggestions],
        )
        for r in records
    ]
