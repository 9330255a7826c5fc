"""The sections of report.html and leaderboard.md, as a registry of views (adding one is one module).

A view is a registered ``ReportView`` subclass with a ``name``, an ``html(page)`` and optionally a
``markdown(page)``; each returns "" when it has nothing to show. The page shows them in registry order::

    @VIEWS.register
    class ModelList(ReportView):
        name = "model_list"
        def html(self, page):
            return "<p>" + ", ".join(page.models) + "</p>"

declared in ``_TABLE`` or from a plug-in / test with ``VIEWS.register_lazy("model_list", "pkg.mod:ModelList")``.
Tables sit in a box that scrolls sideways, so the page never overflows a 1,280 px window; column names are
readable, described once in a legend with their n; ties share a rank; notices (self-judging, weak judges,
failed generations) come first; a metric's own warnings (a surrogate resting on few models) head its
section, next to the numbers they concern.
"""
from __future__ import annotations

import base64
import html
import math
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from babelrag.evaluators import registry
from babelrag.evaluators.leaderboard import SMALL_N, coverage_cell, markdown_table, metric_keys, small_n
from babelrag.lazy_registry import LazyRegistry

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.evaluators.report import ReportInputs

_TABLE = {name: f"babelrag.evaluators.report_views:{cls}" for name, cls in (
    ("notices", "Notices"), ("leaderboard", "Leaderboard"), ("aggregates", "Aggregates"),
    ("metric_views", "MetricViews"), ("counts", "Counts"),
    ("figures", "Figures"),
    ("answers", "Answers"))}
VIEWS: LazyRegistry["ReportView"] = LazyRegistry("report view", _TABLE)

_ACRONYMS = {"f1": "F1", "bt": "BT", "raf": "RAF", "ci": "CI", "tp": "TP", "fp": "FP", "nli": "NLI", "id": "id",
             "llm": "LLM", "mt": "MT", "rouge": "ROUGE", "l": "L", "bleu": "BLEU"}


def label(key: str) -> str:
    """``citation_f1`` -> ``Citation F1``: a column name a reader can read."""
    words = [_ACRONYMS.get(w, w) for w in re.split(r"[_\s]+", key) if w]
    if not words:
        return key
    return " ".join([words[0] if words[0].isupper() else words[0].capitalize(), *words[1:]])


def number_cell(v: Any) -> str:
    """A number as a cell: 3 decimals for floats, – for none/NaN."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def estimate_cell(d: Any) -> str:
    """An estimate dict (value, ci_low, ci_high, n) as one cell."""
    if not isinstance(d, dict) or d.get("value") is None or not math.isfinite(float(d["value"])):
        return "–"
    return f"{number_cell(float(d['value']))}<br><small>[{number_cell(d.get('ci_low'))}, {number_cell(d.get('ci_high'))}] n={d.get('n', '?')}</small>"


def table(head: list[str], body: list[list[str]], cls: str = "") -> str:
    """An HTML table in a box that scrolls sideways (cells are already HTML)."""
    th = "".join(f"<th>{h}</th>" for h in head)
    rows = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>\n" for r in body)
    return f'<div class="table-wrap"><table class="{cls}"><thead><tr>{th}</tr></thead><tbody>\n{rows}</tbody></table></div>\n'


@dataclass
class ReportPage:
    """Everything a view may show."""

    inputs: "ReportInputs"
    rows: list[dict[str, Any]]
    images: dict[str, bytes] = field(default_factory=dict)

    @property
    def extra(self) -> dict[str, Any]:
        return self.inputs.extra

    @property
    def models(self) -> list[str]:
        return [r["model"] for r in self.rows]

    @property
    def judging(self) -> dict[str, Any]:
        return self.inputs.extra.get("judging") or {}

    def flags(self, model: str) -> list[str]:
        """Short warnings to print next to a model's numbers."""
        out = []
        if model in (self.judging.get("self_judged") or {}):
            out.append("self-judged")
        if self.judging.get("weak_judges"):
            out.append("weak judge")
        return out


class ReportView:
    name: ClassVar[str]

    def html(self, page: ReportPage) -> str:
        return ""

    def markdown(self, page: ReportPage) -> str:
        return ""


def _notice_lines(page: ReportPage) -> list[str]:
    j = page.judging
    lines = [page.extra["notice"]] if page.extra.get("notice") else []
    weak = j.get("weak_judges") or {}
    if weak:
        lines.append("The judge(s) " + ", ".join(f"{k} ({v})" for k, v in sorted(weak.items()))
                     + " are known to be weak: these figures show that the pipeline runs, not model quality.")
    for model, judges in sorted((j.get("self_judged") or {}).items()):
        lines.append(f"{model} was judged by itself ({', '.join(judges)} among its judges): its scores may be inflated.")
    lines += list(page.extra.get("warnings") or [])
    few = _fewest(page)
    if few is not None:
        lines.append(f"Few instances: the leaderboard's {label(page.inputs.sort_by)} rests on n={few} per model. "
                     f"With fewer than {SMALL_N} a 95% interval is rough, and from one instance it is a single point "
                     "(e.g. 1.000 [1.000, 1.000]) that says nothing about uncertainty: score more instances before "
                     "comparing models.")
    return lines


