"""The build configuration: one YAML file validated by pydantic.

Unknown keys and bad values are errors that name the key and what is allowed. Secrets never live here:
endpoints name the *environment variable* that holds their key.
"""
from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, create_model, field_validator,
                      model_validator)

from babelrag.errors import ConfigError
from babelrag.hashing import stable_hash
from babelrag.languages import normalise_languages, normalise_tag
from babelrag.llm.settings import LLMSettings, looks_like_secret
from babelrag.run_only import output_values, run_only
from babelrag.stage import declared_sections, run_load_hooks
from babelrag.text_input import read_text


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProjectConfig(Section):
    name: str = run_only("babelrag-benchmark")  # a label (release card, reports): renaming rebuilds nothing
    build_dir: str = run_only("build")
    seed: int = 13
    # any language lingua identifies, as BCP-47 / ISO 639 tags; stored normalised to ISO 639-1 ("pt-BR" -> "pt",
    # "zh-Hans" -> "zh"; babelrag/languages.py says what is kept and dropped)
    languages: list[str] = Field(default_factory=lambda: ["en", "de", "es", "zh", "ar"])
    pivot_language: str = "en"

    @field_validator("languages")
    @classmethod
    def _known_languages(cls, value: list[str]) -> list[str]:
        return normalise_languages(value)

    @field_validator("pivot_language")
    @classmethod
    def _known_pivot(cls, value: str) -> str:
        return normalise_tag(value).code

    # the checks below hold whatever codes are allowed: a build whose pivot is not built, or a language
    # listed twice, validates but silently loses its cross-language pairs

    @field_validator("languages")
    @classmethod
    def _no_duplicate_languages(cls, value: list[str]) -> list[str]:
        twice = sorted({v for v in value if value.count(v) > 1})
        if twice:
            raise ValueError(f"language(s) {twice} listed more than once; list each language once")
        if not value:
            raise ValueError("no languages: list at least the pivot language (e.g. [en, de])")
        return value

    @model_validator(mode="after")
    def _pivot_is_a_language(self) -> "ProjectConfig":
        if self.pivot_language not in self.languages:
            raise ValueError(f"pivot_language {self.pivot_language!r} is not among project.languages "
                             f"{self.languages}: add it there, or pick the pivot from that list")
        return self


class ExecutorConfig(Section):
    """Where per-item work (ingest's extraction, filters and signatures; article encoding) runs, and how many
    threads the pairs stage's exact search uses on this machine (``processes``). Not part of any stage
    fingerprint: the output is the same for any backend and number of processes."""
    backend: Literal["local", "ray"] = run_only("local")  # local = process pool on this machine; ray = Ray cluster tasks
    address: Optional[str] = run_only(None)  # ray: "ray://head:10001", "auto" or "head:6379"; None = start a local cluster
    processes: Optional[int] = run_only(None, ge=0)  # None or 0 = every available core (ray: cluster CPU); 1 = no pool
    chunk_size: int = run_only(8, ge=1)  # items per task sent to a worker


class Config(Section):
    """The core sections and what every config can do; ``config_model()`` adds the sections the stages
    and packages declare (``babelrag.stage``), and every loaded config is an instance of that model."""

    project: ProjectConfig = Field(default_factory=ProjectConfig)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)

    # where the file was loaded from: relative paths in the config resolve against it
    base_dir: str = Field(".", exclude=True)
    # what the stages' load hooks reported (``babelrag.stage.run_load_hooks``): the language capability table
    _load_summaries: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def load_summaries(self) -> dict[str, Any]:
        """Stage name -> the summary its load hook returned (empty for a config not made by ``load_config``)."""
        return self._load_summaries

    def resolve(self, path: str | None) -> Path | None:
        if path is None:
            return None
        p = Path(path).expanduser()
        return p if p.is_absolute() else Path(self.base_dir) / p

    @property
    def build_dir(self) -> Path:
        return self.resolve(self.project.build_dir)  # type: ignore[return-value]

    def section_hash(self, *names: str) -> str:
        """Hash of the output-relevant values of these sections (``babelrag.run_only``): run-only fields
        are left out, LLM endpoints are identified as the response cache identifies them."""
        def value(name: str) -> Any:  # a section, or part of one ("dense.encoder")
            node: Any = self
            for part in name.split("."):
                node = getattr(node, part, None)
            return output_values(node)

        return stable_hash({n: value(n) for n in names})


