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
    reranker: Any = None,
    nli: Any = None,
) -> dict[str, Path]:
    """Evaluate configured models on a release (folder, .jsonl file or Hub id) and write the report;
    returns the file paths. ``reranker`` / ``nli``: local cross-encoder folders (or loaded models)
    for the MIRAGE support features."""
    from babelrag.evaluators.runner import (
        load_instances,
        load_support_models,
        release_revision,
        run_evaluation,
        sample_instances,
    )
    from babelrag.evaluators.source import resolve_release
    from babelrag.llm.client import runner_from_config

    ev = config.evaluate
    models = list(models or ev.models)
    if not models:
        name, _ = config.llm.endpoint(None)  # the default endpoint evaluates itself
        models = [name]
    judges = list(judges or ev.judges or models[:1])
    known = sorted(config.llm.endpoints)
    unknown = [n for n in [*models, *judges] if n not in known]
    if unknown:  # checked before any work; the LLM layer would silently fall back to the default
        raise ConfigError(f"endpoint(s) {unknown} are not configured under llm.endpoints (have: {known})")
    reranker, nli = load_support_models(reranker, nli, ev.metrics)  # fail fast on a bad model folder
    source = resolve_release(getattr(release_dir, "folder", release_dir), configs=ev.configs)
    folder = source.path
    instances = load_instances(folder, configs=ev.configs)
    instances = sample_instances(instances, max_instances, config.project.seed)
    dataset, revision = release_revision(folder) if folder.is_dir() else ("", "")
    if source.hub_id:
        dataset, revision = source.hub_id, revision or source.commit
    out = Path(out_dir) if out_dir is not None else config.resolve(ev.out_dir)
    if console is not None:
        origin = f"hf://datasets/{source.hub_id} ({folder})" if source.hub_id else str(folder)
        console.print(f"evaluating {', '.join(models)} on {len(instances)} instances from {origin} "
                      f"(judges: {', '.join(judges)}) -> {out}")
    runner = runner_from_config(config)
    try:
        return run_evaluation(runner, instances, models, judges, out, style=ev.prompt_style,
                              dataset=dataset or folder.name, dataset_revision=revision,
                              seed=config.project.seed, rounds=rounds,
                              metrics=ev.metrics, source=source.settings(), reranker=reranker, nli=nli,
                              max_doc_chars=ev.max_document_chars)
    finally:
        runner.close()


def evaluate_demo(config: Any, release_dir: Any, console: Any = None) -> Path:
    """The demo's last step: a small seeded sample so the embedded model finishes quickly."""
    paths = evaluate_release(config, release_dir, max_instances=12, rounds=1000, console=console)
    if "html" not in paths:
        raise InputError("evaluation wrote no HTML report")
    return paths["html"]