def _fewest(page: ReportPage) -> int | None:
    """The smallest n behind the sort column when it is below SMALL_N (None otherwise)."""
    ns = [r.get(f"{page.inputs.sort_by}_n") for r in page.rows]
    ns = [n for n in ns if isinstance(n, int)]
    return min(ns) if ns and small_n(min(ns)) else None


@VIEWS.register
class Notices(ReportView):
    name = "notices"

    def html(self, page: ReportPage) -> str:
        lines = _notice_lines(page)
        if not lines:
            return ""
        return '<div class="notice"><strong>Read this first.</strong><ul>' + "".join(
            f"<li>{html.escape(x)}</li>" for x in lines) + "</ul></div>\n"

    def markdown(self, page: ReportPage) -> str:
        lines = _notice_lines(page)
        return "".join(f"> **Warning:** {x}\n\n" for x in lines)


def _metric_columns(rows: list[dict[str, Any]]) -> list[str]:
    return metric_keys(rows[0]) if rows else []


def _coverage_html(row: dict[str, Any]) -> str:
    cell = coverage_cell(row)
    if row.get("instances") and row["answered"] < row["instances"]:
        share = row["answered"] / row["instances"]
        return f'{cell}<br><small class="warn">{share:.0%} answered</small>'
    return cell


@VIEWS.register
class Leaderboard(ReportView):
    name = "leaderboard"

    def html(self, page: ReportPage) -> str:
        if not page.rows:
            return "<h2>Leaderboard</h2>\n<p>No results.</p>\n"
        cols = _metric_columns(page.rows)
        cov = any(coverage_cell(r) for r in page.rows)
        body = []
        for r in page.rows:
            flags = "".join(f' <span class="flag">{html.escape(f)}</span>' for f in page.flags(r["model"]))
            cells = [str(r["rank"]), html.escape(str(r["model"])) + flags] + ([_coverage_html(r)] if cov else [])
            for c in cols:
                n = r.get(f"{c}_n")
                cells.append("–" if r[c] is None else
                             f"{number_cell(r[c])}<br><small>[{number_cell(r[f'{c}_ci_low'])}, {number_cell(r[f'{c}_ci_high'])}]</small>"
                             + (f'<br><small class="warn">n={n}</small>' if small_n(n) else ""))
            body.append(cells)
        descriptions = page.inputs.columns or {}
        legend = []
        for c in cols:
            ns = sorted({r.get(f"{c}_n") for r in page.rows if r.get(f"{c}_n") is not None})
            n = "–" if not ns else str(ns[0]) if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
            legend.append([html.escape(label(c)), html.escape(descriptions.get(c, c)), n])
        unanswered = (" Coverage: instances answered / instances scored; an unanswered instance counts as wrong "
                      "in every score.") if cov else ""
        return ("<h2>Leaderboard</h2>\n<p class=\"meta\">Mean with its 95% bootstrap interval; models with equal "
                f"{html.escape(label(page.inputs.sort_by))} share a rank.{unanswered}</p>\n"
                + table(["rank", "model", *(["coverage"] if cov else []), *(html.escape(label(c)) for c in cols)],
                        body, "board")
                + "<h3>Columns</h3>\n" + table(["column", "what it measures", "n"], legend, "legend"))

    def markdown(self, page: ReportPage) -> str:
        rows = [{**r, "model": r["model"] + "".join(f" ({f})" for f in page.flags(r["model"]))} for r in page.rows]
        return markdown_table(rows)


@VIEWS.register
class Aggregates(ReportView):
    """Every aggregate of every metric (not only the leaderboard columns): GaRAGe attribution and deflection,
    citation counts, Ragas' parts, ..."""

    name = "aggregates"

    def html(self, page: ReportPage) -> str:
        metrics: dict[str, dict[str, Any]] = page.extra.get("metrics") or {}
        models = [m for m in page.models if m in metrics]
        names = sorted({k for m in models for k in metrics[m]})
        body = []
        for metric in names:
            keys = list(dict.fromkeys(k for m in models for k in (metrics[m].get(metric) or {}).get("aggregate", {})))
            for key in keys:
                body.append([html.escape(metric), html.escape(label(key))] + [
                    estimate_cell(((metrics[m].get(metric) or {}).get("aggregate") or {}).get(key)) for m in models])
        if not body:
            return ""
        return "<h2>Every metric</h2>\n" + table(["metric", "aggregate", *map(html.escape, models)], body, "wide")


