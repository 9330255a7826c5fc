"""The evaluation step of ``babelrag demo`` (and ``babelrag evaluate run``): release -> report."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from babelrag.errors import ConfigError, InputError


def evaluate_release(
    config: Any,
    release_dir: Any,
    out_dir: Optional[Path] = None,
    models: Sequence[str] = (),
    judges: Sequence[str] = (),
    max_instances: Optional[int] = None,
    rounds: int = 1000,
    console: Any = None,
) -> dict[str, Path]:
    """Evaluate configured models on a release folder and write the report; returns the file paths."""
    from babelrag.evaluators.runner import load_instances, release_revision, run_evaluation, sample_instances
    from babelrag.llm.client import runner_from_config

    folder = Path(getattr(release_dir, "folder", release_dir))
    ev = config.evaluate
    instances = load_instances(folder, configs=ev.configs)
    instances = sample_instances(instances, max_instances, config.project.seed)
    models = list(models or ev.models)
    if not models:
        name, _ = config.llm.endpoint(None)  # the default endpoint evaluates itself
        models = [name]
    judges = list(judges or ev.judges or models[:1])
    known = sorted(config.llm.endpoints)
    unknown = [n for n in [*models, *judges] if n not in known]
    if unknown:  # checked before any work; the LLM layer would silently fall back to the default
        raise ConfigError(f"endpoint(s) {unknown} are not configured under llm.endpoints (have: {known})")
    dataset, revision = release_revision(folder)
    out = Path(out_dir) if out_dir is not None else config.resolve(ev.out_dir)
    if console is not None:
        console.print(f"evaluating {', '.join(models)} on {len(instances)} instances from {folder} "
                      f"(judges: {', '.join(judges)}) -> {out}")
    runner = runner_from_config(config)
    try:
        return run_evaluation(runner, instances, models, judges, out, style=ev.prompt_style,
                              dataset=dataset or folder.name, dataset_revision=revision,
                              seed=config.project.seed, rounds=rounds,
                              metrics=ev.metrics)
    finally:
        runner.close()


def evaluate_demo(config: Any, release_dir: Any, console: Any = None) -> Path:
    """The demo's last step: a small seeded sample so the embedded model finishes quickly."""
    paths = evaluate_release(config, release_dir, max_instances=24, rounds=1000, console=console)
    if "html" not in paths:
        raise InputError("evaluation wrote no HTML report")
    return paths["html"]
