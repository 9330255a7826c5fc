"""Run the pipeline for the CLI: progress, the run report at the end (also on failure), saved as JSON."""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from babelrag.config import Config
from babelrag.pipeline import Pipeline, RunReport
from babelrag.atomic import atomic_write_text


def run_pipeline(config: Config, until: str | None = None, only: Iterable[str] | None = None,
                 force: Iterable[str] = (), console: Any = None) -> RunReport:
    pipe = Pipeline(config, console=console)
    try:
        return pipe.run(until=until, only=only, force=force)
    finally:
        if pipe.report.stages:
            if console is not None:
                console.print(pipe.report.render())
            pipe.store.root.mkdir(parents=True, exist_ok=True)
            atomic_write_text(pipe.store.root / "run_report.json",
                              json.dumps(pipe.report.to_dict(), indent=2, sort_keys=True))
