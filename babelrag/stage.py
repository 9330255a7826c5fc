"""What a build stage is, and how the core finds the stages without importing any stage package.

A stage declares itself in a small module of its own package (``StageSpec``: name, run function as a
``"module:function"`` string, record type, inputs, the config sections it owns — their settings models —
and the sections it reads). The package lists that module under the ``babelrag.stages`` entry-point group
(pyproject.toml); other packages' config sections (annotate, release, evaluate) under ``babelrag.sections``.
The pipeline order, the config schema and the ``babelrag construct`` commands are all generated from
these declarations, so adding a stage is one declaration module + one entry-point line + its run code.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from babelrag.errors import ConfigError, StageError

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.pipeline import StageContext

STAGE_GROUP = "babelrag.stages"
SECTION_GROUP = "babelrag.sections"


@dataclass(frozen=True)
class StageSpec:
    name: str
    target: str  # "package.module:function" (imported only when the stage runs)
    model: str  # record type name in babelrag.records
    inputs: tuple[str, ...] = ()
    # config sections whose values shape the output: they are part of the fingerprint, and the only
    # sections (with ``runtime_sections``) the stage may read — StageContext.config enforces it
    config_sections: tuple[str, ...] = ()
    version: str = "1"
    # why each version changed the output: (version, reason); a build made by an earlier version re-runs
    # once and the run report says why
    changes: tuple[tuple[str, str], ...] = ()
    description: str = ""
    uses_llm: bool = False
    # config fields naming files or folders the stage reads ("a.b", "a.list[].c", "a.mapping{}"): their
    # *content* is part of the fingerprint (a value that is not an existing path, e.g. a model name, is not)
    files: tuple[str, ...] = ()
    # config fields naming input files or folders that must exist when set: (field selector, {field: value}
    # conditions that must all hold for the file to be read). Checked before the first stage of a run, so a
    # wrong path stops the run before any paid LLM stage, not when the stage that reads it is reached
    input_paths: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    # LLM endpoints used although "llm" is not among config_sections: (endpoint field, {field: value}
    # conditions that must all hold); the resolved endpoint's output-relevant settings join the fingerprint
    llm_endpoints: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    # prompt files the stage renders ("package.module:relative/path.yaml", beside that module): their
    # id@version join the fingerprint, so a prompt whose version is bumped re-runs the stage
    prompts: tuple[str, ...] = ()
    # sections the stage may read that change how it runs, never what it writes (executor, llm limits):
    # not part of the fingerprint
    runtime_sections: tuple[str, ...] = ()
    # the config sections this stage owns: section name -> settings model (becomes part of the schema)
    owns: Mapping[str, type[BaseModel]] = field(default_factory=dict)
    order: int = 100  # position in the pipeline (ties: by name)
    # "module:function" run on every loaded config (``run_load_hooks``): checks across sections and values that
    # depend on other sections (``dense.encoder.kind: auto`` from ``project.languages``); it raises
    # ConfigError to refuse the config, or returns a JSON-able summary for ``construct status`` and the run report
    on_load: str = ""

    def load(self) -> Callable[["StageContext"], None]:
        module, _, attr = self.target.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise StageError(f"stage '{self.name}' is not available: {exc}") from None

    def record_type(self) -> type[BaseModel]:
        from babelrag import records

        return getattr(records, self.model)

    def change_note(self, built_with: str) -> str:
        """What re-runs a build made by version ``built_with`` ("" when that is this version)."""
        if built_with == self.version:
            return ""
        why = dict(self.changes).get(self.version, "")
        if not built_with:  # a manifest written before stage versions were recorded
            return f"output made before version {self.version}: {why}" if why else ""
        return f"output made by version {built_with}, now {self.version}" + (f": {why}" if why else "")

    @property
    def readable_sections(self) -> frozenset[str]:
        """Sections the stage may read; a ``config_sections`` entry may name part of one (``dense.encoder``)."""
        return frozenset(s.split(".")[0] for s in (*self.config_sections, *self.runtime_sections, *self.owns))


_EXTRA_STAGES: dict[str, StageSpec] = {}  # added at run time (plug-ins, tests)


def _check_name(spec: StageSpec) -> StageSpec:
    """A stage's folder sits beside the build's other folders: it may not take one of their names."""
    from babelrag.build_layout import RESERVED_NAMES

    if spec.name in RESERVED_NAMES or spec.name.startswith(".") or "/" in spec.name:
        raise ConfigError(f"stage name {spec.name!r} is taken by the build folder's layout "
                          f"({', '.join(sorted(RESERVED_NAMES))}); rename the stage")
    return spec


def _load_entry(ep: Any, kind: str) -> Any:
    try:
        return ep.load()
    except Exception as exc:  # a broken plug-in names itself instead of breaking every command
        raise ConfigError(f"{kind} {ep.name!r} ({ep.value}) cannot be loaded: {exc}") from None


@lru_cache(maxsize=1)
def _declared_stages() -> tuple[StageSpec, ...]:
    specs = []
    for ep in metadata.entry_points(group=STAGE_GROUP):
        spec = _load_entry(ep, "stage")
        if not isinstance(spec, StageSpec) or spec.name != ep.name:
            raise ConfigError(f"entry point {ep.name!r} of {STAGE_GROUP} must name a StageSpec called {ep.name!r}")
        specs.append(_check_name(spec))
    return tuple(specs)


def run_load_hooks(config: Any) -> dict[str, Any]:
    """Each stage's ``on_load`` hook on a freshly validated config, in pipeline order: stage name -> summary."""
    out: dict[str, Any] = {}
    for spec in stages():
        if spec.on_load:
            module, _, attr = spec.on_load.partition(":")
            try:
                hook = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as exc:
                raise ConfigError(f"stage '{spec.name}': load hook {spec.on_load!r} is not available: {exc}") from None
            summary = hook(config)
            if summary:
                out[spec.name] = summary
    return out