def metric_views(page: ReportPage) -> list[tuple[Any, dict[str, Any]]]:
    """(metric, its view) for every metric with a view, in registry order (a view's metric must be registered)."""
    views = page.inputs.views or {}
    order = [n for n in registry.names() if n in views] + sorted(set(views) - set(registry.names()))
    return [(registry.get(n), views[n]) for n in order]


@VIEWS.register
class MetricViews(ReportView):
    """Each metric's own section (``Metric.view_html`` / ``view_markdown``): XRAG's accuracy per setting and
    language, MIRAGE's surrogate judge, and whatever a plug-in metric shows."""

    name = "metric_views"

    def html(self, page: ReportPage) -> str:
        return "".join(metric.view_html(view, page) for metric, view in metric_views(page))

    def markdown(self, page: ReportPage) -> str:
        return "".join(metric.view_markdown(view, page) for metric, view in metric_views(page))


@VIEWS.register
class Counts(ReportView):
    """What was counted rather than scored: answers, failed generations, skips, undefined items."""

    name = "counts"

    def html(self, page: ReportPage) -> str:
        counts: dict[str, dict[str, int]] = {m: dict(c) for m, c in (page.extra.get("counts") or {}).items()}
        for model, per_metric in (page.extra.get("metrics") or {}).items():
            for metric, result in per_metric.items():
                for key, n in (result.get("counts") or {}).items():
                    counts.setdefault(model, {})[f"{metric}: {key}"] = n
        models = [m for m in page.models if m in counts] + sorted(set(counts) - set(page.models))
        keys = list(dict.fromkeys(k for m in models for k in counts[m]))
        if not keys:
            return ""
        body = [[html.escape(label(k) if ":" not in k else k.split(": ")[0] + ": " + label(k.split(": ")[1]))]
                + [str(counts[m].get(k, "–")) for m in models] for k in keys]
        return "<h2>Counts</h2>\n" + table(["count", *map(html.escape, models)], body, "wide")


@VIEWS.register
class Figures(ReportView):
    name = "figures"

    def html(self, page: ReportPage) -> str:
        return "".join(f"<h2>{html.escape(name)}</h2>\n<img alt=\"{html.escape(name)}\" src=\"data:image/png;base64,"
                       f"{base64.b64encode(png).decode()}\">\n" for name, png in page.images.items())


MAX_ANSWER_INSTANCES = 200  # the per-answer view lists this many instances; answers.jsonl has them all


def _item_index(page: ReportPage) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """(model, query id) -> metric -> that metric's item (query ids are instance ids or answer ids)."""
    out: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for model, per_metric in (page.extra.get("metrics") or {}).items():
        for metric, result in per_metric.items():
            for item in result.get("items") or []:
                out.setdefault((model, str(item.get("query_id"))), {})[metric] = item
    return out


def _verdict_metrics(items: dict[tuple[str, str], dict[str, dict[str, Any]]]) -> list[Any]:
    """The metrics with their own per-answer column (``Metric.answer_column``), in registry order: those always
    scored and those with items on the page."""
    named = set(registry.ALWAYS) | {m for found in items.values() for m in found}
    metrics = [registry.get(n) for n in registry.names() if n in named]
    return [m for m in metrics if m.answer_column]


