"""`babelrag annotate ...`: serve a local Argilla, push projects, pull responses, status, agreement.

Imports stay inside commands so `babelrag --help` does not load argilla, httpx or pydantic models. `push` and
`pull` write into the build (audit files, suggestions, the highlight vector cache, pulled responses): they
hold the build's lock (``babelrag.build_lock``) while they run, so a second writer is refused with exit 2.
"""
from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Optional

import typer

from babelrag.build_lock import build_lock

app = typer.Typer(help="Human annotation in Argilla: server, projects, responses, agreement.", no_args_is_help=True)

ConfigOpt = typer.Option(None, "--config", "-c", help="YAML config (annotate: section); default ./babelrag.yaml if present.")
OutOpt = typer.Option(None, "--out", help="Where pulled responses go; default <build_dir>/annotate.")


def _load(config: Optional[Path]):
    """(AnnotateSettings, default out dir) from the config, or defaults when no config exists."""
    from babelrag.store import BuildStore

    from .settings import AnnotateSettings

    path = config or Path("babelrag.yaml")
    if config is None and not path.exists():
        return AnnotateSettings(), BuildStore("build").annotate_dir
    from babelrag.config import load_config

    cfg = load_config(path)
    server = cfg.annotate.server
    paths = {k: cfg.resolve(str(getattr(server, k))) for k in ("home", "venv") if getattr(server, k) is not None}
    settings = cfg.annotate.model_copy(update={"server": server.model_copy(update=paths)})
    return settings, BuildStore(cfg.build_dir).annotate_dir


def _writing(build_dir: Path, written: Path) -> AbstractContextManager:
    """The build's lock while ``written`` lies inside the build (nothing to lock when it lies elsewhere)."""
    if written.resolve().is_relative_to(build_dir.resolve()):
        return build_lock(build_dir)
    return nullcontext()


def _client(settings):
    from .argilla_api import argilla_errors, client, resolve_target

    target = resolve_target(settings)
    with argilla_errors(target.url, "connecting"):
        return client(target), target


def _console():
    from babelrag.console import make_console

    return make_console(stderr=False)


def _projects(project: str) -> list[str]:
    from .registry import get, names

    return names() if project == "all" else [get(project).name]


@app.command()
def serve(
    config: Optional[Path] = ConfigOpt,
    home: Optional[Path] = typer.Option(None, help="Data dir (database, search index, logs)."),
    port: Optional[int] = typer.Option(None, help="HTTP port (0 = any free port)."),
) -> None:
    """Run argilla-server 2.8.0 (own venv, SQLite, Redis, worker, web UI) until Ctrl-C / SIGTERM."""
    from .server.process import OWNER_KEY_ENV, ArgillaServer, serve_forever

    settings, _ = _load(config)
    server_settings = settings.server.model_copy(update={k: v for k, v in {"home": home, "port": port}.items() if v is not None})
    server = ArgillaServer(server_settings).start()
    creds = server.credentials
    source = f"${OWNER_KEY_ENV}" if creds.get("source") == "env" else f"generated, stored in {server.home / 'credentials.json'}"
    con = _console()
    con.print(f"[bold]Argilla[/bold] ready at {server.url}  (started in {server.timings['start_s']:.1f} s)")
    con.print(f"owner: {creds['username']} / {creds['password']}   API key ({source}): {creds['api_key']}")
    con.print(f"annotators: run `babelrag annotate push ...`; their passwords go to {server.home / 'users.json'}")
    con.print("Ctrl-C to stop.")
    serve_forever(server)
    con.print("stopped.")


@app.command()
def push(
    project: str = typer.Argument(..., help="a registered project: qa_verification | translation | grounding | "
                                  "forced_choice | answer_judgement (or a plug-in's)"),
    input: Path = typer.Option(..., "--input", "-i", help="Records (.jsonl/.parquet): QAItem, Instance, contrastive pairs or model answers."),
    language: str = typer.Option("", "--language", "-l", help="Target language (translation; default: the configured languages)."),
    articles: Optional[Path] = typer.Option(
        None, "--articles", help="qa_verification: the source articles (.jsonl/.parquet of Article records); "
        "default: the build's ingest stage."),
    update: bool = typer.Option(False, "--update", help="Replace records already in the dataset whose content "
                                "changed (default: refuse, listing them). Responses to a changed question/answer "
                                "become stale (kept in <build>/annotate/<dataset>.stale-responses.jsonl, not "
                                "counted); a changed hint, suggestion or metadata keeps them."),
    config: Optional[Path] = ConfigOpt,
) -> None:
    """Check the whole input, then create the project's dataset (users, workspaces, guidelines,
    distribution) and add the records; a re-run skips records that already landed. Holds the build's lock
    (it writes audit files and suggestions into <build>/annotate)."""
    settings, default_out = _load(config)
    with _writing(default_out.parent, default_out):
        _push(project, input, language, articles, update, settings, default_out)


