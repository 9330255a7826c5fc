"""The record contract: every typed record that flows between stages or crosses a package boundary.

Every stage reads and writes lists of these pydantic models; ``babelrag.store`` turns them into
Arrow/parquet through ``datasets`` with features derived from the model (see ``babelrag.arrow_features``).
A type that one package writes and another reads (construct -> annotate, evaluate -> annotate,
annotate -> construct, release -> evaluate) is defined here once; other modules import it (older names
such as ``annotate.inputs.ModelAnswer`` are imports of the one definition). Nested data is typed
(translations, filter verdicts, human review are lists of small models, stored as Arrow structs).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Optional

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, SerializationInfo,
                      StringConstraints, model_validator)

QuestionType = Literal["aggregation", "comparison", "multi-hop", "set"]
InstanceType = Annotated[str, StringConstraints(min_length=1)]  # a QuestionType, or an external benchmark's category
QUESTION_TYPES: tuple[str, ...] = ("aggregation", "comparison", "multi-hop", "set")

DocumentRole = Literal["supporting", "distractor"]
# RAGE's distractor kinds; supporting documents are "relevant".
DocumentKind = Literal["relevant", "related", "irrelevant", "seemingly_relevant"]


class ArrowDate:
    """Marks an ``IsoDate`` field: stored as an Arrow date32 column (``babelrag.arrow_features``)."""


def _iso_text(value: Any) -> Any:
    if isinstance(value, dt.date):
        return value.isoformat()
    return "" if value is None else value


def _stored_date(value: str, info: SerializationInfo) -> Any:
    if info.mode_is_json():
        return value
    return dt.date.fromisoformat(value) if value else None  # Arrow date32 (None: no date known)


#: A date kept as ISO text "YYYY-MM-DD" in Python and JSON ("" = unknown; external formats may lack one, and
#: release validation reports text that is not a date), stored as an Arrow date32 in parquet, read back from
#: a date. Released documents' ``published`` and instances' ``dates`` are typed so.
IsoDate = Annotated[str, BeforeValidator(_iso_text), PlainSerializer(_stored_date, return_type=Any), ArrowDate()]


class Record(BaseModel):
    """Base for stored records: strict (unknown fields are bugs) and keyed by ``id``."""

    model_config = ConfigDict(extra="forbid")
    id: str


class Provenance(BaseModel):
    """Where a generated record came from: enough to reproduce or audit it."""

    model_config = ConfigDict(extra="forbid")
    model: str = ""
    endpoint: str = ""
    prompt_id: str = ""
    prompt_version: str = ""
    config_hash: str = ""


#: Where an article's date comes from (``corpus.undated``, docs/construct.md "Undated articles"):
#: ``published`` the page's or record's own publication date (htmldate's original date, news-please's
#: ``date_publish``); inferred by ``corpus.undated: infer`` when it has none: ``modified`` (a modification
#: date in the page, news-please's ``date_modify``), ``url`` (a date in the URL path), ``fetched`` (the
#: WARC record's WARC-Date, news-please's ``date_download``); ``none``: kept without a date (``keep``).
DateSource = Literal["published", "modified", "url", "fetched", "none"]
DATE_SOURCES: tuple[str, ...] = ("published", "modified", "url", "fetched", "none")

#: ``Article.day`` of an article without a date for windows: far above every real day, so any date bound
#: (``published <= latest`` of distractors, a pair window's range filter) leaves it out unless asked for.
UNDATED_DAY = 10_000_000


class Article(Record):
    """One news article after ingestion (language identified, deduplicated)."""

    title: str
    text: str
    language: str  # ISO 639-1 code, e.g. "en", "de", "zh"
    # stored as Arrow date32; an ISO string "YYYY-MM-DD" is read as a date; None: no date (date_source none)
    published: Optional[dt.date]
    url: str = ""
    source: str = ""  # file the article came from (jsonl/html/warc path)
    n_tokens: int = 0
    title_entities: list[str] = Field(default_factory=list)
    date_source: DateSource = "published"
    # the date places the article in date windows (pair windows, corpus.date_from/date_to): a real publication
    # date always, an inferred one only with corpus.inferred_dates_in_windows; freshness never (``fresh_day``)
    windowed: bool = True

    @property
    def day(self) -> int:
        """Days since 1970-01-01 (the vector store's integer date, date windows); ``UNDATED_DAY`` when the
        article has no date for windows (mined without a window)."""
        if self.published is None or not (self.windowed or self.date_source == "published"):
            return UNDATED_DAY
        return (self.published - EPOCH).days

    @property
    def fresh_day(self) -> Optional[int]:
        """The day freshness rules trust (distractors published >= N days before, release dates): only a
        real publication date, never an inferred one."""
        return (self.published - EPOCH).days if self.published is not None and self.date_source == "published" else None

    @property
    def real_published(self) -> Optional[dt.date]:
        """The publication date as released and judged: None unless it is the article's own."""
        return self.published if self.date_source == "published" else None

    @property
    def date_label(self) -> str:
        """The date as prompts show it: ISO, marked when inferred, "unknown" without one."""
        if self.published is None:
            return "unknown"
        iso = self.published.isoformat()
        return iso if self.date_source == "published" else f"{iso} (approximate: {self.date_source} date)"


EPOCH = dt.date(1970, 1, 1)


#: the ingest columns ``article_days`` computes ``Article.day`` from
DAY_COLUMNS = ("published", "date_source", "windowed")


def article_days(columns: Any) -> Any:
    """``Article.day`` of every row of an Arrow batch / table with ``DAY_COLUMNS``, as an int64 numpy array, computed
    on the columns (the same rule, no record per article): ``UNDATED_DAY`` where there is no date, or an inferred one
    that is not ``windowed``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    published = columns.column("published")
    in_windows = pc.or_kleene(pc.fill_null(columns.column("windowed"), False),
                        pc.equal(columns.column("date_source"), "published"))
    dated = pc.fill_null(pc.and_kleene(pc.is_valid(published), in_windows), False)
    days = pc.cast(pc.cast(published, pa.int32()), pa.int64())
    return np.asarray(pc.if_else(dated, days, pa.scalar(UNDATED_DAY, pa.int64())).to_numpy(zero_copy_only=False),
                      dtype=np.int64)


def undated(day: int) -> bool:
    """An ``Article.day`` (or index entry's day) that places the article in no date window."""
    return day >= UNDATED_DAY


def within_days(a: int, b: int, max_days: int) -> bool:
    """Two articles may pair under a ``max_days`` window: both dated and close, or either one undated
    (``corpus.undated: keep | infer`` mines those without a window)."""
    return undated(a) or undated(b) or abs(a - b) <= max_days


def days_apart(a: int, b: int) -> int:
    """``ArticlePair.days_apart``: -1 when either article has no date for windows."""
    return -1 if undated(a) or undated(b) else abs(a - b)


def x_language(languages: Sequence[str], pivot: str) -> Optional[str]:
    """The pivot rule, in one place: a pair of articles in the pivot language makes pivot–pivot questions
    (""), a pair of an X article and a pivot article X–pivot questions (X); anything else none (None).
    The questions stage stores it on each ``QAItem`` (``x_language``); later stages read it from there."""
    others = [lang for lang in languages if lang != pivot]
    if len(languages) != 2 or len(others) > 1:
        return None
    return others[0] if others else ""


def monolingual_language(languages: Sequence[str], monolingual: Sequence[str]) -> Optional[str]:
    """The monolingual X–X rule (MIRAGE-Bench's setting), beside the pivot rule: two articles in a language the
    curator lists in ``questions.monolingual`` make a question written in that language (X); anything else
    None. It wins over the pivot rule, so a pivot listed there makes its pivot–pivot pairs monolingual too."""
    if len(languages) == 2 and languages[0] == languages[1] and languages[0] in monolingual:
        return languages[0]
    return None


MONOLINGUAL_SETTING = "monolingual"  # the instance setting of monolingual X–X questions (config ``monolingual-<x>``)


def translation_targets(x: str, pivot: str, targets: Sequence[str]) -> list[str]:
    """The languages a question's instances use beside the pivot: en–en questions (``x`` "") go into every
    target, X–en questions into X only. The questions stage translates into these, and only these are
    sent to human translation."""
    if x:
        return [x] if x in targets else []
    return [t for t in targets if t != pivot]


class IndexEntry(Record):
    """One article in the vector store (the index stage): what pairs and distractors need in memory."""

    language: str
    day: int  # days since 1970-01-01 (Article.day: UNDATED_DAY without a date for windows)
    fresh: bool = True  # the day is a real publication date (Article.fresh_day): distractor freshness trusts it
    index: str  # the index stage's identity (encoder, store, corpus): a new index changes these records


class ArticlePair(Record):
    """Two related articles: same-language (entity graph) or cross-language (dense retrieval)."""

    article_a: str
    article_b: str
    language_a: str
    language_b: str
    method: Literal["entity_graph", "dense", "hybrid"]  # hybrid: same language, dense + entities (samelang.py)
    score: float = 0.0
    shared_entities: list[str] = Field(default_factory=list)
    days_apart: int = 0  # -1: an article has no date for windows (corpus.undated keep / infer)
    event_id: str = ""  # dense pairs from an events file: the event both articles matched
    relevant: Optional[bool] = None  # LLM topical-relevance verdict; None = not checked
    rationale: str = ""
    provenance: Provenance = Field(default_factory=Provenance)


class SimpleQA(BaseModel):
    """A one-step question/answer written from one article's summary."""

    model_config = ConfigDict(extra="forbid")
    article_id: str
    question: str
    answer: str


class _Nested(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EntityForm(_Nested):
    """How a translation writes a named entity of the English text."""

    source: str
    target: str


class Reviewer(_Nested):
    """An annotator whose submitted response a merged decision rests on."""

    annotator: str
    updated_at: str = ""


class MachineTranslation(_Nested):
    """The machine translation a human post-edit replaced."""

    question: str = ""
    answer: str = ""
    model: str = ""


def english_source(question: str, answer: str) -> str:
    """Fingerprint of the English question and answer a translation was made from: a human correction of
    either changes it, so a translation of the old text is told apart from one of the reviewed text."""
    return hashlib.sha256(json.dumps([question, answer], ensure_ascii=False).encode()).hexdigest()[:16]


class Translation(_Nested):
    """A question/answer in one language: machine-translated (questions stage) or human (annotate merge).
    A failed machine translation is kept with ``error`` set (and no text), so the failure stays visible.
    ``source``: ``english_source`` of the English text it translates ("" in records written before it)."""

    language: str
    question: str = ""
    answer: str = ""
    machine_translated: bool = True
    error: str = ""
    entities: list[EntityForm] = Field(default_factory=list)
    missing_entities: list[str] = Field(default_factory=list)  # English entities the translation lost
    prompt: str = ""  # prompt id@version of the machine translation
    model: str = ""
    post_edited: bool = False  # a human replaced a machine translation
    machine_translation: Optional[MachineTranslation] = None
    annotators: list[Reviewer] = Field(default_factory=list)
    guideline: str = ""
    source: str = ""

    @property
    def usable(self) -> bool:
        return not self.error and bool(self.question) and bool(self.answer)


class FilterVerdict(_Nested):
    """One quality filter's verdict on a question (``not_run``: an earlier filter rejected it)."""

    filter: str
    status: Literal["pass", "fail", "error", "not_run"]
    detail: str = ""
    score: Optional[float] = None

    @property
    def passed(self) -> bool:
        return self.status == "pass"


class HumanVotes(_Nested):
    """The decided label per question (None: the annotators did not agree and the decision did not need it,
    e.g. a unanimous "not natural" rejects whatever "answerable" says)."""

    natural: Optional[str] = None
    answerable: Optional[str] = None
    answer_correct: Optional[str] = None


class HumanReview(_Nested):
    """The annotators' majority decision on a question (annotate merge, Q&A verification)."""

    passed: bool
    votes: HumanVotes
    annotators: list[Reviewer] = Field(default_factory=list)
    original_answer: Optional[str] = None  # the machine answer an accepted correction replaced
    dataset: str = ""
    guideline: str = ""
    adjudicator: Optional[Reviewer] = None  # the adjudicator whose verdict settled a disputed record


class QAItem(Record):
    """A cross-document question (English first) with its answer and the evidence it used."""

    pair_id: str
    article_ids: list[str]
    # the pivot rule's verdict for its two articles (``x_language``): "" pivot–pivot, X for X–pivot;
    # None in records written before it was stored
    x_language: Optional[str] = None
    # a monolingual X–X question (``monolingual_language``): question and answer are written in X, never
    # translated; None: written in English first (the XRAG settings)
    language: Optional[str] = None
    q_type: QuestionType
    question: str  # English (in ``language`` for a monolingual question)
    answer: str  # English (in ``language`` for a monolingual question)
    summaries: list[str] = Field(default_factory=list)
    selected: list[SimpleQA] = Field(default_factory=list)
    translations: list[Translation] = Field(default_factory=list)  # one per language, sorted by language
    filters: list[FilterVerdict] = Field(default_factory=list)  # in the order the filters ran
    accepted: bool = True
    rejected_by: str = ""  # first filter that rejected it
    verified: bool = False  # set by human annotation
    human_review: Optional[HumanReview] = None
    provenance: Provenance = Field(default_factory=Provenance)

    @model_validator(mode="before")
    @classmethod
    def _from_json_columns(cls, data: Any) -> Any:
        """Records written before the fields were typed (``translations_json``, ``filters_json``) still read."""
        if not isinstance(data, dict) or not ({"translations_json", "filters_json"} & set(data)):
            return data
        data = dict(data)
        trs = json.loads(data.pop("translations_json", None) or "{}")
        data["translations"] = data.get("translations") or [
            {"language": lang, **{k: v for k, v in tr.items() if k in Translation.model_fields},
             "entities": [{"source": a, "target": b} for a, b in (tr.get("entities") or {}).items()]}
            for lang, tr in sorted(trs.items())]
        verdicts = json.loads(data.pop("filters_json", None) or "{}")
        human = verdicts.pop("human_verification", None)
        data["filters"] = data.get("filters") or [
            {"filter": name, "status": v.get("status") or ("pass" if v.get("passed") else "fail"),
             "detail": str(v.get("detail") or ""), "score": v.get("score")} for name, v in verdicts.items()]
        if human and data.get("human_review") is None:
            detail = human.get("detail") or {}
            data["human_review"] = {"passed": bool(human.get("passed")), **{
                k: detail[k] for k in ("votes", "annotators", "original_answer", "dataset", "guideline") if k in detail}}
        return data

    def translation(self, language: str) -> Optional[Translation]:
        return next((t for t in self.translations if t.language == language), None)

    @property
    def source_fingerprint(self) -> str:
        """``english_source`` of this item's (possibly human-corrected) English question and answer."""
        return english_source(self.question, self.answer)

    def answer_type(self, language: str, pivot: str = "en") -> str:
        """``ANSWER_TYPES`` of this question's gold answer in ``language`` (see there)."""
        if self.human_review is not None and self.human_review.original_answer is not None:
            return "human_corrected"
        tr = self.translation(language) if language != pivot else None
        return "human_translated" if tr is not None and not tr.machine_translated else "original"

    def translation_is_current(self, tr: Translation) -> bool:
        """Whether ``tr`` translates this item's English as it is now. A translation made before a human
        correction is not: its ``source`` differs, or, written before ``source`` existed, the review
        replaced the answer it was made from (``human_review.original_answer``)."""
        if tr.source:
            return tr.source == self.source_fingerprint
        return self.human_review is None or self.human_review.original_answer is None

    def verdict(self, name: str) -> Optional[FilterVerdict]:
        return next((v for v in self.filters if v.filter == name), None)


class Distractor(BaseModel):
    model_config = ConfigDict(extra="forbid")
    article_id: str
    language: str
    kind: DocumentKind
    score: float = 0.0


class DistractorSet(Record):
    """Distractors chosen for one question, per language, with RAGE's kinds."""

    qa_id: str
    distractors: list[Distractor] = Field(default_factory=list)


class Document(BaseModel):
    """A document as shown to a model inside an instance."""

    model_config = ConfigDict(extra="forbid")
    article_id: str
    title: str
    text: str
    language: str
    published: IsoDate
    role: DocumentRole
    kind: DocumentKind
    machine_translated: bool = False


# Where a row's gold answer comes from. XRAG's own ``a_type`` says "original" (written by the model) or
# "corrected" (by annotators); a translated benchmark needs one more case. human_corrected: annotators
# corrected the English answer (a translated row's answer is a translation of the corrected text);
# human_translated: the English answer stands and a human translated this row's (question and) answer;
# original: the model's answer (confirmed or not yet reviewed), machine-translated where not English.
ANSWER_TYPES: tuple[str, ...] = ("original", "human_corrected", "human_translated")


class Instance(Record):
    """One benchmark item in one setting: question, gold answer and the documents to read."""

    qa_id: str
    setting: str  # e.g. "mono", "multi", "en-baseline", "mono+EQ", "monolingual", "no-retrieval", "oracle"
    language: str  # question language
    question: str
    answer: str
    en_question: str  # the question as written: English (pivot), or X for a monolingual question (``source_language``)
    en_answer: str
    # one of our four types (QuestionType) for a babelrag build; a converted external benchmark keeps its own
    # category here (GaRAGe: "Simple", "Simple w. condition", "Post-processing heavy", ...), so none of its
    # records is left out for having another category
    q_type: InstanceType
    documents: list[Document] = Field(default_factory=list)
    verified: bool = False
    machine_translated: bool = False
    dates: list[IsoDate] = Field(default_factory=list)  # supporting articles' publication dates
    # ANSWER_TYPES (the XRAG export maps them to XRAG's original/corrected); crossdoc_type 0/1/2 as in XRAG
    # (None = not annotated).
    a_type: str = "original"
    crossdoc_type: Optional[int] = None

    def source_language(self, pivot: str) -> str:
        """The language of ``en_question`` / ``en_answer``: the pivot, unless they repeat the question and answer —
        a monolingual question (its ``monolingual``, ``no-retrieval`` and ``oracle`` rows) was written in its own
        language and has no English version; a pivot-language row repeats them too, in the pivot."""
        if self.en_question == self.question and self.en_answer == self.answer:
            return self.language
        return pivot


class ErrorRecord(Record):
    """An item that failed (LLM parse failure, bad input): kept and counted, never dropped silently."""

    stage: str
    item_id: str
    reason: str
    detail: str = ""


class ContrastivePair(Record):
    """Two options for one question, one built to be better (Ragas-for-Romanian forced choice).

    kind: faithfulness (answer from the context vs answer without it), answer_relevance (complete vs
    evasive/partial answer), context_relevance (clean chunk vs chunk + an unrelated page; options are
    contexts). ``better`` is the construction-time expectation; annotators confirm it by forced choice.
    """

    kind: Literal["faithfulness", "answer_relevance", "context_relevance"]
    question: str
    context: str = ""  # the chunk both answers refer to ("" for context_relevance: the options are contexts)
    option_a: str
    option_b: str
    better: Literal["a", "b"]
    language: str = "en"
    source_id: str = ""  # qa item or article the chunk/question came from
    detail: str = ""  # e.g. "evasive" / "partial", or the unrelated article id
    judge_choice: Optional[Literal["a", "b"]] = None  # an LLM judge's pick, shown to annotators as a suggestion
    provenance: Provenance = Field(default_factory=Provenance)


def _stop_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class Sampling(BaseModel):
    """The sampling parameters an answer was generated with: the endpoint's defaults, then the prompt's, then
    the call's (``LLMRunner``). The usual request parameters are typed (an Arrow struct in parquet); any other
    parameter a prompt file sets is kept as given, so the record still says what was sent (``stop`` as a list)."""

    model_config = ConfigDict(extra="allow")
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    max_tokens: Optional[int] = None
    seed: Optional[int] = None
    stop: Annotated[Optional[list[str]], BeforeValidator(_stop_list)] = None
    presence_penalty: Optional[float] = None
    frequency_penalty: Optional[float] = None

    def params(self) -> dict[str, Any]:
        """As request parameters: the ones set (None left out)."""
        return self.model_dump(exclude_none=True)


class AnswerRecord(BaseModel):
    """One model's answer to one instance (``evaluate run`` writes them to answers.jsonl), with everything
    needed to reproduce and score it, and the question and gold answer so a reader (``annotate push
    answer_judgement``) needs no other file."""

    model_config = ConfigDict(extra="forbid")
    id: str
    instance_id: str
    qa_id: str
    setting: str
    language: str
    model: str  # endpoint name in the config
    question: str  # the instance's question as the model saw it
    gold_answer: str  # the instance's gold answer
    served_model: str = ""
    answer: str = ""
    ok: bool = True
    error: str = ""
    doc_order: list[str] = Field(default_factory=list)  # article ids in the order shown (1-based ids)
    doc_chars: int = 0  # each document's text was cut to this many characters (0 = shown whole)
    relevant: list[int] = Field(default_factory=list)  # positions (1-based) of supporting articles
    prompt_id: str = ""
    prompt_version: str = ""
    style: str = "citations"
    sampling: Sampling = Field(default_factory=Sampling)
    dataset_version: str = ""
    cached: bool = False
    judge_verdict: Optional[Literal["correct", "incorrect"]] = None  # a judge panel's majority, if any

    @model_validator(mode="before")
    @classmethod
    def _from_sampling_json(cls, data: Any) -> Any:
        """Answers written before ``sampling`` was typed carry it as a JSON string (``sampling_json``)."""
        if not isinstance(data, dict) or "sampling_json" not in data:
            return data
        data = dict(data)
        text = data.pop("sampling_json")
        if "sampling" not in data:
            data["sampling"] = json.loads(text or "{}") if isinstance(text, str) else text
        return data

    @property
    def sampling_json(self) -> str:
        """The sampling parameters as the sorted JSON text older answers files held."""
        return json.dumps(self.sampling.params(), sort_keys=True)

