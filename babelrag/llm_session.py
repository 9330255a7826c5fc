"""One LLM runner per process, built from the build config; stages share it and its usage ledger.

Kept separate from ``babelrag.llm`` so the pipeline can ask for usage without importing the client.
"""
from __future__ import annotations

from typing import Any

from babelrag import llm
from babelrag.config import Config
from babelrag.errors import StageError

_RUNNER: Any = None
_RUNNER_KEY: str | None = None


def get_runner(config: Config) -> Any:
    """The process-wide ``LLMRunner`` for this config (cache under the build dir)."""
    global _RUNNER, _RUNNER_KEY
    # every llm setting, limits included (a changed limit needs a new runner; fingerprints ignore it)
    key = config.llm.model_dump_json() + str(config.build_dir)
    if _RUNNER is not None and _RUNNER_KEY == key:
        return _RUNNER
    _flush_spend()  # a changed config (a raised cap) replaces the runner: its spend is on record first
    try:  # the package resolves the client (and openai under it) on first use
        build_runner = llm.runner_from_config
    except ImportError as exc:
        raise StageError(f"the LLM layer is not available ({exc}); this stage needs it") from None
    _RUNNER = build_runner(config)
    _RUNNER_KEY = key
    return _RUNNER


def usage_for_stage(stage: str) -> dict[str, Any]:
    """Token/cost totals accounted to ``stage`` so far in this process (empty without a runner)."""
    usage = getattr(_RUNNER, "usage", None)
    if usage is None or not hasattr(usage, "stage_totals"):
        return {}
    return usage.stage_totals(stage)


def usage_snapshot(stage: str) -> tuple[Any, dict[str, Any]]:
    """Where ``stage``'s accounting stands now: the runner's usage ledger and its totals, for ``usage_since``."""
    return getattr(_RUNNER, "usage", None), usage_for_stage(stage)


def usage_since(stage: str, snapshot: tuple[Any, dict[str, Any]]) -> dict[str, Any]:
    """What ``stage`` used since ``snapshot``. A stage whose config differs from the previous run's gets a new
    runner (``get_runner``), with a ledger of its own: then everything on the new ledger is the stage's, and the
    old ledger's totals are no baseline (subtracting them gave negative call counts)."""
    ledger, before = snapshot
    after = usage_for_stage(stage)
    if getattr(_RUNNER, "usage", None) is not ledger:
        before = {}
    return {k: (v - before.get(k, 0)) if isinstance(v, (int, float)) else v for k, v in after.items()}


def endpoints_down() -> dict[str, str]:
    """Endpoints the shared runner gave up on in this run (name -> why), for the pipeline to stop on."""
    if _RUNNER is None or not hasattr(_RUNNER, "endpoints_down"):
        return {}
    return _RUNNER.endpoints_down()


def reset_endpoint_health() -> None:
    """A new run gives every endpoint a fresh chance (it may have recovered since the last run) and starts
    its budget account anew (the spend so far stays on record)."""
    if _RUNNER is not None and hasattr(_RUNNER, "reset_endpoint_health"):
        _RUNNER.reset_endpoint_health()
    budget = getattr(_RUNNER, "budget", None)
    if budget is not None:
        budget.new_run()


def budget_stopped() -> str:
    """Why the budget (``llm.max_cost_usd``) refused calls in this run, with the spend ("" when it did not)."""
    budget = getattr(_RUNNER, "budget", None)
    return budget.stopped() if budget is not None else ""


def budget_report() -> dict[str, Any]:
    """Caps and spend for the run report (written to the ledger first); {} without a runner."""
    budget = getattr(_RUNNER, "budget", None)
    return budget.as_dict() if budget is not None else {}


def _flush_spend() -> None:
    budget = getattr(_RUNNER, "budget", None)
    if budget is not None:
        budget.flush()


def reset() -> None:
    global _RUNNER, _RUNNER_KEY
    if _RUNNER is not None and hasattr(_RUNNER, "close"):
        _RUNNER.close()
    _RUNNER, _RUNNER_KEY = None, None