def _push(project: str, input: Path, language: str, articles: Optional[Path], update: bool, settings,
          default_out: Path) -> None:
    from babelrag.errors import InputError

    from .argilla_api import argilla_errors
    from .input_checks import check_input, raise_problems
    from .inputs import read_rows
    from .projects import build_records, spec
    from .push import plan_push, run_push
    from .registry import get
    from .suggested import write_suggested

    pt = get(project)
    rows = read_rows(input, surrogates=False)  # check_input names them by record id, with every other problem
    languages = [language] if language else (settings.project(project).languages if pt.per_language else [""])
    if not languages:
        raise InputError(f"{project}: give --language or list annotate.projects.{project}.languages in the config")
    source_articles, highlighter = None, None
    if pt.needs_articles:
        source_articles = _source_articles(rows, articles, default_out.parent)
        highlighter = _highlighter(settings, default_out.parent)
    batches = [(lang, build_records(project, rows, settings, lang, source_articles, highlighter))
               for lang in languages]
    for lang in languages:
        for reason, n in (pt.skipped(rows, lang) if pt.per_language else pt.skipped(rows)).items():
            _console().print(f"{project}{'-' + lang if lang else ''}: skipped {n} input record(s): {reason}")
    # checked once, every language's records, before connecting (plan_push is told so: checked=True)
    raise_problems([p for _, records in batches for p in check_input(records, spec(project))], str(input))
    rg_client, target = _client(settings)
    with argilla_errors(target.url, f"push {project}"):  # every dataset checked before the first write
        plans = [plan_push(rg_client, settings, project, records, lang, update, str(input), checked=True)
                 for lang, records in batches]
    for plan in plans:
        with argilla_errors(target.url, f"push {project}"):
            result = run_push(rg_client, settings, plan, audit_dir=default_out)
        write_suggested(default_out, project, result.dataset, settings.project(project).suggestions, plan.records)
        _console().print(
            f"{result.dataset} ({result.workspace}) at {target.url}: {result.records} records: {result.new} new, "
            f"{result.updated} updated, {result.unchanged} already there; {result.seconds:.1f} s"
        )
        if result.stale_responses:
            _console().print(
                f"{result.dataset}: {result.stale_responses} response(s) to records whose content changed marked "
                f"stale: kept in {result.audit_file}, not counted by merge or agreement; those records are back "
                "in the annotators' queues")


def _highlighter(settings, build_dir: Path):
    """``annotate.highlight`` with the build's vector cache and a progress bar over the sentences encoded."""
    from babelrag.console import make_console, track
    from babelrag.store import BuildStore

    from .sources import make_highlighter

    def progress(batches, total):
        return track(batches, total, "[bold]highlight[/] encoding non-English article sentences (batches)",
                     make_console(stderr=True))

    cache = BuildStore(build_dir).shared_path("vectors") / "cache.sqlite" if settings.highlight.method == "encoder" else None
    return make_highlighter(settings.highlight, cache, progress)


def _source_articles(rows: list, path: Optional[Path], build_dir: Path) -> dict:
    """The articles the Q&A items were written from: ``--articles`` or the build's ingest stage (by id)."""
    from babelrag.errors import InputError
    from babelrag.records import Article, QAItem
    from babelrag.store import BuildStore

    from .inputs import parse, read_rows
    from .projects import missing_articles

    wanted = {a for qa in parse(QAItem, rows, "qa_verification input") for a in qa.article_ids}
    if path is not None:
        found = {r.id: r for r in parse(Article, [r for r in read_rows(path) if r.get("id") in wanted], str(path))}
        where = str(path)
    else:
        store = BuildStore(build_dir)
        if store.manifest("ingest") is None:
            raise InputError(
                "qa_verification shows annotators the two source articles of each question: give them with "
                f"--articles FILE (Article records), or run ingest in the build dir {build_dir} (set by the config)"
            )
        found = store.read_ids("ingest", Article, wanted)
        where = str(store.stage_dir("ingest"))
    lost = missing_articles(rows, found)
    if lost:
        _console().print(f"[yellow]{len(lost)} of {len(wanted)} source articles not found in {where}[/yellow] "
                         f"(their records say so): {', '.join(lost[:5])}{' ...' if len(lost) > 5 else ''}")
    return found


