"""The resumable pipeline runner.

A stage is a function ``run(ctx: StageContext) -> None`` in a stage package that declares itself with a
``StageSpec`` (both in ``babelrag.stage``: the pipeline is generated from the declarations). A stage is skipped
when its fingerprint (``babelrag.fingerprint``: stage version + its config sections + its inputs' output
fingerprints + the content of the files its config names + the LLM endpoint it uses outside its config
sections) matches the manifest of its finished output; ``force`` redoes it. Records go through ``ctx.output(...)`` (a ShardWriter), so a
killed run resumes from its last shard.
"""
from __future__ import annotations

import platform
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from babelrag.atomic import atomic_write_text
from babelrag.build_lock import build_lock
from babelrag.config import Config
from babelrag.errors import IncompleteRunError, InputError, StageError
from babelrag.fs_errors import filesystem_error
from babelrag.funnel import Funnel, build_funnel
from babelrag.llm.budget import check_scopes
from babelrag.interrupts import (RESUME_HINT, interrupt_line, is_interrupt, mark_reported,
                                 signal_name)
from babelrag.hashing import ContentHasher
from babelrag import llm_session
from babelrag.fingerprint import (StageFingerprint, conditions_hold, config_values, prompt_versions, stage_config_hash,
                                  stage_fingerprint)
from babelrag.stage import StageContext, StageSpec
from babelrag.stage import stages as declared_stages
from babelrag.store import BuildStore, Manifest


def check_input_paths(config: Config, specs: Iterable[StageSpec]) -> None:
    """Every input file the config names for these stages (``StageSpec.input_paths``) exists: checked before
    the first stage runs, so a wrong path never surfaces after the paid LLM stages."""
    missing = []
    for spec in specs:
        for selector, conditions in spec.input_paths:
            if not conditions_hold(config, conditions):
                continue
            for key, value in config_values(config, selector):
                path = config.resolve(value) if isinstance(value, str) and value else None
                if path is not None and not path.exists():
                    missing.append(f"{key}: {value}" + (f" ({path})" if str(path) != value else ""))
    if missing:
        raise InputError(f"the config names input file(s) that do not exist: {'; '.join(missing)}. Fix the "
                         f"path(s) (relative ones resolve against the config file's folder); nothing was run")


