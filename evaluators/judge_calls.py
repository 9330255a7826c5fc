"""Judge calls that got no answer: failed items of an evaluation, not verdicts.

A judge that answered but whose reply holds no usable verdict (unreadable after the LLM layer's repair
re-ask) has given the item's final outcome: the metric counts it (``no_verdict``, NaN) as before. A judge
call that got *no answer* — timeout, dropped connection, 5xx, rate limit, bad body, refused key, endpoint
down (``failed_items.is_retryable``) — says nothing about the answer judged: the metric still scores what
it has, but the call is recorded here, results.json and the report say how many (``judge_failures``,
a warning, per-model ``judge_failed`` counts), and the run ends with exit 3. A plain re-run retries exactly
those calls; the verdicts that came are answered from the LLM cache.

``metric.JudgeRunner`` wraps the LLM runner that metrics get (``MetricRun.runner``), so every judge call of
every metric, plug-ins included, goes through one place; it records ``FailedJudgeCall``s, which this module
summarises. (Both live in ``metric``, which the registry imports, so listing metrics imports nothing more.)
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from babelrag.evaluators.metric import FailedJudgeCall


def judge_failures(failed: Sequence[FailedJudgeCall]) -> dict[str, Any]:
    """results.json's ``judge_failures``: how many judge calls got no answer, per stage and judge with
    their reasons and the first error (``{"failed": 0, "by_call": {}}`` when every call was answered)."""
    by_call: dict[str, dict[str, Any]] = {}
    for f in failed:
        row = by_call.setdefault(f.stage, {"judge": f.judge, "failed": 0, "reasons": Counter(), "first_error": f.error})
        row["failed"] += 1
        row["reasons"][f.reason] += 1
    return {"failed": len(failed),
            "by_call": {stage: {**row, "reasons": dict(sorted(row["reasons"].items()))}
                        for stage, row in sorted(by_call.items())}}


def describe(failed: Sequence[FailedJudgeCall]) -> str:
    """``3 judge call(s) got no answer (eval.xrag.judge.judge-1: 3 timeout)``; empty when none."""
    if not failed:
        return ""
    parts = [f"{stage}: " + ", ".join(f"{n} {reason}" for reason, n in row["reasons"].items())
             for stage, row in judge_failures(failed)["by_call"].items()]
    return f"{len(failed)} judge call(s) got no answer ({'; '.join(parts)})"


def warning(failed: Sequence[FailedJudgeCall]) -> list[str]:
    """The report's warning line (none when every judge call was answered)."""
    if not failed:
        return []
    return [describe(failed) + ": the items they judge have no verdict from them in this report, which is "
            "incomplete; a plain re-run retries exactly those calls (verdicts that came are in the LLM cache). "
            f"First error: {failed[0].error}"]
