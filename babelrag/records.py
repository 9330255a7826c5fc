"""The record contract: every typed record that flows between stages or crosses a package boundary.

Every stage reads and writes lists of these pydantic models; ``babelrag.store`` turns them into
Arrow/parquet through ``datasets`` with features derived from the model (see ``babelrag.arrow_features``).
A type that one package writes and another reads (construct -> annotate, evaluate -> annotate,
annotate -> construct, release -> evaluate) is defined here once; other modules import it (older names
such as ``annotate.inputs.ModelAnswer`` are imports of the one definition). Free-form mappings are kept
as JSON strings so every column has one Arrow type.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

QuestionType = Literal["aggregation", "comparison", "multi-hop", "set"]
QUESTION_TYPES: tuple[str, ...] = ("aggregation", "comparison", "multi-hop", "set")

DocumentRole = Literal["supporting", "distractor"]
# RAGE's distractor kinds; supporting documents are "relevant".
DocumentKind = Literal["relevant", "related", "irrelevant", "seemingly_relevant"]


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


class Article(Record):
    """One news article after ingestion (language identified, deduplicated)."""

    title: str
    text: str
    language: str  # ISO 639-1 code, e.g. "en", "de", "zh"
    published: str  # ISO date YYYY-MM-DD
    url: str = ""
    source: str = ""  # file the article came from (jsonl/html/warc path)
    n_tokens: int = 0
    title_entities: list[str] = Field(default_factory=list)


class ArticlePair(Record):
    """Two related articles: same-language (entity graph) or cross-language (dense retrieval)."""

    article_a: str
    article_b: str
    language_a: str
    language_b: str
    method: Literal["entity_graph", "dense"]
    score: float = 0.0
    shared_entities: list[str] = Field(default_factory=list)
    days_apart: int = 0
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


class QAItem(Record):
    """A cross-document question (English first) with its answer and the evidence it used."""

    pair_id: str
    article_ids: list[str]
    q_type: QuestionType
    question: str  # English
    answer: str  # English
    summaries: list[str] = Field(default_factory=list)
    selected: list[SimpleQA] = Field(default_factory=list)
    translations_json: str = "{}"  # {"de": {"question": .., "answer": .., "machine_translated": true}}
    filters_json: str = "{}"  # {"well_formed": {"passed": true, "detail": ..}, ...}
    accepted: bool = True
    rejected_by: str = ""  # first filter that rejected it
    verified: bool = False  # set by human annotation
    provenance: Provenance = Field(default_factory=Provenance)


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
    published: str
    role: DocumentRole
    kind: DocumentKind
    machine_translated: bool = False


class Instance(Record):
    """One benchmark item in one setting: question, gold answer and the documents to read."""

    qa_id: str
    setting: str  # e.g. "mono", "multi", "en-baseline", "mono+EQ", "no-retrieval", "oracle"
    language: str  # question language
    question: str
    answer: str
    en_question: str
    en_answer: str
    q_type: QuestionType
    documents: list[Document] = Field(default_factory=list)
    verified: bool = False
    machine_translated: bool = False
    dates: list[str] = Field(default_factory=list)  # supporting articles' publication dates
    # XRAG compatibility (release/export): "original" = model answer, "corrected" = fixed by an annotator;
    # crossdoc_type 0/1/2 as in XRAG (None = not annotated).
    a_type: str = "original"
    crossdoc_type: Optional[int] = None


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
    question: str = ""  # the instance's question as the model saw it ("" in files written before it was kept)
    gold_answer: str = ""  # the instance's gold answer
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
    sampling_json: str = "{}"
    dataset_version: str = ""
    cached: bool = False
    judge_verdict: Optional[Literal["correct", "incorrect"]] = None  # a judge panel's majority, if any
