"""The ``babelrag`` command line.

Start-up stays fast: this module imports only typer/rich and the light core; every command imports
what it needs when it runs. User errors (BabelragError) print one line and exit 2.
"""
from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Optional

import typer
import typer.main
from typer.core import TyperGroup

from babelrag.build_lock import build_lock
from babelrag.errors import BabelragError
from babelrag.fs_errors import filesystem_error
from babelrag.interrupts import Terminated, exit_code, interrupt_line, interrupt_reported, sigterm_raises


class StageCommands(TyperGroup):
    """``babelrag construct``: one sub-command per declared stage (``babelrag.stage``), built when the group
    is used, so ``babelrag --help`` reads no declaration."""

    def list_commands(self, ctx: Any) -> list[str]:
        from babelrag.stage import stage_names

        return [*stage_names(), *sorted(super().list_commands(ctx))]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        from babelrag.stage import stages

        spec = next((s for s in stages() if s.name == cmd_name), None)
        return _stage_command(spec.name, spec.description) if spec else super().get_command(ctx, cmd_name)


def _stage_command(stage: str, description: str) -> Any:
    def command(config: Path = typer.Option(Path("babelrag.yaml"), "--config", "-c",
                                            help="YAML config (see `babelrag init`)."),
                force: bool = typer.Option(False, "--force", help="Redo the stage even if unchanged.")) -> None:
        from babelrag.pipeline import run_pipeline

        run_pipeline(_load(config), only=[stage], force=[stage] if force else [], console=_console())

    command.__doc__ = f"{description[:1].upper()}{description[1:]}."
    single = typer.Typer(add_completion=False)
    single.command(name=stage)(command)
    cmd = typer.main.get_command(single)  # an app with one command is that command
    cmd.name = stage
    return cmd


app = typer.Typer(help="Build, annotate, release and evaluate multilingual / cross-lingual RAG benchmarks.",
                  no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)
construct_app = typer.Typer(cls=StageCommands, help="Build stages (one command per declared stage), contrastive "
                            "pairs, and the build's status.", no_args_is_help=True)
app.add_typer(construct_app, name="construct")


def _mount_optional(module: str, name: str, help_text: str) -> None:
    """Mount a stage's own typer app; a missing module leaves a command that says so."""
    import importlib

    try:
        sub = importlib.import_module(module).app
    except (ImportError, AttributeError) as exc:
        reason = str(exc)  # `exc` is unbound once the except block ends; the callback runs later
        sub = typer.Typer(help=f"{help_text} (unavailable: {reason})")

        @sub.callback(invoke_without_command=True)
        def _unavailable() -> None:
            raise BabelragError(f"`babelrag {name}` is not available in this installation: {reason}")

    app.add_typer(sub, name=name, help=help_text)


ConfigOpt = typer.Option(Path("babelrag.yaml"), "--config", "-c", help="YAML config (see `babelrag init`).")


def _console():  # noqa: ANN202 - rich is imported lazily
    from babelrag.console import make_console

    return make_console(stderr=True)


def _load(config: Path):  # noqa: ANN202
    from babelrag.config import load_config

    return load_config(config)


@app.command()
def init(path: Path = typer.Argument(Path("babelrag.yaml"), help="Where to write the example config."),
         force: bool = typer.Option(False, "--force", help="Overwrite an existing file.")) -> None:
    """Write a commented example YAML config."""
    from babelrag.templates import example_config_text

    if path.exists() and not force:
        raise BabelragError(f"{path} exists; pass --force to overwrite it")
    path.write_text(example_config_text(), encoding="utf-8")
    typer.echo(f"wrote {path} — edit corpus.inputs and llm.endpoints, then run `babelrag run -c {path}`")