def _metric_verdicts(items: dict[str, dict[str, Any]], own_column: set[str]) -> str:
    parts = []
    for metric, item in sorted(items.items()):
        if metric in own_column:
            continue
        keys = registry.get(metric).answer_keys if metric in registry.names() else None
        if keys is None:
            keys = tuple(k for k, v in item.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
        shown = [f"{label(k)} {number_cell(float(item[k]))}" for k in keys
                 if isinstance(item.get(k), (int, float)) and math.isfinite(float(item[k]))]
        if shown:
            parts.append(f"<b>{html.escape(metric)}</b>: " + ", ".join(html.escape(x) for x in shown))
    return "<br>".join(parts)


@VIEWS.register
class Answers(ReportView):
    """Each instance as a reader checks it: question, gold answer, every system's answer with its verdicts
    (each verdict-giving metric's column, e.g. XRAG's judge panel and answer language, then each other metric's
    item scores); unanswered instances say why. The mark next to a system is the first such metric's verdict."""

    name = "answers"

    def html(self, page: ReportPage) -> str:
        answers = list(page.inputs.answers or ())
        if not answers:
            return ""
        by_instance: dict[str, list[Any]] = {}
        for a in answers:
            by_instance.setdefault(a.instance_id, []).append(a)
        order = {m: k for k, m in enumerate(page.models)}
        items = _item_index(page)
        verdict_metrics = _verdict_metrics(items)
        own_column = {m.name for m in verdict_metrics}
        ids = sorted(by_instance)
        blocks = []
        for iid in ids[:MAX_ANSWER_INSTANCES]:
            recs = sorted(by_instance[iid], key=lambda a: (order.get(a.model, len(order)), a.model))
            first = recs[0]
            marks = []
            rows = []
            for a in recs:
                found = {**items.get((a.model, a.instance_id), {}), **items.get((a.model, a.id), {})}
                ok = verdict_metrics[0].answer_verdict(found.get(verdict_metrics[0].name)) if verdict_metrics else None
                marks.append(f"{html.escape(a.model)} {'✓' if ok else '✗' if ok is False else '–'}")
                text = (html.escape(a.answer) if a.ok else
                        f'<span class="warn">not answered: {html.escape(a.error or "no answer")}</span>')
                rows.append([html.escape(a.model), f'<div class="answer">{text}</div>',
                             *(m.answer_html(found.get(m.name)) for m in verdict_metrics),
                             _metric_verdicts(found, own_column)])
            blocks.append(
                f"<details><summary><b>{html.escape(iid)}</b> · {html.escape(first.setting)}/"
                f"{html.escape(first.language)} · {' · '.join(marks)}</summary>\n"
                f'<p><b>Question:</b> {html.escape(first.question)}<br><b>Gold answer:</b> '
                f"{html.escape(first.gold_answer)}</p>\n"
                + table(["system", "answer", *(m.answer_column for m in verdict_metrics), "metric scores"], rows,
                        "answers")
                + "</details>\n")
        more = (f"<p class=\"meta\">The first {MAX_ANSWER_INSTANCES} of {len(ids)} instances; answers.jsonl has every "
                "answer and results.json every item.</p>\n" if len(ids) > MAX_ANSWER_INSTANCES else "")
        means = (f" (✓ {verdict_metrics[0].answer_verdict_means}, ✗ not, – no verdict)"
                 if verdict_metrics and verdict_metrics[0].answer_verdict_means else "")
        return ("<h2>Answers</h2>\n<p class=\"meta\">Each instance: the question, the gold answer and every system's "
                f"answer with its verdicts{means}. Click an "
                "instance to open it.</p>\n" + more + "".join(blocks))


CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
p,li,h1,h2,h3{overflow-wrap:anywhere}
.table-wrap{max-width:100%;overflow-x:auto;margin:.5em 0 1em}
table{border-collapse:collapse;font-size:14px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right;
vertical-align:top;overflow-wrap:break-word}th{background:#f3f3f3}td small{color:#555;white-space:nowrap}
table.board td:first-child,table.board th:first-child,table.wide td:first-child,table.wide td:nth-child(2)
{white-space:nowrap}table.board td:nth-child(2){min-width:14em;max-width:22em}
table.board td:nth-child(2),table.board th:nth-child(2),table.legend td,table.legend th,table.wide td:first-child,
table.wide td:nth-child(2){text-align:left}
img{max-width:100%;margin:1em 0}.meta{color:#555;font-size:13px}
.notice{border:1px solid #d9a400;background:#fff8e1;padding:.5em 1em;margin:1em 0}
.flag{font-size:12px;background:#fde2e2;color:#8a1c1c;border-radius:3px;padding:0 4px;white-space:nowrap}
.warn{color:#8a1c1c}.ok{color:#1b6e20}
details{border:1px solid #ddd;border-radius:4px;margin:.4em 0;padding:.3em .6em}summary{cursor:pointer}
table.answers td,table.answers th{text-align:left}table.answers td:nth-child(2){min-width:18em;max-width:36em}
.answer{white-space:pre-wrap;max-height:12em;overflow-y:auto}"""


def render_html(page: ReportPage) -> str:
    """The page: title, provenance (dataset, revision, split, configs, code), then every view in order."""
    info = page.inputs.info
    meta = " · ".join(f"{k}: {html.escape(', '.join(v) if isinstance(v, list) else str(v))}"
                      for k, v in asdict(info).items() if k != "settings" and v not in ("", []))
    body = "".join(view.html(page) for view in VIEWS.all())
    title = html.escape(page.inputs.title)
    return (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">"
            f"<title>{title}</title><style>{CSS}</style></head><body>\n<h1>{title}</h1>\n"
            f"<p class=\"meta\">{meta}</p>\n{body}</body></html>\n")


def render_markdown(page: ReportPage) -> str:
    return f"# {page.inputs.title}\n\n" + "".join(view.markdown(page) for view in VIEWS.all())
