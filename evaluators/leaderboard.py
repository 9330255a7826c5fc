"""The leaderboard: one row per model with each metric's value, 95% interval and n, as rows, markdown and CSV.

Shared by ``report`` (which writes the files) and ``report_views`` (which renders the page's sections).
"""
from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

from babelrag.stats import Estimate

Scores = Mapping[str, Mapping[str, Estimate]]  # model -> metric -> estimate
Coverage = Mapping[str, tuple[int, int]]  # model -> (instances answered, instances scored)
ROW_META = ("rank", "model", "answered", "instances")  # leaderboard row keys that are no metric
SMALL_N = 30  # below this many items a 95% interval is rough; from one item it is a single point


def metric_keys(row: Mapping[str, Any]) -> list[str]:
    """The metric columns of a leaderboard row (not rank, model, coverage, CI bounds or n)."""
    return [k for k in row if k not in ROW_META and not k.endswith(("_ci_low", "_ci_high", "_n"))]


def coverage_cell(row: Mapping[str, Any]) -> str:
    """``2/20``: the instances a model answered out of those scored ("" when not recorded)."""
    return f"{row['answered']}/{row['instances']}" if row.get("instances") is not None else ""


def leaderboard_rows(scores: Scores, sort_by: str, metrics: Sequence[str] | None = None,
                     coverage: Coverage | None = None) -> list[dict[str, Any]]:
    """One row per model, sorted by ``sort_by`` (descending; models lacking it go last); ``coverage`` adds
    ``answered`` and ``instances`` (unanswered instances are already scored as wrong in ``scores``)."""
    metrics = list(metrics) if metrics else sorted({m for s in scores.values() for m in s})
    if sort_by not in metrics:
        metrics.insert(0, sort_by)

    def key(model: str) -> tuple[int, float]:
        est = scores[model].get(sort_by)
        ok = est is not None and not math.isnan(est.value)
        return (0 if ok else 1, -est.value if ok else 0.0)

    rows = []
    ordered = sorted(scores, key=lambda m: (key(m), m))
    for model in ordered:
        # ties share the best rank (1, 1, 3): equal scores are not an order
        row: dict[str, Any] = {"rank": 1 + sum(key(other) < key(model) for other in ordered), "model": model}
        if coverage is not None and model in coverage:
            row["answered"], row["instances"] = coverage[model]
        for metric in metrics:
            est = scores[model].get(metric)
            row[metric] = None if est is None else est.value
            row[f"{metric}_ci_low"] = None if est is None else est.low
            row[f"{metric}_ci_high"] = None if est is None else est.high
            row[f"{metric}_n"] = None if est is None else est.n
        rows.append(row)
    return rows


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def small_n(n: Any) -> bool:
    return isinstance(n, int) and n < SMALL_N


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Markdown leaderboard: each metric as ``value [low, high]`` (with ``n=k`` when k < SMALL_N), and a
    coverage column (answered/total) when the rows carry it."""
    if not rows:
        return "_no results_\n"
    metrics = metric_keys(rows[0])
    cov = any(coverage_cell(r) for r in rows)
    head = "| rank | model | " + ("coverage | " if cov else "") + " | ".join(metrics) + " |\n"
    head += "|---:|---|" + ("---:|" if cov else "") + "---:|" * len(metrics) + "\n"
    body = ""
    for r in rows:
        cells = [f"{_fmt(r[m])} [{_fmt(r[f'{m}_ci_low'])}, {_fmt(r[f'{m}_ci_high'])}]"
                 + (f" n={r.get(f'{m}_n')}" if small_n(r.get(f"{m}_n")) else "") if r[m] is not None else "–"
                 for m in metrics]
        body += f"| {r['rank']} | {r['model']} | " + (f"{coverage_cell(r)} | " if cov else "") + " | ".join(cells) + " |\n"
    return head + body


def breakdown_table(breakdown: Mapping[str, Mapping[str, Estimate]], label: str = "accuracy") -> str:
    """Markdown table: models as rows, groups (e.g. ``mono/de``, ``mono+EQ/de``) as columns."""
    groups = sorted({g for v in breakdown.values() for g in v})
    if not groups:
        return ""
    out = "| model | " + " | ".join(groups) + " |\n|---|" + "---:|" * len(groups) + "\n"
    for model in sorted(breakdown):
        cells = []
        for g in groups:
            e = breakdown[model].get(g)
            cells.append("–" if e is None or math.isnan(e.value) else f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"
                         + (f" n={e.n}" if small_n(e.n) else ""))
        out += f"| {model} | " + " | ".join(cells) + " |\n"
    return f"\n## {label} per setting / language\n\n" + out


def csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return buf.getvalue()