@app.command()
def run(config: Path = ConfigOpt,
        until: Optional[str] = typer.Option(None, help="Stop after this stage."),
        force: list[str] = typer.Option([], "--force", help="Redo this stage even if unchanged (repeatable)."),
        embedded: bool = typer.Option(False, "--embedded", help="Start the packaged local model for this run "
                                      "(as llm.embedded: true); for trying the pipeline, not for real builds."),
        profile: Optional[str] = typer.Option(None, help="Budget profile: 'small' sets the caps `babelrag demo` "
                                              "runs with (4 pairs to questions, short article excerpts)."),
        max_pairs: Optional[int] = typer.Option(None, help="How many related pairs become questions (twice as many "
                                                "are relevance-checked); wins over the profile's."),
        retry_unreadable: bool = typer.Option(False, "--retry-unreadable", help="Ask again where the LLM cache holds "
                                              "a reply that stayed unusable after the repair re-ask (as "
                                              "llm.retry_unreadable: true); with --force STAGE for a stage that is "
                                              "done, as such replies are its final errors."),
        ) -> None:
    """Run the build pipeline (skips stages whose inputs and config are unchanged)."""
    from babelrag.build_lock import build_lock
    from babelrag.llm.local import with_embedded_model
    from babelrag.pipeline import run_pipeline
    from babelrag.run_profiles import load_run_config, run_overrides

    overrides = run_overrides(profile, max_pairs)
    if embedded:
        overrides = {**overrides, "llm": {**overrides.get("llm", {}), "embedded": True}}
    if retry_unreadable:
        overrides = {**overrides, "llm": {**overrides.get("llm", {}), "retry_unreadable": True}}
    loaded = load_run_config(config, overrides)  # with the embedded model's defaults under the YAML when it runs
    console = _console()
    # the lock first: a second run on a build in use stops before it starts a model (re-entrant for the run)
    with build_lock(loaded.build_dir), \
            with_embedded_model(loaded, console) if loaded.llm.embedded else nullcontext(loaded) as ready:
        run_pipeline(ready, until=until, force=force, console=console)


@app.command()
def plan(config: Path = ConfigOpt,
         as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON (stdout) instead of a table."),
         assume: list[str] = typer.Option([], "--assume", help="KEY=VALUE: relevant_share, pass_share, answer_share "
                                          "(shares in [0, 1], default 1: a ceiling) or latency_s (repeatable)."),
         profile: Optional[str] = typer.Option(None, help="Plan with `babelrag run --profile`'s caps."),
         max_pairs: Optional[int] = typer.Option(None, help="Plan with `babelrag run --max-pairs`'s pair budget."),
         ) -> None:
    """Estimate LLM calls, tokens, cost and wall time per stage before any LLM call (docs/plan.md)."""
    import json

    from babelrag.config import load_config
    from babelrag.construct.plan import Assumptions, make_plan
    from babelrag.run_profiles import run_overrides

    assumptions = Assumptions.parse(assume)  # a bad --assume stops before anything is built
    console = _console()
    result = make_plan(load_config(config, run_overrides(profile, max_pairs)), assumptions, console=console)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, allow_nan=False))
    else:
        console.print(result.render())


@construct_app.command("contrastive")
def construct_contrastive(config: Path = ConfigOpt,
                          out: Path = typer.Option(..., "--out", "-o", help="JSONL file to write."),
                          kinds: str = typer.Option("faithfulness,answer_relevance,context_relevance",
                                                    help="Comma-separated kinds of pairs."),
                          limit: Optional[int] = typer.Option(None, help="At most this many (chunk, question) items."),
                          max_chars: int = typer.Option(1500, help="Chunk length in characters."),
                          ) -> None:
    """Contrastive pairs for the Ragas metrics and forced-choice annotation, from a finished build."""
    import json

    from babelrag.construct.contrastive import write_contrastive_pairs

    cfg = _load(config)
    with build_lock(cfg.build_dir):  # its LLM calls fill the build's response cache
        summary = write_contrastive_pairs(cfg, out, kinds=[k for k in kinds.split(",") if k], limit=limit,
                                          max_chars=max_chars)
    typer.echo(json.dumps(summary))


