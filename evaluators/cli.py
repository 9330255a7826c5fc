"""``babelrag evaluate``: score models on a release. Imports only typer here; work happens lazily."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(help="Score models on a release with the bundled metrics.", no_args_is_help=True)


@app.command("run")
def run(
    release: str = typer.Argument(..., help="Release folder (data/<config>/<split>.parquet), instances .jsonl, "
                                            "or a Hub dataset id org/name or org/name@revision (HF_ENDPOINT, HF_TOKEN)."),
    config: Path = typer.Option(Path("babelrag.yaml"), "--config", "-c", help="YAML config with llm endpoints."),
    out: Optional[Path] = typer.Option(None, help="Output folder (default: evaluate.out_dir)."),
    model: list[str] = typer.Option([], help="LLM endpoint name to evaluate (repeatable; default evaluate.models)."),
    judge: list[str] = typer.Option([], help="Judge endpoint name (repeatable; default evaluate.judges)."),
    split: Optional[str] = typer.Option(None, "--split", help="Release split to score (default: test, else the "
                                                               "release's only split); recorded in results.json."),
    answers: Optional[Path] = typer.Option(None, "--answers", help="Score answers made elsewhere (JSONL: instance_id, "
                                                                   "model, answer[, doc_order]) instead of generating."),
    max_instances: Optional[int] = typer.Option(None, help="Evaluate a seeded sample of this many instances."),
    human: Optional[Path] = typer.Option(None, "--human", help="Human verdicts on the answers (`babelrag annotate pull "
                                         "answer_judgement` writes <build>/annotate/answer_judgement.decisions.jsonl): "
                                         "kappa of each judge against them in results.json and the report "
                                         "(default: evaluate.human_labels)."),
    rounds: int = typer.Option(1000, help="Bootstrap rounds for confidence intervals."),
    reranker: Optional[Path] = typer.Option(None, help="Local cross-encoder folder for MIRAGE's reranker_score "
                                                       "feature (needs 'mirage' in evaluate.metrics)."),
    reranker_backend: str = typer.Option("sentence-transformers", help="sentence-transformers or flagembedding."),
    nli: Optional[Path] = typer.Option(None, help="Local NLI cross-encoder folder for MIRAGE's support_nli feature."),
    cross_encoder_device: str = typer.Option("auto", help="Reranker/NLI device: auto (a GPU when torch sees one), "
                                                          "cpu, cuda, cuda:N, mps."),
    cross_encoder_precision: str = typer.Option("auto", help="Reranker/NLI precision: auto (fp16 on a GPU, fp32 on "
                                                             "CPU), fp16, bf16, fp32."),
    cross_encoder_batch_size: str = typer.Option("16", help="Reranker/NLI pairs per batch, or auto (halves on "
                                                            "out-of-memory)."),
    after: Optional[str] = typer.Option(None, "--after", help="Score only instances whose supporting articles were "
                                                              "all published after this date (YYYY-MM-DD, exclusive: "
                                                              "a model's training cutoff); undated ones are left out."),
    before: Optional[str] = typer.Option(None, "--before", help="...and before this date (YYYY-MM-DD, exclusive)."),
    judge_repeats: int = typer.Option(1, "--judge-repeats", help="Ask each judge N more times per answer (new "
                                                                 "samples, not cache hits) and report its "
                                                                 "self-consistency; 1 = no repeats."),
    repeat_temperature: float = typer.Option(0.7, "--repeat-temperature", help="Temperature of the repeats for a "
                                                                              "judge configured at temperature 0."),
    retry_unreadable: bool = typer.Option(False, "--retry-unreadable", help="Ask again where a judge (or model) "
                                          "answered without a usable reply, even after the repair re-ask; a plain "
                                          "re-run answers those from the LLM cache (as llm.retry_unreadable: true)."),
) -> None:
    """Generate answers, judge them and write leaderboard, results.json, plots and report.html."""
    from babelrag.console import make_console

    from babelrag.config import load_config
    from babelrag.evaluators.crossencoder import CrossEncoderSpec
    from babelrag.evaluators.execution import evaluate_release
    from babelrag.evaluators.settings import EvalSettings
    from babelrag.freshness import DateWindow

    console = make_console(stderr=True)
    window = DateWindow.parse(after, before)  # a bad date fails before the config is read
    cfg = load_config(config, {"llm": {"retry_unreadable": True}} if retry_unreadable else None)
    # resolving a device imports torch: only when a cross-encoder runs (an answers-file run loads no model)
    placement = CrossEncoderSpec.placement_options(cross_encoder_device, cross_encoder_precision,
                                                   cross_encoder_batch_size) if (reranker or nli) else {}
    settings = EvalSettings.from_config(
        cfg, rounds=rounds, judge_repeats=judge_repeats, repeat_temperature=repeat_temperature,
        reranker=CrossEncoderSpec(str(reranker), reranker_backend, **placement) if reranker else None,  # type: ignore[arg-type]
        nli=CrossEncoderSpec(str(nli), **placement) if nli else None)
    paths = evaluate_release(cfg, release, out_dir=out, models=model, judges=judge, max_instances=max_instances,
                             console=console, settings=settings, split=split, answers_file=answers,
                             window=window, human_file=human)
    console.print(f"[green]report:[/] {paths['html']}")


@app.command("calibrate")
def calibrate(
    evaluation: Path = typer.Argument(..., help="Output folder of `babelrag evaluate run` (its results.json)."),
    human: Path = typer.Option(..., "--human", help="Human verdicts, JSONL: instance_id, model, human (true = the "
                                                    "answer is correct), on a random sample of the answers; or "
                                                    "the decisions file `annotate pull answer_judgement` writes."),
    out: Optional[Path] = typer.Option(None, help="Where to write the report (default: EVALUATION/calibration.json)."),
) -> None:
    """Judge-human agreement (Cohen's kappa, Krippendorff's alpha) per judge and for the panel, and each model's
    accuracy corrected by the human verdicts (prediction-powered inference, 95% interval)."""
    from babelrag.evaluators.calibration import calibrate_folder, read_human_verdicts, summary_lines

    report, path = calibrate_folder(evaluation, read_human_verdicts(human), out)
    for line in summary_lines(report):
        typer.echo(line)
    typer.echo(f"calibration: {path}")


@app.command("metrics")
def metrics() -> None:
    """List the metrics by the names `evaluate.metrics` takes, with what each measures and its columns."""
    from babelrag.evaluators.registry import ALWAYS, get, names

    for name in names():
        metric = get(name)
        columns = ", ".join(c.name for c in metric.columns)
        always = " (always computed)" if name in ALWAYS else ""
        typer.echo(f"{name:<17} {metric.description}{always}; leaderboard: {columns}")