def config_model() -> type[Config]:
    """``Config`` with every declared section (stages' owned sections, then other packages'), built once per
    set of declarations."""
    return _config_model(declared_sections())


@lru_cache(maxsize=4)
def _config_model(sections: tuple[tuple[str, type[BaseModel]], ...]) -> type[Config]:
    clash = [name for name, _ in sections if name in Config.model_fields]
    if clash:
        raise ConfigError(f"config section(s) {clash} are core sections; a stage cannot declare them")
    fields: dict[str, Any] = {name: (model, Field(default_factory=model)) for name, model in sections}
    return create_model("Config", __base__=Config, __module__=__name__, **fields)


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


#: config keys whose values are never echoed in an error (besides every ``*_env`` key naming a variable)
SECRET_KEYS = frozenset({"password", "token", "api_key", "secret"})


def _shown_input(loc: tuple[Any, ...], value: Any) -> str:
    """`` (got VALUE)`` for an error line; nothing for a whole section (the message says what is wrong) or for
    a value that may be a secret (a key pasted into ``api_key_env``, a password): never printed back."""
    if isinstance(value, dict):
        return ""
    name = str(loc[-1]) if loc else ""
    if name.endswith("_env") or name in SECRET_KEYS or (isinstance(value, str) and looks_like_secret(value)):
        return " (value not shown: it may be a secret)"
    return f" (got {value!r})"


def format_validation_error(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        loc = tuple(e["loc"])
        key = ".".join(str(p) for p in loc)
        if e["type"] == "extra_forbidden":
            owner = _model_at(config_model(), loc)
            allowed = sorted(owner.model_fields) if owner else []
            hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            msg = f"unknown key '{key}'" + (f" (did you mean '{hint[0]}'?)" if hint else "")
            if allowed:
                msg += f"; allowed keys here: {', '.join(k for k in allowed if k != 'base_dir')}"
        else:
            msg = f"'{key}': {e['msg']}{_shown_input(loc, e.get('input'))}"
        lines.append(f"{source}: {msg}")
    return "\n".join(lines)


def load_config(path: str | Path, overrides: dict[str, Any] | None = None,
                defaults: dict[str, Any] | None = None) -> Config:
    """Read and validate a YAML config; errors are ConfigError with one line per problem. ``overrides`` win
    over the file (command-line flags); the file wins over ``defaults`` (a mode's own defaults)."""
    path = Path(path)
    raw = read_config_file(path)
    if defaults:
        raw = deep_merge(defaults, raw)
    if overrides:
        raw = deep_merge(raw, overrides)
    return config_from_dict(raw, source=str(path), base_dir=path.parent)


def read_config_file(path: Path) -> dict[str, Any]:
    """The YAML config's sections as written, unvalidated (``load_config`` validates them); a missing file,
    bad YAML or a non-mapping is a one-line ConfigError."""
    import yaml

    if not path.exists():
        raise ConfigError(f"config file not found: {path} (create one with `babelrag init {path}`)")
    try:
        raw = yaml.safe_load(read_text(path, ConfigError)) or {}  # UTF-8 (BOM or not), UTF-16 with a BOM, detected
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of sections (project:, corpus:, ...), got {type(raw).__name__}")
    return raw


def config_from_dict(raw: dict[str, Any], source: str = "<config>", base_dir: Path | str = ".") -> Config:
    try:
        config = config_model().model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, source)) from None
    config.base_dir = str(Path(base_dir).resolve())
    try:
        config._load_summaries = run_load_hooks(config)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    return config


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