@app.command()
def pull(
    project: str = typer.Argument("all"),
    out: Optional[Path] = OutOpt,
    merge_into: Optional[Path] = typer.Option(None, "--merge-into", help="QAItem records to merge accepted decisions into."),
    language: str = typer.Option("", "--language", "-l", help="Translation language to merge."),
    config: Optional[Path] = ConfigOpt,
) -> None:
    """Write responses (who, when, status, values) to <out>/<project>.responses.jsonl; optionally merge.
    Holds the build's lock when <out> lies in the build (the default)."""
    settings, default_out = _load(config)
    out = out or default_out
    with _writing(default_out.parent, out):
        _pull(project, out, merge_into, language, settings)


def _pull(project: str, out: Path, merge_into: Optional[Path], language: str, settings) -> None:
    from .argilla_api import argilla_errors, project_datasets
    from .pull import pull as do_pull
    from .pull import write_decisions

    rg_client, target = _client(settings)
    con = _console()
    for name in _projects(project):
        with argilla_errors(target.url, f"pull {name}"):
            if project == "all" and not project_datasets(rg_client, settings, name):
                continue  # never pushed: nothing to write
            r = do_pull(rg_client, settings, name, out)
        con.print(f"{name}: {r.records} records, {r.responses} responses {r.by_status} -> {r.path} "
                  f"({'updated' if r.changed else 'unchanged'})")
        if name in ("forced_choice", "answer_judgement"):
            path = write_decisions(name, out, settings.project(name).min_submitted or 1)
            con.print(f"{name}: human decisions -> {path}")
    if merge_into:
        _merge(project, merge_into, language, out, settings, con)


def _merge(project: str, records_path: Path, language: str, out: Path, settings, con) -> None:
    import json

    from babelrag.errors import InputError
    from babelrag.records import QAItem

    from .inputs import parse, read_rows
    from .merge import merge_qa_verification, merge_translation
    from .pull import read_adjudications, read_responses

    if project not in ("qa_verification", "translation"):
        raise InputError("--merge-into works with the qa_verification and translation projects")
    items = parse(QAItem, read_rows(records_path), str(records_path))
    responses = read_responses(out / f"{project}.responses.jsonl")
    need = settings.project(project).min_submitted or 1
    if project == "translation":
        if not language:
            raise InputError("merging translations needs --language")
        records_file = out / f"{project}.records.jsonl"
        records = read_responses(records_file) if records_file.exists() else None
        merged, report = merge_translation(items, responses, language, need, records,
                                           read_adjudications(out, project))
    else:
        merged, report = merge_qa_verification(items, responses, need, read_adjudications(out, project))
    target = out / f"{records_path.stem}.{project}{'-' + language if language else ''}.merged.jsonl"
    from babelrag.atomic import atomic_write_text

    atomic_write_text(target, "".join(json.dumps(m.model_dump(), ensure_ascii=False) + "\n" for m in merged))
    con.print(f"merged into {target}: {report.as_dict()}")


@app.command()
def adjudicate(
    project: str = typer.Argument(..., help="a project with decision rules: qa_verification | translation | "
                                  "forced_choice | answer_judgement"),
    out: Optional[Path] = OutOpt,
    config: Optional[Path] = ConfigOpt,
) -> None:
    """Push the records the project's decision rules leave undecided (with every annotator's labels,
    corrections and post-edits) to the adjudicators (users with role: adjudicator); `pull` brings their
    verdicts back and the merge takes them."""
    from babelrag.errors import InputError

    from .adjudication import adjudication_records, disputed, push_adjudication, rules_of
    from .argilla_api import argilla_errors
    from .pull import read_responses

    settings, default_out = _load(config)
    out = out or default_out
    rules = rules_of(project)
    paths = [out / f"{project}.responses.jsonl", out / f"{project}.records.jsonl"]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise InputError(f"{', '.join(missing)} not found: run `babelrag annotate pull {project}` first")
    records = read_responses(paths[1])
    items = disputed(project, read_responses(paths[0]), records, settings.project(project).min_submitted or 1)
    con = _console()
    con.print(f"{project}: {len(items)} disputed record(s) (rules: {rules.describe()})")
    if not items:
        return
    rg_client, target = _client(settings)
    with argilla_errors(target.url, f"adjudicate {project}"):
        pushed = push_adjudication(rg_client, settings, project, adjudication_records(project, items, records))
    for p in pushed:
        con.print(f"{p.dataset} ({settings.adjudication_workspace}) at {target.url}: {p.records} records, {p.new} new; "
                  f"adjudicators: {', '.join(settings.adjudicators())}")


