"""What a build stage is, and how the core finds the stages without importing any stage package.

A stage declares itself in a small module of its own package (``StageSpec``: name, run function as a
``"module:function"`` string, record type, inputs, the config sections it owns — their settings models —
and the sections it reads). The package lists that module under the ``babelrag.stages`` entry-point group
(pyproject.toml); other packages' config sections (annotate, release, evaluate) under ``babelrag.sections``.
The pipeline order, the config schema and the ``babelrag construct`` commands are all generated from
these declarations, so adding a stage is one declaration module + one entry-point line + its run code.
What a stage's run function is given, ``StageContext`` (with ``DeclaredConfig``, the config narrowed to the
sections the spec declares), lives here too, so a stage imports this module and never the runner.
"""
from __future__ import annotations

import importlib
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from babelrag import records
from babelrag.build_layout import RESERVED_NAMES
from babelrag.console import track
from babelrag.errors import ConfigError, StageError
from babelrag.interrupts import StagePosition
from babelrag.records import ErrorRecord
from babelrag.shards import ShardWriter
from babelrag.store import BuildStore

M = TypeVar("M", bound=BaseModel)

STAGE_GROUP = "babelrag.stages"
SECTION_GROUP = "babelrag.sections"


@dataclass(frozen=True)
class StageSpec:
    name: str
    target: str  # "package.module:function" (imported only when the stage runs)
    # the record type it writes: "package.module:Class" (a plug-in's own model), or a bare class name in
    # babelrag.records ("Article"); imported only when the stage runs
    model: str
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

    def load(self) -> Callable[[StageContext], None]:
        module, _, attr = self.target.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise StageError(f"stage '{self.name}' is not available: {exc}") from None

    def record_type(self) -> type[BaseModel]:
        """The pydantic model named by ``model``: ``module:Class``, or a bare name in ``babelrag.records``."""
        module, _, name = self.model.rpartition(":")
        try:
            found = getattr(importlib.import_module(module) if module else records, name)
        except (ImportError, AttributeError) as exc:
            where = module or "babelrag.records"
            raise StageError(f"stage '{self.name}': record type {self.model!r} is not available ({exc}); name "
                             f"a pydantic model as 'package.module:Class' (or a class in {where})") from None
        if not (isinstance(found, type) and issubclass(found, BaseModel)):
            raise StageError(f"stage '{self.name}': record type {self.model!r} is not a pydantic model")
        return found

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