def library_versions() -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("babelrag", "datasets", "pyarrow", "openai", "pydantic"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


@dataclass
class StageReport:
    stage: str
    status: str = "pending"  # ran | cached | failed | not-run
    count_in: int = 0
    count_out: int = 0
    errors: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # inputs left out, per reason
    kept_with_note: dict[str, int] = field(default_factory=dict)  # items kept with a caveat, per reason
    seconds: float = 0.0
    resumed: int = 0
    llm_usage: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    failed: dict[str, int] = field(default_factory=dict)  # failed items (retried next run), per reason
    stopped: str = ""  # why the run stopped after this stage (an LLM endpoint given up on as down, the budget)

    @property
    def errors_text(self) -> str:
        """The errors column: all errors, and how many of them are failed items the next run retries."""
        return f"{self.errors} ({sum(self.failed.values())} failed)" if self.failed else str(self.errors)


@dataclass
class RunReport:
    """Counts in/out/skipped per stage, time and LLM usage; printed at the end and saved as JSON."""

    stages: list[StageReport] = field(default_factory=list)
    funnel: Funnel | None = None  # where the articles went, per language (filled when the run ends)
    # what the config's load hooks reported (``Config.load_summaries``: the language capability table, the
    # encoder chosen and why)
    config: dict[str, Any] = field(default_factory=dict)
    # caps and spend of the build's LLM calls (``babelrag.llm.budget``: the build's spend over all runs)
    budget: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stages": [s.__dict__ for s in self.stages], "config": self.config}
        if self.funnel is not None:
            out["funnel"] = self.funnel.to_dict()
        if self.budget:
            out["budget"] = self.budget
        return out

    def render_config(self) -> list[Any]:
        """One table per load summary (``summary_tables``)."""
        return summary_tables(self.config)

    def incomplete(self) -> IncompleteRunError | None:
        """The error a run with failed items ends with (exit code 3), saying what failed where; None
        when nothing failed."""
        failed = [s for s in self.stages if s.failed]
        if not failed and not any(s.stopped for s in self.stages):
            return None
        total = sum(sum(s.failed.values()) for s in failed)
        where = "; ".join(f"{s.stage}: {sum(s.failed.values())} ("
                          + ", ".join(f"{k} {v}" for k, v in sorted(s.failed.items())) + ")" for s in failed)
        lines = [f"incomplete: {total} item{'s' * (total != 1)} failed — {where or 'none'}"]
        lines += [f"stopped after {s.stage}: {s.stopped}" for s in self.stages if s.stopped]
        not_run = [s.stage for s in self.stages if s.status == "not-run"]
        if not_run:
            lines.append(f"not run: {', '.join(not_run)}")
        lines.append("finished work is kept; run the same command again to retry exactly the failed items "
                     "(answers already received are not paid for again)")
        return IncompleteRunError("\n".join(lines))

    def budget_line(self) -> str:
        """Under the table when a cap is set: the build's LLM spend against it."""
        b = self.budget
        caps = ([f"${b['max_cost_usd']:g}"] if b.get("max_cost_usd") is not None else []) + [
            f"{k} ${v:g}" for k, v in (b.get("max_cost_usd_per_stage") or {}).items()]
        if not caps:
            return ""
        return (f"LLM spend on this build: ${b['spent_usd']:.4f} (${b['spent_this_run_usd']:.4f} in this run); "
                f"cap {', '.join(caps)}")

    def render(self) -> Any:
        from rich.table import Table

        table = Table(title="babelrag run report", caption=self.budget_line() or None)
        numeric = ("in", "out", "errors", "seconds", "llm calls", "tokens in/out", "cost")
        for col in ("stage", "status", "in", "out", "errors", "skipped", "kept with note", "seconds", "llm calls",
                    "tokens in/out", "cost", "note"):
            # reasons and notes wrap instead of being cut ("dense-below-min-pai…" told the curator nothing)
            table.add_column(col, justify="right" if col in numeric else "left",
                             overflow="fold" if col in ("skipped", "kept with note", "note") else "ellipsis")
        for s in self.stages:
            skipped = ", ".join(f"{k}={v}" for k, v in sorted(s.skipped.items())) or "-"
            noted = ", ".join(f"{k}={v}" for k, v in sorted(s.kept_with_note.items())) or "-"
            u = s.llm_usage or {}
            calls = f"{u.get('calls', 0):,}" + (f" ({u['cached']:,} cached)" if u.get("cached") else "")
            tokens = f"{u.get('prompt_tokens', 0):,}/{u.get('completion_tokens', 0):,}" if u.get("calls") else "-"
            cost = f"{u.get('cost', 0.0):.4f}" if u.get("cost") else "-"
            table.add_row(s.stage, s.status, str(s.count_in), str(s.count_out), s.errors_text, skipped, noted,
                          f"{s.seconds:.1f}", calls if u else "-", tokens, cost, s.note)
        if self.funnel is None:
            return table
        from rich.console import Group

        return Group(table, self.funnel.render())


def summary_tables(summaries: dict[str, Any]) -> list[Any]:
    """Rich tables of load summaries (``{"title", "encoder", "rows"}``): a caption line says which encoder
    was chosen and why."""
    from rich.table import Table

    tables = []
    for summary in summaries.values():
        rows = summary.get("rows") or []
        if not rows:
            continue
        enc = summary.get("encoder") or {}
        caption = (f"encoder: {enc['kind']}" + (f" (from {enc['configured']})" if enc.get("configured") != enc["kind"]
                                                else "") + f" — {enc.get('reason', '')}") if enc else None
        table = Table(title=summary.get("title", ""), caption=caption)
        for col in rows[0]:
            table.add_column(col.replace("_", " "))
        for row in rows:
            table.add_row(*(str(v) for v in row.values()))
        tables.append(table)
    return tables


class Pipeline:
    """Runs stages in order with skip-if-unchanged, ``force`` and crash-safe resume."""

    def __init__(self, config: Config, console: Any = None, stages: tuple[StageSpec, ...] | None = None) -> None:
        self.config = config
        self.stages = stages if stages is not None else declared_stages()
        self.store = BuildStore(config.build_dir)
        self.console = console
        self.report = RunReport(config=dict(config.load_summaries))
        self._hasher: ContentHasher | None = None
        self._running: StageContext | None = None  # the stage being run, for the report of an interrupt

    def content_hasher(self) -> ContentHasher:
        """The build's cache of file digests (``<build>/_shared/content_hashes.json``), made on first use."""
        if self._hasher is None:
            self._hasher = ContentHasher(self.store.shared_path("content_hashes.json"), exclude=[self.store.root])
        return self._hasher

    def config_hash(self, spec: StageSpec) -> str:
        return stage_config_hash(spec, self.config)

    def prompt_versions(self, spec: StageSpec) -> dict[str, str]:
        return prompt_versions(spec)

    def fingerprint(self, spec: StageSpec) -> StageFingerprint:
        """The stage's fingerprint now (``babelrag.fingerprint``): its inputs' manifests read from the build."""
        hasher = self.content_hasher() if spec.files else None
        found = stage_fingerprint(spec, self.config, {name: self.store.manifest(name) for name in spec.inputs},
                                  hasher)
        if hasher is not None:
            hasher.save()
        return found

    def _failed_to_retry(self, spec: StageSpec, existing: Manifest | None, fingerprint: str,
                         force: bool) -> dict[str, int]:
        """Failed items (per reason) of a finished, otherwise current output: the stage re-runs for them
        alone, starting from its committed output (``BuildStore.reopen_for_retry``)."""
        if force or existing is None or existing.fingerprint != fingerprint:
            return {}
        failed = self.store.failed_items(spec.name)
        if failed:
            self.store.reopen_for_retry(spec.name, fingerprint)
        return failed

    def _endpoint_down(self) -> str:
        """Why the run stops after this stage: an LLM endpoint given up on as down ("" when none)."""
        return "; ".join(llm_session.endpoints_down().values())

    def is_current(self, spec: StageSpec) -> bool:
        manifest = self.store.manifest(spec.name)
        return manifest is not None and manifest.fingerprint == self.fingerprint(spec)[0]

    def states(self) -> dict[str, str]:
        """Per stage, what ``construct status`` shows: ``not built``, ``stale``, ``current``, or
        ``stale (waits on X)`` when its own fingerprint matches but an input (directly or further up) is
        stale or not built: a stage's fingerprint holds its inputs' *output* fingerprints, which change only
        when the input re-runs, so a stage downstream of a stale one would otherwise read ``current``."""
        out: dict[str, str] = {}
        root: dict[str, str] = {}  # stage -> the earliest stage upstream (or itself) that is not current
        for spec in self.stages:
            blocked = next((root[i] for i in spec.inputs if i in root), None)
            if self.store.manifest(spec.name) is None:
                out[spec.name], root[spec.name] = "not built", blocked or spec.name
            elif not self.is_current(spec):
                out[spec.name], root[spec.name] = "stale", blocked or spec.name
            elif blocked:
                out[spec.name], root[spec.name] = f"stale (waits on {blocked})", blocked
            else:
                out[spec.name] = "current"
        return out

    def run(self, until: str | None = None, only: Iterable[str] | None = None,
            force: Iterable[str] = ()) -> RunReport:
        force = set(force)
        names = [s.name for s in self.stages]
        for name in force | set(only or ()):
            if name not in names:
                raise StageError(f"unknown stage '{name}'; stages: {', '.join(names)}")
        selected = list(self.stages)
        names = [s.name for s in self.stages]
        if until is not None:
            if until not in names:
                raise StageError(f"unknown stage '{until}'; stages: {', '.join(names)}")
            stop = names.index(until)
            selected = selected[: stop + 1]
        if only is not None:
            only = set(only)
            selected = [s for s in selected if s.name in only]
        check_input_paths(self.config, selected)
        check_scopes(self.config.llm.max_cost_usd_per_stage, names)
        self.store.root.mkdir(parents=True, exist_ok=True)
        self.store.clean_staging()
        llm_session.reset_endpoint_health()  # it may have recovered since the last run
        for k, spec in enumerate(selected):
            try:
                self.report.stages.append(self.run_stage(spec, force=spec.name in force))
                if self._stop_after(spec, selected[k + 1:]):
                    break
            except BaseException as exc:  # the report names the failing stage (and what did not run), then re-raises
                stopped = self._stopped_report(spec, exc)
                self.report.stages.append(stopped)
                self.report.stages.extend(StageReport(stage=s.name, status="not-run",
                                                      note=f"{spec.name} {stopped.status}") for s in selected[k + 1:])
                raise
        return self.report

    def _stop_after(self, spec: StageSpec, rest: list[StageSpec]) -> bool:
        """After a stage whose endpoint was given up on as down, or in which the budget
        (``llm.max_cost_usd``) refused calls, the later stages do not run (they would only fail fast too);
        the run ends incomplete, naming the endpoint or the cap and the spend."""
        down = self._endpoint_down() if self.report.stages[-1].failed else ""
        budget = llm_session.budget_stopped()
        if not down and not budget:
            return False
        self.report.stages[-1].stopped = "; ".join(filter(None, [down, budget]))
        why = "endpoint down" if down else "LLM budget reached"
        self.report.stages.extend(StageReport(stage=s.name, status="not-run", note=f"{spec.name}: {why}")
                                  for s in rest)
        return True

    def run_stage(self, spec: StageSpec, force: bool = False) -> StageReport:
        for name in spec.inputs:
            self.store.require(name)
        fingerprint, hashed_config, inputs, files = self.fingerprint(spec)
        report = StageReport(stage=spec.name)
        existing = self.store.manifest(spec.name)
        retry = self._failed_to_retry(spec, existing, fingerprint, force)
        if not force and existing is not None and existing.fingerprint == fingerprint and not retry:
            report.status = "cached"
            report.count_in = existing.counts.get("in", 0)
            report.count_out = existing.counts.get("out", 0)
            report.errors = existing.counts.get("errors", 0)
            report.skipped = existing.counts.get("skipped", {})
            report.kept_with_note = existing.counts.get("kept_with_note", {})
            report.note = "; ".join(["unchanged since last run", *existing.extra.get("notes", [])])
            return report
        change = existing.version if existing is not None else spec.version
        report.note = spec.change_note(change) or (f"retrying {sum(retry.values())} failed items" if retry else "")
        if report.note and self.console is not None:
            self.console.print(f"[yellow]{spec.name}[/] re-runs once: {report.note}", highlight=False)
        if force:
            # a forced stage starts from scratch: drop shards of an earlier unfinished run
            import shutil

            shutil.rmtree(self.store.partial_dir(spec.name), ignore_errors=True)
        staging = self.store.new_staging_dir(spec.name)
        ctx = self._running = StageContext(spec, self.config, self.store, fingerprint, staging, self.console,
                                           hashed_config, llm=partial(llm_session.get_runner, self.config))
        started = time.time()
        usage_before = llm_session.usage_snapshot(spec.name)
        fn = spec.load()
        fn(ctx)
        writer = ctx.output()
        # shards -> sorted records.parquet / errors.parquet in the staging folder, without loading them
        n_out, n_errors = writer.finish(staging)
        failed = self.store.failed_items(spec.name, staging)
        usage = llm_session.usage_since(spec.name, usage_before)
        manifest = Manifest(
            stage=spec.name, fingerprint=fingerprint, config_hash=hashed_config, inputs=inputs,
            counts={"in": ctx.count_in, "out": n_out, "errors": n_errors,
                    "skipped": dict(ctx.skipped), "resumed": writer.resumed,
                    **({"failed": sum(failed.values()), "failed_reasons": failed} if failed else {}),
                    **({"kept_with_note": dict(ctx.noted)} if ctx.noted else {})},
            versions=library_versions(), started_at=started, finished_at=time.time(), llm_usage=usage,
            extra=ctx.extra, files=files, version=spec.version,
        )
        self.store.commit_staged(spec.name, staging, manifest)
        report.status = "ran"
        report.count_in, report.count_out, report.errors = ctx.count_in, n_out, n_errors
        report.skipped, report.seconds, report.resumed = dict(ctx.skipped), manifest.seconds, writer.resumed
        report.kept_with_note = dict(ctx.noted)
        report.llm_usage = usage
        report.failed = failed
        notes = [f"resumed {writer.resumed} finished items"] if writer.resumed else []
        # the version change, then a stage's own lines (ctx.extra["notes"])
        report.note = "; ".join(filter(None, [report.note, *notes, *ctx.extra.get("notes", [])]))
        return report

    def _stopped_report(self, spec: StageSpec, exc: BaseException) -> StageReport:
        """The row of a stage that did not finish: ``interrupted`` (Ctrl-C / SIGTERM: finished items are
        kept, the note says how far it got) or ``failed`` (the error's first line)."""
        ctx = self._running if self._running is not None and self._running.spec.name == spec.name else None
        if not is_interrupt(exc):
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return StageReport(stage=spec.name, status="failed", note=message[:500])
        if ctx is None:
            note = f"stopped by {signal_name(exc)} before its first item; {RESUME_HINT}"
            exc.add_note(f"{spec.name}: {note}")
            return StageReport(stage=spec.name, status="interrupted", note=note)
        try:
            kept = ctx.keep_finished()
        except Exception:  # noqa: BLE001 - the interrupt stays the error shown; unflushed items are redone
            kept = None
        note = ctx.position.summary(kept)
        exc.add_note(f"{spec.name}: {note}")
        return StageReport(stage=spec.name, status="interrupted", count_in=ctx.count_in, note=note,
                           skipped=dict(ctx.skipped), kept_with_note=dict(ctx.noted))


def run_pipeline(config: Config, until: str | None = None, only: Iterable[str] | None = None,
                 force: Iterable[str] = (), console: Any = None,
                 stages: tuple[StageSpec, ...] | None = None) -> RunReport:
    """Run the pipeline for the CLI: the run report is printed at the end (also on failure or interrupt) and
    saved as ``<build>/run_report.json``. The build's lock is held throughout (``babelrag.build_lock``: one
    writer per build); a file-system failure becomes one line naming the path (``babelrag.fs_errors``). A run
    that ends with failed items raises ``IncompleteRunError`` (exit code 3) after the report, saying how many
    failed in which stage; a plain re-run retries exactly them."""
    pipe = Pipeline(config, console=console, stages=stages)
    with build_lock(config.build_dir):
        try:
            report = pipe.run(until=until, only=only, force=force)
        except BaseException as exc:
            _save_report(pipe, console, failing=True)  # never hides the error that stopped the run
            _say_interrupted(exc, console)
            fs_error = filesystem_error(exc, pipe.store.root)
            if fs_error is not None:
                raise fs_error from exc
            raise
        _save_report(pipe, console, failing=False)
    incomplete = report.incomplete()
    if incomplete is not None:
        raise incomplete
    return report


def _say_interrupted(exc: BaseException, console: Any) -> None:
    """Under the table of an interrupted run: the signal, how far the stage got, that a re-run resumes."""
    if is_interrupt(exc) and console is not None:
        console.print(f"[yellow]{interrupt_line(exc)}[/]", highlight=False)
        mark_reported(exc)


def _save_report(pipe: Pipeline, console: Any, failing: bool) -> None:
    """Print the stage table and write ``run_report.json``. When the run is already failing (a full disk,
    an interrupt), a report that cannot be written is only mentioned: the first error is the one shown."""
    import json

    if not pipe.report.stages:
        return
    try:
        pipe.report.budget = llm_session.budget_report()  # also puts this run's spend on record
    except Exception as exc:  # noqa: BLE001 - a ledger that cannot be written never hides the run's own error
        if not failing:
            raise
        if console is not None:
            console.print(f"[yellow]LLM spend not recorded[/]: {exc}", highlight=False)
    try:
        pipe.report.funnel = build_funnel(pipe.store)
    except Exception as exc:  # noqa: BLE001 - the funnel only reports; it never hides the run's own error
        if not failing:
            raise
        if console is not None:
            console.print(f"[yellow]funnel not built[/]: {exc}", highlight=False)
    if console is not None:
        for table in pipe.report.render_config():
            console.print(table)
        console.print(pipe.report.render())
    try:
        atomic_write_text(pipe.store.run_report_path, json.dumps(pipe.report.to_dict(), indent=2, sort_keys=True))
    except OSError as exc:
        if not failing:
            raise filesystem_error(exc, pipe.store.run_report_path) or exc from None
        if console is not None:
            console.print(f"[yellow]run report not written[/] ({pipe.store.run_report_path}): {exc}",
                          highlight=False)