@app.command()
def status(project: str = typer.Argument("all"), config: Optional[Path] = ConfigOpt) -> None:
    """Progress per project dataset and per annotator (live from the server)."""
    from rich.table import Table

    from .argilla_api import adjudication_datasets, argilla_errors
    from .pull import fetch_rows, project_annotators, status_table

    settings, _ = _load(config)
    rg_client, target = _client(settings)
    table = Table(title=f"Annotation progress at {target.url}")
    for col in ("dataset", "annotator", "records", "completed", "pending", "submitted", "draft", "discarded",
                "progress"):
        table.add_column(col)
    not_pushed = []
    for name in _projects(project):
        with argilla_errors(target.url, f"status of {name}"):
            responses, records = fetch_rows(rg_client, settings, name)
        if not records:
            not_pushed.append(name)
        for row in status_table(responses, records, project_annotators(settings, name)):
            table.add_row(*("" if v is None else str(v) for v in row.values()))
        with argilla_errors(target.url, f"status of {name}'s adjudication"):
            adjudication = adjudication_datasets(rg_client, settings, name)
            if adjudication:  # the adjudicators' queue (`annotate adjudicate`)
                responses, records = fetch_rows(rg_client, settings, name, adjudication)
                records = [{**r, "project": f"{name} adjudication"} for r in records]
                for row in status_table(responses, records, settings.adjudicators()):
                    table.add_row(*("" if v is None else str(v) for v in row.values()))
    _console().print(table)
    if not_pushed:
        _console().print(f"not pushed yet (or empty): {', '.join(not_pushed)}")


@app.command()
def agreement(
    project: str = typer.Argument(...),
    out: Optional[Path] = OutOpt,
    disagreements: Optional[Path] = typer.Option(None, "--disagreements", help="Write disagreements (.jsonl or .csv)."),
    config: Optional[Path] = ConfigOpt,
) -> None:
    """Raw agreement, Cohen's kappa (2 annotators) or Fleiss' kappa (more) per question, from pulled responses."""
    import json

    from rich.table import Table

    from babelrag.errors import InputError

    from .agreement import agreement as compute, disagreements as find_disagreements
    from .agreement import suggestion_agreement, write_disagreements
    from .projects import spec
    from .pull import read_responses
    from .suggested import read_suggested

    settings, default_out = _load(config)
    out = out or default_out
    spec(project)
    path = out / f"{project}.responses.jsonl"
    if not path.exists():
        raise InputError(f"{path} not found: run `babelrag annotate pull {project}` first")
    responses = read_responses(path)
    rows = compute(responses, project)
    table = Table(title=f"Agreement: {project}")
    for col in ("dataset", "question", "items", "annotators", "raw", "cohen", "fleiss", "disagreements"):
        table.add_column(col)
    fmt = lambda v: "" if v is None else f"{v:.3f}"  # noqa: E731
    for r in rows:
        table.add_row(r.dataset, r.question, str(r.items), str(r.annotators), fmt(r.raw_agreement),
                      fmt(r.cohen_kappa), fmt(r.fleiss_kappa), str(r.disagreements))
    _console().print(table)
    rec_path = out / f"{project}.records.jsonl"
    records = read_responses(rec_path) if rec_path.exists() else None
    vs = suggestion_agreement(responses, records or [], project, settings.project(project).min_submitted or 1,
                              read_suggested(default_out, project))  # push writes it there (no --out)
    if vs:
        table = Table(title=f"Pipeline's answers vs human majority, per suggestion mode: {project}")
        for col in ("dataset", "question", "mode", "agent", "items", "raw", "cohen"):
            table.add_column(col)
        for r in vs:
            table.add_row(r.dataset, r.question, r.mode, r.agent, str(r.items), fmt(r.raw_agreement),
                          fmt(r.cohen_kappa))
        _console().print(table)
    report = {"annotators": [r.as_dict() for r in rows], "suggestions": [r.as_dict() for r in vs]}
    (out / f"{project}.agreement.json").write_text(json.dumps(report, indent=2))
    if disagreements:
        written = write_disagreements(find_disagreements(responses, project, records), disagreements)
        _console().print(f"disagreements -> {written}")
