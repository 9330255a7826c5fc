"""Judge calls that got no answer: failed items of an evaluation, not verdicts; and judge calls whose
final outcome holds no usable verdict.

A judge that answered but whose reply holds no usable verdict (unreadable after the LLM layer's repair
re-ask: ``invalid_json``, ``schema``) has given the item's final outcome: the metric counts it
(``no_verdict``, NaN) and the run may exit 0, but it is not silent: results.json's ``judge_unusable`` and
a warning say how many, per stage. The LLM cache keeps that reply as such (``ResponseCache.put_unreadable``),
so a plain re-run reports the same outcome without paying for the call again; ``--retry-unreadable``
(``llm.retry_unreadable``) asks again. A judge call that got *no answer* — timeout, dropped connection,
5xx, rate limit, bad body, refused key, endpoint down (``failed_items.is_retryable``) — says nothing about
the answer judged: the metric still scores what it has, but the call is recorded here, results.json and
the report say how many (``judge_failures``, a warning, per-model ``judge_failed`` counts), and the run
ends with exit 3. A plain re-run retries exactly those calls; the verdicts that came are answered from the
LLM cache.

``metric.JudgeRunner`` wraps the LLM runner that metrics get (``MetricRun.runner``), so every judge call of
every metric, plug-ins included, goes through one place; it records ``FailedJudgeCall``s, which this module
summarises. (Both live in ``metric``, which the registry imports, so listing metrics imports nothing more.)
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from babelrag.evaluators.metric import FailedJudgeCall


def _by_call(calls: Sequence[FailedJudgeCall], count: str = "failed") -> dict[str, dict[str, Any]]:
    """Per stage: its judge, how many calls (under ``count``), their reasons and the first error."""
    by_call: dict[str, dict[str, Any]] = {}
    for f in calls:
        row = by_call.setdefault(f.stage, {"judge": f.judge, count: 0, "reasons": Counter(), "first_error": f.error})
        row[count] += 1
        row["reasons"][f.reason] += 1
    return {stage: {**row, "reasons": dict(sorted(row["reasons"].items()))} for stage, row in sorted(by_call.items())}


def judge_failures(failed: Sequence[FailedJudgeCall]) -> dict[str, Any]:
    """results.json's ``judge_failures``: how many judge calls got no answer, per stage and judge with
    their reasons and the first error (``{"failed": 0, "by_call": {}}`` when every call was answered)."""
    return {"failed": len(failed), "by_call": _by_call(failed)}


def judge_unusable(unusable: Sequence[FailedJudgeCall]) -> dict[str, Any]:
    """results.json's ``judge_unusable``: how many judge calls ended without a usable verdict, how many of
    them this run answered from the LLM cache (``cached``: paid for by an earlier run), per stage and judge
    with their reasons and the first error."""
    return {"calls": len(unusable), "cached": sum(f.cached for f in unusable),
            "by_call": _by_call(unusable, count="calls")}


def _parts(calls: Sequence[FailedJudgeCall]) -> str:
    return "; ".join(f"{stage}: " + ", ".join(f"{n} {reason}" for reason, n in row["reasons"].items())
                     for stage, row in _by_call(calls).items())


def describe(failed: Sequence[FailedJudgeCall]) -> str:
    """``3 judge call(s) got no answer (eval.xrag.judge.judge-1: 3 timeout)``; empty when none."""
    if not failed:
        return ""
    return f"{len(failed)} judge call(s) got no answer ({_parts(failed)})"


def warning(failed: Sequence[FailedJudgeCall]) -> list[str]:
    """The report's warning line (none when every judge call was answered)."""
    if not failed:
        return []
    return [describe(failed) + ": the items they judge have no verdict from them in this report, which is "
            "incomplete; a plain re-run retries exactly those calls (verdicts that came are in the LLM cache). "
            f"First error: {failed[0].error}"]


def unusable_warning(unusable: Sequence[FailedJudgeCall]) -> list[str]:
    """The warning line for judge calls answered without a usable verdict (none when there were none)."""
    if not unusable:
        return []
    return [f"{len(unusable)} judge call(s) gave no usable verdict ({_parts(unusable)}): final, the items they judge "
            "have no verdict from them (XRAG: no_verdict; other metrics: undefined). A plain re-run reports the same "
            "from the LLM cache without paying again; `--retry-unreadable` asks those judges again. "
            f"First error: {unusable[0].error}"]