def stages() -> tuple[StageSpec, ...]:
    """Every build stage, in pipeline order."""
    found = {s.name: s for s in _declared_stages()}
    found.update(_EXTRA_STAGES)
    return tuple(sorted(found.values(), key=lambda s: (s.order, s.name)))


def stage_names() -> tuple[str, ...]:
    return tuple(s.name for s in stages())


def get_stage(name: str) -> StageSpec:
    for spec in stages():
        if spec.name == name:
            return spec
    raise StageError(f"unknown stage '{name}'; stages: {', '.join(stage_names())}")


def add_stage(spec: StageSpec) -> None:
    """Declare a stage at run time (a plug-in without an entry point, or a test)."""
    _EXTRA_STAGES[spec.name] = _check_name(spec)
    declared_sections.cache_clear()


def remove_stage(name: str) -> None:
    _EXTRA_STAGES.pop(name, None)
    declared_sections.cache_clear()


@lru_cache(maxsize=1)
def declared_sections() -> tuple[tuple[str, type[BaseModel]], ...]:
    """(section, settings model) of every stage's owned sections, in pipeline order, then the sections
    other packages declare (``babelrag.sections``). A section with two owners is an error."""
    out: dict[str, type[BaseModel]] = {}
    owner: dict[str, str] = {}
    for spec in stages():
        for section, model in spec.owns.items():
            if section in out:
                raise ConfigError(f"config section {section!r} is declared by {owner[section]} and {spec.name}")
            out[section], owner[section] = model, f"stage {spec.name}"
    for ep in sorted(metadata.entry_points(group=SECTION_GROUP), key=lambda e: e.name):
        if ep.name in out:
            raise ConfigError(f"config section {ep.name!r} is declared by {owner[ep.name]} and {ep.value}")
        model = _load_entry(ep, "config section")
        out[ep.name], owner[ep.name] = model, ep.value
    return tuple(out.items())
