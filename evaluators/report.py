"""Evaluation reports: leaderboard (markdown, CSV, JSON), PNG plots and one offline HTML file.

JSON results carry what is needed to trust a number later (MTEB-style): dataset id and revision,
babelrag version, git hash of the code, metric settings. Every file is written to a temporary name
and moved into place, so an interrupted run never leaves a half-written report. Plots use
matplotlib's Agg backend (no display); the HTML inlines them as base64 so it opens offline.
"""
from __future__ import annotations

import io
import math
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from babelrag.atomic import atomic_write_bytes
from babelrag.evaluators import strict_json
from babelrag.evaluators.leaderboard import (  # noqa: F401  (the leaderboard's names, as report has always offered them)
    ROW_META, SMALL_N, Coverage, Scores, breakdown_table, coverage_cell, csv_text, leaderboard_rows, markdown_table,
    metric_keys, small_n)
from babelrag.evaluators.report_views import ReportPage, metric_views, render_html, render_markdown
from babelrag.stats import Estimate

# ---------------------------------------------------------------- provenance


@dataclass(frozen=True)
class RunInfo:
    dataset: str
    dataset_revision: str
    library_version: str
    git_hash: str
    created: str
    split: str = ""  # the split scored (never several: dev and test rows are not mixed in one leaderboard)
    configs: list[str] = field(default_factory=list)  # the release configs scored
    settings: dict[str, Any] = field(default_factory=dict)
    selection: str = ""  # the instances chosen by publication date (``--after``/``--before``), "" = all


def _git_hash() -> str:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if out.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--", str(here)],
                           capture_output=True, text=True, timeout=5).stdout.strip()
    return out.stdout.strip() + ("-dirty" if dirty else "")