@construct_app.command("status")
def construct_status(config: Path = ConfigOpt) -> None:
    """Show which stages are finished and current, and what the build does per language (capability table)."""
    from rich.table import Table

    from babelrag.pipeline import Pipeline, summary_tables
    from babelrag.stage import stages

    loaded = _load(config)
    for summary in summary_tables(loaded.load_summaries):
        _console().print(summary)
    pipe = Pipeline(loaded)
    table = Table(title=f"build: {pipe.store.root}")
    for col in ("stage", "state", "out", "errors", "finished"):
        table.add_column(col)
    import datetime as _dt

    states = pipe.states()
    for spec in stages():
        m = pipe.store.manifest(spec.name)
        if m is None:
            table.add_row(spec.name, "not built", "-", "-", "-")
            continue
        state = states[spec.name]
        failed = sum(pipe.store.failed_items(spec.name).values())
        if failed:  # a plain run retries them
            state = f"{state}, {failed} failed"
        when = _dt.datetime.fromtimestamp(m.finished_at).isoformat(timespec="seconds")
        table.add_row(spec.name, state, str(m.counts.get("out", 0)), str(m.counts.get("errors", 0)), when)
    console = _console()
    console.print(table)
    from babelrag.funnel import build_funnel

    console.print(build_funnel(pipe.store).render())


@app.command()
def demo(build_dir: Path = typer.Option(Path("demo-build"), help="Where the demo writes its build."),
         endpoint: Optional[str] = typer.Option(None, help="OpenAI-compatible base URL to use instead of the "
                                                           "embedded local model."),
         model: Optional[str] = typer.Option(None, help="Model name at --endpoint."),
         max_pairs: int = typer.Option(4, help="How many related pairs to turn into questions (twice as many are relevance-checked)."),
         corpus: Optional[str] = typer.Option(None, help="wikinews (the default): real Wikinews stories + TICO-19 "
                                                          "translations (babelrag/data/wikinews); sample: the invented "
                                                          "test corpus (the default with --monolingual)."),
         monolingual: Optional[str] = typer.Option(None, help="Run the X–X setting instead (MIRAGE-style): questions "
                                                              "written in X over X articles, released as the config "
                                                              "monolingual-<x>. The sample corpus offers de, es, zh, ar."),
         ) -> None:
    """Run the whole pipeline on a shipped corpus (real Wikinews news by default) and end with a report."""
    from babelrag.demo import run_demo

    run_demo(build_dir=build_dir, endpoint=endpoint, model=model, max_pairs=max_pairs, console=_console(),
             corpus=corpus, monolingual=monolingual)


_mount_optional("babelrag.llm.cli", "llm", "Embedded local model server and endpoint checks.")
_mount_optional("babelrag.annotate.cli", "annotate", "Argilla server, annotation projects, responses, agreement.")
_mount_optional("babelrag.release.cli", "release", "Validate, split and write releases (Hub layout), push them.")
_mount_optional("babelrag.evaluators.cli", "evaluate", "Score models on a release with the bundled metrics.")


def main() -> None:
    """Exit codes: 0 done; 1 a check found problems (``release validate``); 2 bad input, config or file
    system (one line); 130 Ctrl-C; 143 SIGTERM (docs/troubleshooting.md)."""
    import os

    # gRPC's C core (pymilvus -> Milvus Lite) logs keep-alive chatter such as "GOAWAY ... too_many_pings"
    # straight to stderr mid-progress-bar; real failures still raise as Python errors. Set it to see them.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    try:
        with sigterm_raises():  # SIGTERM unwinds like Ctrl-C (typer exits 130 on that), reports included
            app()
    except BabelragError as exc:
        _fail(str(exc), exc.exit_code)
    except (KeyboardInterrupt, Terminated) as exc:
        if not interrupt_reported(exc):
            typer.secho(interrupt_line(exc), fg="yellow", err=True)
        sys.exit(exit_code(exc))
    except OSError as exc:  # a full disk or a read-only folder outside the pipeline (release build --out, ...)
        error = filesystem_error(exc)
        if error is None:
            raise
        _fail(str(error), error.exit_code)


def _fail(message: str, code: int) -> None:
    typer.secho(f"error: {message}", fg="red", err=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
