"""``babelrag release``: build, validate, push, export. Heavy imports happen inside the commands."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from babelrag.build_lock import build_lock
from babelrag.errors import BabelragError

app = typer.Typer(help="Validate, split and write releases (Hub layout), push them, export RAGE/BEIR/XRAG, "
                       "convert GaRAGe/XRAG/BEIR files into release folders.", no_args_is_help=True)

ConfigOpt = typer.Option(Path("babelrag.yaml"), "--config", "-c", help="YAML config of the build.")


def _load(config: Path):  # noqa: ANN202
    from babelrag.config import load_config

    return load_config(config)


@app.command()
def build(config: Path = ConfigOpt,
          out: Optional[Path] = typer.Option(None, "--out", help="Release root (default: release.out_dir).")) -> None:
    """Validate the finished build and write <out>/<version>/ (card, parquet per config/split, save_to_disk)."""
    from babelrag.release.build import build_release

    from babelrag.console import make_console

    cfg = _load(config)
    with build_lock(cfg.build_dir, shared=True):  # reads every stage: no run may swap one meanwhile
        result = build_release(cfg, out, console=make_console(stderr=True))
    total = sum(sum(s.values()) for s in result.configs.values())
    typer.echo(f"release {result.version}: {total} instances in {len(result.configs)} configs -> {result.folder}")
    for line in result.change_lines:
        typer.echo(f"  {line}")
    for part in result.slices:  # release.time_slices
        n = sum(sum(s.values()) for s in part.configs.values())
        typer.echo(f"time slice: {n} instances in {len(part.configs)} configs -> {part.folder}")
    if result.report.unverified_released:
        typer.echo(f"  note: {result.report.unverified_released} instances released unverified (verified=false)")


@app.command()
def validate(config: Optional[Path] = typer.Option(None, "--config", "-c", help="Validate this build."),
             folder: Optional[Path] = typer.Option(None, "--folder", help="Validate an existing release folder."),
             limit: int = typer.Option(200, help="How many violations to print.")) -> None:
    """Run every release rule and list the violations (instance, rule, detail); exit 1 if any. A folder is
    first checked against its release.json: every listed data file present with its row count and content
    hash, no other data file, none damaged."""
    from babelrag.release.validate import Rules, validate as run_rules

    if (config is None) == (folder is None):
        raise BabelragError("give exactly one of --config (a build) or --folder (a release folder)")
    problems = ""
    if config is not None:
        from babelrag.release.build import plan

        from babelrag.console import make_console

        _, _, report, _ = plan(_load(config), make_console(stderr=True))
    else:
        from babelrag.release.integrity import check_folder
        from babelrag.release.layout import read_info

        contents = check_folder(folder)
        info = read_info(folder) or {}
        rows = contents.rows
        langs = sorted({r.get("language", "") for r in rows} | {"en"})
        rules = Rules(languages=langs, allow_unverified=info.get("unverified_released", 0) > 0,
                      external=bool(info.get("source_format")),
                      allow_undated=info.get("undated_policy", "drop") != "drop")
        _, report = run_rules(rows, rules, row_splits=contents.splits)
        problems = contents.summary() if contents.problems else ""
    if report.ok and not problems:
        files = "" if config is not None else f"{contents.files} data files match release.json; "
        typer.echo(f"ok: {files}{report.checked} instances pass every release rule "
                   f"({report.unchecked_language} texts too short for a language check)")
        return
    if problems:
        typer.echo(problems)
    if not report.ok:
        typer.echo(report.summary(limit=limit))
    raise typer.Exit(1)


@app.command()
def push(folder: Path = typer.Argument(..., help="Release folder written by `release build`."),
         repo: Optional[str] = typer.Option(None, "--repo", help="Dataset repo id, e.g. org/name "
                                                                 "(default: release.hub_repo of --config)."),
         config: Optional[Path] = typer.Option(None, "--config", "-c", help="Config to read release.hub_repo from."),
         private: bool = typer.Option(False, "--private"),
         endpoint: Optional[str] = typer.Option(None, help="Hub endpoint (default: $HF_ENDPOINT)."),
         dry_run: bool = typer.Option(False, "--dry-run", help="List the files, their sizes and the card; send nothing."),
         ) -> None:
    """Upload the release folder with huggingface_hub (token from $HF_TOKEN; save_to_disk copy not uploaded)."""
    from babelrag.release.hub import dry_run as plan_push, push_release

    if repo is None and config is not None:
        repo = _load(config).release.hub_repo
    if dry_run:
        typer.echo(plan_push(folder, repo or ""))
        return
    if not repo:
        raise BabelragError("no dataset repo: pass --repo org/name or set release.hub_repo in the config")
    url = push_release(folder, repo, endpoint=endpoint, private=private)
    typer.echo(f"pushed {folder} -> {url}")


@app.command()
def export(folder: Path = typer.Argument(..., help="Release folder written by `release build` or `release convert`."),
           out: Path = typer.Option(..., "--out", help="Where to write the export."),
           fmt: str = typer.Option("beir", "--format", help="beir (RAGE/BEIR folders), xrag (XRAG JSONL), lm-eval "
                                                            "(lm-evaluation-harness task folder) or garage (folders "
                                                            "converted from GaRAGe)."),
           seed: int = typer.Option(0, "--seed", help="lm-eval: the document-shuffle seed (use the project.seed "
                                                    "`evaluate run` uses, to show documents in the same order)."),
           ) -> None:
    """Export a release as RAGE/BEIR folders (corpus, queries, qrels + distractor mappings) or XRAG JSONL; a
    folder converted from GaRAGe/XRAG/BEIR is written back in its own format, every record and field."""
    from babelrag.release.export import export_release

    result = export_release(folder, out, fmt, seed=seed)
    typer.echo(f"wrote {len(result.written)} {fmt} export(s) under {out}")
    for note in result.notes():
        typer.echo(f"  note: {note}")
    if result.skipped:
        typer.echo(f"  {len(result.skipped)} config(s) skipped: the {fmt} format cannot hold them")


@app.command()
def convert(source: Path = typer.Argument(..., help="GaRAGe or XRAG .jsonl file, or a BEIR folder."),
            fmt: str = typer.Option(..., "--format", help="garage, xrag or beir."),
            out: Path = typer.Option(..., "--out", help="Release folder to write (replaced if it exists)."),
            split: Optional[str] = typer.Option(None, help="Split name (default: from the file name, else test; "
                                                           "BEIR: every qrels/<split>.tsv)."),
            language: Optional[str] = typer.Option(None, help="XRAG question language (default: detected)."),
            setting: Optional[str] = typer.Option(None, help="XRAG setting (default: mono, or multi when articles "
                                                             "are in the question's language)."),
            ) -> None:
    """Load an external benchmark file strictly and write a release folder `evaluate run` accepts."""
    from babelrag.release.external import convert_external

    res = convert_external(source, fmt, out, split=split, language=language, setting=setting)
    typer.echo(f"{res.records} {fmt} record(s) -> {res.instances} instance(s) in {len(res.configs)} config(s) "
               f"-> {res.folder}")
    for reason, n in sorted(res.skipped.items()):
        typer.echo(f"  not an instance: {n} ({reason}); kept in source/ and exported back")
    for what, n in sorted(res.warnings.items()):
        typer.echo(f"  note: {n} {what}")