def run_info(dataset: str, dataset_revision: str, settings: Mapping[str, Any] | None = None, split: str = "",
             configs: Sequence[str] = (), selection: str = "") -> RunInfo:
    """Provenance for a results file: dataset revision, split and configs, library version, code git hash."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        lib = version("babelrag")
    except PackageNotFoundError:
        lib = "unknown"
    return RunInfo(dataset, dataset_revision, lib, _git_hash(),
                   datetime.now(timezone.utc).isoformat(timespec="seconds"), split, list(configs), dict(settings or {}),
                   selection)


# ---------------------------------------------------------------- plots


def _figure_png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _grouped_bars(values: Mapping[str, Mapping[str, Any]], ylabel: str, title: str, ylim: float,
                  height: float, errors: bool) -> bytes:
    """Languages on x, one bar per model; ``errors``: values are Estimates drawn with their CI."""
    import numpy as np

    plt = _plt()
    models = sorted(values)
    langs = sorted({lang for m in models for lang in values[m]})
    width = 0.8 / max(1, len(models))
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(langs) + 2), height))
    x = np.arange(len(langs))
    for k, model in enumerate(models):
        offset = x + (k - (len(models) - 1) / 2) * width
        cells = [values[model].get(lang) for lang in langs]
        if errors:
            vals = np.array([e.value if e else np.nan for e in cells])
            lo = np.array([e.value - e.low if e else 0 for e in cells])
            hi = np.array([e.high - e.value if e else 0 for e in cells])
            bars = ax.bar(offset, vals, width, yerr=[lo, hi], capsize=3, label=model)
        else:
            vals = np.array([np.nan if v is None else v for v in cells], dtype=float)
            bars = ax.bar(offset, vals, width, label=model)
        # every value is written on its bar, so a zero (a bar of no height) is still seen as a zero
        ax.bar_label(bars, labels=["" if np.isnan(v) else f"{v:.2f}" for v in vals], fontsize=7, padding=2)
    ax.set_xticks(x, langs)
    ax.set_ylim(0, ylim)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, ncols=min(4, len(models)), loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return _figure_png(fig)


def plot_language_accuracy(acc: Mapping[str, Mapping[str, Estimate]], title: str = "Accuracy per language") -> bytes:
    """Grouped bars (languages on x, one bar per model) with bootstrap CI error bars."""
    return _grouped_bars(acc, "accuracy (95% CI)", title, ylim=1.05, height=3.6, errors=True)


def rank_table(values: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, int]]:
    """Per column (language/metric), rank models by value (1 = best; ties share the best rank)."""
    cols = sorted({c for v in values.values() for c in v})
    ranks: dict[str, dict[str, int]] = {m: {} for m in values}
    for c in cols:
        present = [(values[m][c], m) for m in values if c in values[m] and not math.isnan(values[m][c])]
        for m in values:
            if c in values[m] and not math.isnan(values[m][c]):
                ranks[m][c] = 1 + sum(v > values[m][c] for v, _ in present)
    return ranks


def plot_rank_heatmap(values: Mapping[str, Mapping[str, float]], title: str = "Rank per language") -> bytes:
    """MIRAGE-style heatmap of model ranks per column (darker = better), ranks written in cells."""
    import numpy as np

    plt = _plt()
    ranks = rank_table(values)
    models = sorted(values, key=lambda m: (np.mean(list(ranks[m].values())) if ranks[m] else 1e9, m))
    cols = sorted({c for v in values.values() for c in v})
    grid = np.array([[ranks[m].get(c, np.nan) for c in cols] for m in models], dtype=float)
    fig, ax = plt.subplots(figsize=(max(4, 0.7 * len(cols) + 2.5), max(2.5, 0.4 * len(models) + 1.2)))
    im = ax.imshow(grid, cmap="viridis_r", aspect="auto", vmin=1, vmax=max(2, len(models)))
    ax.set_xticks(range(len(cols)), cols)
    ax.set_yticks(range(len(models)), models)
    for i in range(len(models)):
        for j in range(len(cols)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, int(grid[i, j]), ha="center", va="center",
                        color="black" if grid[i, j] <= (len(models) + 1) / 2 else "white", fontsize=8)
    fig.colorbar(im, ax=ax, label="rank")
    ax.set_title(title)
    return _figure_png(fig)


def plot_bradley_terry(leaderboard: Sequence[Mapping[str, Any]], title: str = "Bradley-Terry ratings") -> bytes:
    """Horizontal error bars: rating with its bootstrap interval, best on top."""
    plt = _plt()
    rows = list(leaderboard)[::-1]
    fig, ax = plt.subplots(figsize=(6, max(2.5, 0.35 * len(rows) + 1)))
    y = range(len(rows))
    vals = [r["rating"] for r in rows]
    err = [[r["rating"] - r["ci_low"] for r in rows], [r["ci_high"] - r["rating"] for r in rows]]
    ax.errorbar(vals, list(y), xerr=err, fmt="o", capsize=3)
    ax.set_yticks(list(y), [r["model"] for r in rows])
    ax.set_xlabel("rating (Elo scale, 95% bootstrap CI)")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    return _figure_png(fig)


def plot_wrong_language(rates: Mapping[str, Mapping[str, float]], title: str = "Wrong-language answers") -> bytes:
    """Share of answers not in the expected language, per model and language."""
    return _grouped_bars(rates, "wrong-language rate", title, ylim=1.0, height=3.4, errors=False)


# ---------------------------------------------------------------- everything at once


@dataclass
class ReportInputs:
    """What a report shows; every part except ``scores`` is optional."""

    title: str
    info: RunInfo
    scores: Scores  # model -> metric -> Estimate (leaderboard)
    sort_by: str
    # metric name -> its view (``Evaluation.views``): the metric renders it (``Metric.view_*``)
    views: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # more JSON (per-item results, counts, warnings, ...)
    columns: dict[str, str] = field(default_factory=dict)  # leaderboard column -> what it measures (one line)
    coverage: Coverage | None = None  # model -> (answered, scored): the leaderboard's coverage column
    answers: Sequence[Any] = ()  # AnswerRecords (unanswered ones too): the per-answer view

    def __post_init__(self) -> None:
        self.views = {name: dict(view) for name, view in self.views.items()}  # the report's own copy


def write_report(out_dir: str | Path, inputs: ReportInputs) -> dict[str, Path]:
    """Write leaderboard.md/.csv, results.json, plots/*.png and report.html; returns their paths."""
    out = Path(out_dir)
    rows = leaderboard_rows(inputs.scores, inputs.sort_by, coverage=inputs.coverage)
    page = ReportPage(inputs, rows)
    views = metric_views(page)
    for metric, view in views:
        page.images.update(metric.view_plots(view))
    paths = {"markdown": out / "leaderboard.md", "csv": out / "leaderboard.csv", "json": out / "results.json",
             "html": out / "report.html"}
    results: dict[str, Any] = {
        "run": asdict(inputs.info),
        "sort_by": inputs.sort_by,
        "leaderboard": rows,
        "scores": {m: {k: e.as_dict() for k, e in s.items()} for m, s in inputs.scores.items()},
    }
    for metric, view in views:
        for key, value in metric.view_results(view).items():
            if key == "views":
                results.setdefault("views", {}).update(value)
            else:
                results[key] = value
    results.update({
        "columns": dict(inputs.columns),
        **({"coverage": {m: {"answered": a, "instances": t} for m, (a, t) in inputs.coverage.items()}}
           if inputs.coverage is not None else {}),
        **inputs.extra,
    })
    images = page.images
    for name, png in images.items():
        p = out / "plots" / (name.lower().replace(" ", "_").replace("-", "_") + ".png")
        atomic_write_bytes(p, png)
        paths[f"plot:{name}"] = p
    atomic_write_bytes(paths["markdown"], render_markdown(page).encode())
    atomic_write_bytes(paths["csv"], csv_text(rows).encode())
    atomic_write_bytes(paths["json"], strict_json.dumps(results).encode())
    atomic_write_bytes(paths["html"], render_html(page).encode())
    return paths