class DeclaredConfig:
    """The config as a stage sees it: only the sections its spec declares (``config_sections``,
    ``runtime_sections`` and the ones it owns). Reading another section raises, because a value the
    fingerprint does not cover would let a changed config reuse stale output."""

    def __init__(self, config: BaseModel, spec: StageSpec) -> None:
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_spec", spec)
        object.__setattr__(self, "_sections", set(type(config).model_fields) - {"base_dir"})

    def __getattr__(self, name: str) -> Any:
        if name in self._sections and name not in self._spec.readable_sections:
            raise StageError(f"stage '{self._spec.name}' reads config section '{name}' but does not declare it; "
                             f"add it to its StageSpec (config_sections, or runtime_sections if it never "
                             f"changes the output); declared: {sorted(self._spec.readable_sections)}")
        return getattr(self._config, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a stage's config is read-only")

    @property
    def unchecked(self) -> Any:
        """The whole config, for code that needs the model itself (the LLM session)."""
        return self._config


class StageContext:
    """What a stage function sees: config, inputs, an output writer, skip counters, progress, LLM.

    The runner makes one per stage run. ``config`` is the loaded ``babelrag.config.Config`` (typed here as
    the pydantic model it is: the config module imports this one for the declared sections); ``llm`` makes
    the shared LLM runner on first use, so a stage that never calls an LLM never builds one."""

    def __init__(self, spec: StageSpec, config: BaseModel, store: BuildStore, fingerprint: str,
                 staging: Path, console: Any = None, config_hash: str = "",
                 llm: Callable[[], Any] | None = None) -> None:
        self.spec = spec
        self.config: Any = DeclaredConfig(config, spec)
        self.store = store
        self.fingerprint = fingerprint
        # the output-relevant config (its sections + the LLM endpoints it calls): records' provenance
        self.config_hash = config_hash
        self.artifacts_dir = staging  # extra files written here land in the stage folder atomically
        self.console = console
        self.skipped: Counter[str] = Counter()
        self.noted: Counter[str] = Counter()
        self.count_in = 0
        self.extra: dict[str, Any] = {}
        self._writer: ShardWriter | None = None
        self._llm: Any = None
        self._make_llm = llm
        self.position = StagePosition()  # the current progress loop, for "N of M items done" on an interrupt

    # inputs -----------------------------------------------------------------------------------
    def read(self, stage: str, model: type[M]) -> list[M]:
        return self.store.read(stage, model)

    def iter_read(self, stage: str, model: type[M]) -> Iterator[M]:
        return self.store.iter_read(stage, model)

    def read_columns(self, stage: str, columns: Iterable[str], ids: Iterable[str] | None = None) -> Iterator[Any]:
        """Only ``columns`` of a stage's records as Arrow record batches in id order, no record per row (a
        corpus-sized input a stage needs a few columns of); with ``ids``, only those records' rows."""
        return self.store.column_batches(stage, list(columns), ids)

    def read_ids(self, stage: str, model: type[M], ids: Iterable[str]) -> dict[str, M]:
        """Only the records with these ids (large inputs: reads just the row groups holding them)."""
        return self.store.read_ids(stage, model, ids)

    # outputs ----------------------------------------------------------------------------------
    def output(self, shard_size: int = 200) -> ShardWriter:
        """The stage's resumable writer (one per run); skip items for which ``has(id)`` is true."""
        if self._writer is None:
            self._writer = self.store.partial_writer(self.spec.name, self.spec.record_type(), self.fingerprint,
                                                     shard_size=shard_size)
        return self._writer

    def scratch_dir(self, name: str) -> Path:
        """An empty folder for this run's temporary files (a sort's spilled runs), inside the stage's
        unfinished-run folder: never part of the output, emptied when a later run asks for it again (a killed run's
        leftovers) and removed with that folder when the stage commits."""
        path = self.output().folder / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path

    def error(self, item_id: str, reason: str, detail: str = "") -> None:
        self.output().add_error(ErrorRecord(id=f"{self.spec.name}:{item_id}", stage=self.spec.name,
                                            item_id=item_id, reason=reason, detail=detail[:2000]))

    def skip(self, reason: str, n: int = 1) -> None:
        """Count an input deliberately left out (shown per reason in the run report)."""
        self.skipped[reason] += n

    def note(self, reason: str, n: int = 1) -> None:
        """Count an item kept with a caveat (no entities found, a translation missing): shown per reason
        in the run report apart from the skips, since it is in the output."""
        self.noted[reason] += n

    def report_line(self, text: str) -> None:
        """A line about the whole stage for the run report's note column (which queries ran, a sampling
        warning). Kept in the manifest (``extra["notes"]``), so a later run that finds the stage current shows it
        too; ``note`` counts items kept with a caveat instead."""
        self.extra.setdefault("notes", []).append(text)

    # helpers ----------------------------------------------------------------------------------
    def progress(self, items: Iterable[Any], total: int | None = None, desc: str = "") -> Iterator[Any]:
        yield from track(self.position.follow(items, total, desc), total, f"[bold]{self.spec.name}[/] {desc}",
                         self.console)

    def keep_finished(self) -> int | None:
        """Write the items finished so far as a shard (an interrupted run keeps them for the re-run);
        returns how many items the stage has stored, None when it never opened its writer."""
        if self._writer is None:
            return None
        self._writer.flush()
        return self._writer.stored

    @property
    def llm(self) -> Any:
        """The shared LLM runner (created on first use; usage is accounted to this stage)."""
        if self._llm is None:
            if self._make_llm is None:
                raise StageError(f"stage '{self.spec.name}' asked for an LLM, but it runs without one")
            self._llm = self._make_llm()
        return self._llm

    @property
    def seed(self) -> int:
        return self.config.project.seed


_EXTRA_STAGES: dict[str, StageSpec] = {}  # added at run time (plug-ins, tests)


def _check_name(spec: StageSpec) -> StageSpec:
    """A stage's folder sits beside the build's other folders: it may not take one of their names."""
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
