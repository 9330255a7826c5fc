"""Metric execution: every registered metric the run asks for, over every model's answers, then the report.

Every model is scored on every instance of the split (``coverage``): an instance it did not answer — missing
from an ``--answers`` file, or whose generation failed after the LLM layer's retries — counts as wrong in
its scores, the leaderboard shows its coverage (answered / total) and results.json warns. Failed generations
also end the run with exit 3 once the report is written (``failures``): a plain re-run retries them.
So do judge calls that got no answer (``judge_calls``: counted per model as ``judge_calls_failed``, in
results.json's ``judge_failures`` and a warning). Items whose judges all answered without a usable verdict
count as ``no_verdict`` (see ``xrag``): that is final, counted in results.json's ``judge_unusable`` and a
warning, and answered from the LLM cache on a re-run (``--retry-unreadable`` asks again). ``evaluate_release`` is what
``babelrag evaluate run`` and the demo call: release (folder, .jsonl or Hub id) -> answers -> report.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from babelrag.errors import ConfigError, IncompleteRunError, InputError
from babelrag.freshness import DateWindow, Selection, select
from babelrag.evaluators.answers import AnswerRecord, generate_answers, require_endpoints, write_answers
from babelrag.evaluators.answers_file import UNANSWERED, read_answers_file, unanswered_records
from babelrag.evaluators.coverage import coverage, coverage_warnings
from babelrag.evaluators.failures import GenerationFailed, check_failures, incomplete
from babelrag.evaluators.human_labels import read_human_verdicts
from babelrag.evaluators.judge_calls import judge_failures, judge_unusable, unusable_warning
from babelrag.evaluators.judge_calls import warning as judge_warning
from babelrag.evaluators.judge_flags import judging_flags
from babelrag.evaluators.metric import FailedJudgeCall, MetricRun
from babelrag.evaluators import registry
from babelrag.evaluators.registry import resolve
from babelrag.evaluators.release_reader import (choose_split, load_instances, release_revision, sample_instances,
                                               scored_configs)
from babelrag.evaluators.report import ReportInputs, run_info, write_report
from babelrag.evaluators.settings import EvalSettings
from babelrag.evaluators.source import resolve_release
from babelrag.langcheck import DEFAULT_LANGUAGES
from babelrag.llm.client import runner_from_config
from babelrag.records import Instance
from babelrag.release.layout import read_info
from babelrag.release.protocol import OURS, Protocol
from babelrag.stats import Estimate

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.evaluators.metric import Metric
    from babelrag.evaluators.results import ScoreResult
    from babelrag.llm.client import LLMRunner


@dataclass
class Evaluation:
    """Per-model metric results plus the views the report plots."""

    results: dict[str, dict[str, "ScoreResult"]] = field(default_factory=dict)  # model -> metric name -> result
    scores: dict[str, dict[str, Estimate]] = field(default_factory=dict)  # model -> leaderboard column -> estimate
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    # metric name -> what its report view shows (the metric's own keys; ``Metric.view_*`` renders it)
    views: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # battles summary, support models, judge-vs-human agreement
    judge_failed: list[FailedJudgeCall] = field(default_factory=list)  # judge calls that got no answer
    judge_unusable: list[FailedJudgeCall] = field(default_factory=list)  # answered, no usable verdict: final

    def view(self, metric: str) -> dict[str, Any]:
        """The view ``metric`` writes into (made on first use)."""
        return self.views.setdefault(metric, {})


def prepare_metrics(settings: EvalSettings) -> tuple[list["Metric"], dict[str, Any]]:
    """The run's metrics (unknown names fail here) and what they load up front (support models, encoder),
    before any LLM call."""
    metrics = resolve(settings.metrics)
    shared: dict[str, Any] = {}
    for metric in metrics:
        shared.update(metric.prepare(settings))
    return metrics, shared


def evaluate_answers(runner: "LLMRunner", instances: Sequence[Instance], answers: Sequence[AnswerRecord],
                     judges: Sequence[str], settings: EvalSettings = EvalSettings(),
                     prepared: Optional[tuple[list["Metric"], dict[str, Any]]] = None) -> Evaluation:
    """Score every model's answers with the run's metrics; leaderboard columns come from each metric."""
    require_endpoints(runner, judges, "judge")
    metrics, shared = prepared or prepare_metrics(settings)
    by_id = {inst.id: inst for inst in instances}
    missing = sorted({a.instance_id for a in answers} - set(by_id))
    if missing:
        raise InputError(f"answers refer to unknown instances {missing[:5]}; evaluate against the same release")
    # detect among many languages, not only the expected ones: a French answer to a German question
    # must not be forced into "de" because French was not a candidate
    languages = sorted({inst.language for inst in instances} | set(DEFAULT_LANGUAGES))
    run = MetricRun(runner, by_id, list(judges), languages, settings, shared)
    per_model: dict[str, list[AnswerRecord]] = defaultdict(list)
    for a in answers:
        per_model[a.model].append(a)
    ok = {m: [a for a in recs if a.ok] for m, recs in sorted(per_model.items())}
    ev = Evaluation(counts={m: _answer_counts(per_model[m], len(by_id)) for m in ok})
    scored = {m: per_model[m] for m, o in ok.items() if o}
    for model in scored:
        ev.counts[model]["judge_calls_failed"] = 0
    for metric in metrics:
        results = {}
        for model, recs in scored.items():
            mark = len(run.runner.failed)
            res = metric.score(run, model, recs if metric.scores_unanswered else ok[model])
            ev.counts[model]["judge_calls_failed"] += len(run.runner.failed) - mark  # judging this model's answers
            if res is None:
                continue
            results[model] = res
            ev.results.setdefault(model, {})[metric.name] = res
            ev.scores.setdefault(model, {}).update(metric.leaderboard(res))
            metric.views(run, model, res, ev)
        metric.compare(run, results, scored if metric.scores_unanswered else {m: ok[m] for m in scored}, ev)
    ev.judge_failed = list(run.runner.failed)
    ev.judge_unusable = list(run.runner.unusable)
    return ev


def _answer_counts(records: Sequence[AnswerRecord], instances: int) -> dict[str, int]:
    """Per model: instances scored, answered, unanswered; calls made and failed (generated answers)."""
    answered = sum(a.ok for a in records)
    placeholders = sum(not a.ok and a.error == UNANSWERED for a in records)
    return {"instances": instances, "answered": answered, "unanswered": instances - answered,
            "answers": len(records) - placeholders, "generation_failed": len(records) - answered - placeholders}


def run_evaluation(runner: "LLMRunner", instances: Sequence[Instance], models: Sequence[str], judges: Sequence[str],
                   out_dir: str | Path, settings: EvalSettings = EvalSettings(),
                   prepared: Optional[tuple[list["Metric"], dict[str, Any]]] = None,
                   console: Any = None, answers: Optional[Sequence[AnswerRecord]] = None,
                   answers_source: str = "", selection: Optional[Selection] = None) -> dict[str, Path]:
    """Generate, judge, score and write answers.jsonl + the full report into ``out_dir``. Metrics and their
    support models are checked and loaded before any LLM call, so a bad name or model folder fails fast.
    ``answers`` (made elsewhere, ``answers_file``): scored instead of generating; ``models`` is then ignored.
    ``selection``: the publication-date window that chose ``instances`` (recorded in results.json and the report)."""
    if answers is not None:
        models = sorted({a.model for a in answers})
    if not models:
        raise InputError("no models to evaluate: list llm endpoint names under evaluate.models")
    if not judges:
        raise InputError("no judges: list llm endpoint names under evaluate.judges")
    prepared = prepared or prepare_metrics(settings)
    out = Path(out_dir)
    generated = answers is None
    model_endpoints: dict[str, str] = {}
    if answers is None:
        answers = generate_answers(runner, instances, models, style=settings.style, seed=settings.seed,
                                   dataset_version=settings.dataset_revision, max_doc_chars=settings.max_doc_chars,
                                   protocol=settings.protocol)
        answers_path = write_answers(out / "answers.jsonl", answers)
        model_endpoints = {m: f"{ep.base_url} model {ep.model}" for m in models
                           for ep in [runner.settings.endpoint(m)[1]]}
        warnings = check_failures(answers, model_endpoints)  # raises when a model produced no answer at all
        served = {m: runner.settings.endpoint(m)[1].model for m in models}
    else:
        answers_path = write_answers(out / "answers.jsonl", answers)
        answers = [*answers, *unanswered_records(answers, instances)]  # scored as wrong, not left out
        served = {m: f"answers file {answers_source}".strip() for m in models}
    covered = coverage(answers, len(instances))
    if not generated:
        warnings = coverage_warnings(covered)
    for line in warnings:
        if console is not None:
            console.print(f"[yellow]warning:[/] {line}")
    ev = evaluate_answers(runner, instances, answers, judges, settings, prepared=prepared)
    # judge calls that got no answer (the run ends with exit 3), and those answered without a usable verdict
    unjudged = [*judge_warning(ev.judge_failed), *unusable_warning(ev.judge_unusable)]
    warnings = [*warnings, *unjudged]
    for line in unjudged:
        if console is not None:
            console.print(f"[yellow]warning:[/] {line}")
    answers = with_panel_verdicts(answers, ev)
    write_answers(answers_path, answers)  # now with the panel's verdict: the annotators' hint
    endpoints = {n: runner.settings.endpoints.get(n) for n in [*models, *judges]}
    judging = judging_flags(models, judges, {n: e for n, e in endpoints.items() if e is not None})
    for line in _judging_lines(judging):
        if console is not None:
            console.print(f"[yellow]warning:[/] {line}")
    info = run_info(settings.dataset, settings.dataset_revision, {
        **settings.recorded(), "judges": list(judges),
        "models": served,
        **({"support_models": ev.extra["support_models"]} if "support_models" in ev.extra else {}),
        **dict(settings.source or {}),
    }, split=settings.split, configs=settings.configs,
        selection=selection.describe() if selection is not None and not selection.window.open else "")
    paths = write_report(out, ReportInputs(
        title=f"babelrag evaluation: {settings.dataset or 'benchmark'}", info=info, scores=ev.scores,
        sort_by="accuracy", views=ev.views, coverage={m: (c.answered, c.total) for m, c in covered.items()},
        answers=answers,
        extra={"counts": ev.counts, "warnings": warnings, "judging": judging,
               "judge_failures": judge_failures(ev.judge_failed), "judge_unusable": judge_unusable(ev.judge_unusable),
               **({"notice": settings.notice} if settings.notice else {}), **ev.extra,
               **({"selection": selection.recorded()} if selection is not None and not selection.window.open else {}),
               "metrics": {m: {k: r.to_dict() for k, r in res.items()} for m, res in ev.results.items()}},
        columns={c.name: f"{metric.name}: {metric.description}" for metric in prepared[0] for c in metric.columns},
    ))
    paths["answers"] = answers_path
    failed = incomplete(answers if generated else (), model_endpoints, str(paths["html"]), ev.judge_failed)
    if failed is not None:
        failed.paths = paths  # type: ignore[attr-defined]  # the report is written: callers may still read it
        raise failed
    return paths


def with_panel_verdicts(answers: Sequence[AnswerRecord], ev: Evaluation) -> list[AnswerRecord]:
    """The answers with the judges' verdict (``judge_verdict``) where a metric gave one (``Metric.judge_verdicts``,
    XRAG's panel majority vote; the first metric in registry order wins): ``annotate push answer_judgement``
    shows it to annotators as a hint, and agreement compares it with theirs."""
    verdicts: dict[str, bool] = {}
    for name in [n for n in registry.names() if any(n in per_metric for per_metric in ev.results.values())]:
        metric = registry.get(name)
        for per_metric in ev.results.values():
            if name in per_metric:
                for answer_id, correct in metric.judge_verdicts(per_metric[name]).items():
                    verdicts.setdefault(answer_id, correct)
    return [a.model_copy(update={"judge_verdict": "correct" if verdicts[a.id] else "incorrect"})
            if a.id in verdicts else a for a in answers]


def _judging_lines(judging: dict[str, Any]) -> list[str]:
    lines = [f"judge {j} is {why}: the scores show that the pipeline runs, not model quality"
             for j, why in sorted(judging["weak_judges"].items())]
    return lines + [f"model {m} is among its own judges ({', '.join(js)})" for m, js in sorted(judging["self_judged"].items())]


def evaluate_release(config: Any, release: Any, out_dir: Optional[Path] = None, models: Sequence[str] = (),
                     judges: Sequence[str] = (), max_instances: Optional[int] = None, console: Any = None,
                     settings: Optional[EvalSettings] = None, split: Optional[str] = None,
                     answers_file: Optional[Path] = None, notice: str = "",
                     window: DateWindow = DateWindow(), human_file: Optional[Path] = None) -> dict[str, Path]:
    """Evaluate the configured models on one split of a release (folder, .jsonl file or Hub id) and write the
    report; returns the file paths. ``settings`` default: the config's ``evaluate:`` section; ``split``
    default: ``test``, else the release's only split. ``window``: score only instances whose supporting
    articles were all published inside it (``babelrag.freshness``), before any sampling. ``human_file``
    (default ``evaluate.human_labels``): human verdicts on the answers (``annotate pull answer_judgement``'s
    decisions), for judge-human kappa."""
    ev = config.evaluate
    settings = settings or EvalSettings.from_config(config)
    if answers_file is not None and (models or max_instances is not None):
        raise ConfigError("--answers scores the answers in the file: give no --model (the file names the models) "
                          "and no --max-instances (the file decides which instances are answered)")
    models = [] if answers_file is not None else list(models or ev.models)
    if not models and answers_file is None:
        name, _ = config.llm.endpoint(None)  # the default endpoint evaluates itself
        models = [name]
    judges = list(judges or ev.judges or models[:1])
    if not judges:
        raise ConfigError("scoring an answers file needs judges: list llm endpoint names under evaluate.judges "
                          "or pass --judge")
    config.llm.require([*models, *judges], "model or judge")  # before any work
    human_path = human_file if human_file is not None else config.resolve(ev.human_labels)
    if human_path is not None:
        settings = settings.with_(human=read_human_verdicts(human_path))
    prepared = prepare_metrics(settings)  # fail fast on an unknown metric or a bad model folder, before downloads
    source = resolve_release(getattr(release, "folder", release), configs=ev.configs)
    folder = source.path
    split = choose_split(folder, split)
    in_split = load_instances(folder, configs=ev.configs, split=split or None)
    selection = select(in_split, window)
    if not selection.kept and not window.open:
        raise InputError(f"no instance of {folder} has all its supporting articles {window.describe()} "
                         f"({selection.out_of_range} outside the window, {selection.undated} without dates); "
                         "widen --after/--before")
    instances = sample_instances(selection.kept, max_instances, config.project.seed)
    dataset, revision = release_revision(folder) if folder.is_dir() else ("", "")
    protocol = Protocol.from_info(read_info(folder)) if folder.is_dir() else OURS
    if source.hub_id:
        dataset, revision = source.hub_id, revision or source.commit
    out = Path(out_dir) if out_dir is not None else config.resolve(ev.out_dir)
    if console is not None:
        origin = f"hf://datasets/{source.hub_id} ({folder})" if source.hub_id else str(folder)
        console.print(f"evaluating {', '.join(models) or f'the answers in {answers_file}'} on {len(instances)} instances"
                      + (f" of split {split!r}" if split else "") + f" from {origin} "
                      f"(judges: {', '.join(judges)}) -> {out}")
        if not window.open:
            console.print(f"selection: {selection.describe()}")
    settings = settings.with_(dataset=dataset or folder.name, dataset_revision=revision, source=source.settings(),
                              split=split, configs=scored_configs(folder, split, ev.configs), protocol=protocol,
                              notice=notice or settings.notice)
    answers = None
    if answers_file is not None:
        answers = read_answers_file(answers_file, in_split, dataset_version=revision)
        chosen = {inst.id for inst in instances}
        answers = [a for a in answers if a.instance_id in chosen]  # the window's selection, recorded
    runner = runner_from_config(config)
    try:
        try:
            paths = run_evaluation(runner, instances, models, judges, out, settings, prepared=prepared,
                                   console=console, answers=answers, answers_source=str(answers_file or ""),
                                   selection=selection)
        except (GenerationFailed, IncompleteRunError) as exc:
            stopped = runner.budget_stopped()
            if not stopped:
                raise
            raise budget_incomplete(stopped, getattr(exc, "paths", None)) from exc
        stopped = runner.budget_stopped()
        if stopped:  # judges refused by the cap leave items unjudged: never a complete-looking exit 0
            raise budget_incomplete(stopped, paths)
        return paths
    finally:
        runner.close()


def budget_incomplete(stopped: str, paths: Optional[dict[str, Path]]) -> IncompleteRunError:
    """The error an evaluation ends with when ``llm.max_cost_usd`` refused answer or judge calls."""
    where = f"; the partial report is {paths['html']}" if paths else ""
    error = IncompleteRunError(f"incomplete: the LLM budget stopped the evaluation — {stopped}{where}")
    error.paths = paths  # type: ignore[attr-defined]
    return error
