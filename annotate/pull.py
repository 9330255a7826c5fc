"""Pull responses back from Argilla: one row per (record, annotator) with who, when and status.

Read over Argilla's REST API (``argilla_api``; the SDK drops response timestamps). Rows are sorted and written as
JSONL atomically (``babelrag.atomic``); a second pull of unchanged data leaves the file byte-for-byte
identical (and untouched). Drafts and discards are kept with their status; agreement and merging use
submitted responses only. Records nobody has answered yet are counted as pending.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from babelrag.atomic import atomic_write_text
from babelrag.rows import iter_jsonl

from .argilla_api import adjudication_datasets, iter_records, project_datasets, question_names, usernames
from .merge import answer_verdicts, forced_choice_outcomes
from .settings import AnnotateSettings


@dataclass
class PullResult:
    project: str
    path: Path
    datasets: list[str]
    records: int
    responses: int
    changed: bool
    by_status: dict[str, int] = field(default_factory=dict)


def fetch_rows(rg_client, settings: AnnotateSettings, project: str,
               datasets: Optional[list[Any]] = None) -> tuple[list[dict], list[dict]]:
    """(response rows, record rows) for every dataset of a project (or the given ``datasets``: its
    adjudication datasets), in a stable order."""
    names = usernames(rg_client)
    responses, records = [], []
    for ds in project_datasets(rg_client, settings, project) if datasets is None else datasets:
        questions = question_names(rg_client, str(ds.id))
        for rec in iter_records(rg_client, str(ds.id)):
            sugs = rec.get("suggestions", [])
            suggestions = {questions.get(s["question_id"], s["question_id"]): s["value"] for s in sugs}
            agents = {questions.get(s["question_id"], s["question_id"]): s.get("agent") for s in sugs}
            records.append({
                "project": project, "dataset": ds.name, "record_id": rec["external_id"] or rec["id"],
                "argilla_id": rec["id"], "status": rec["status"], "fields": rec["fields"],
                "metadata": rec.get("metadata") or {}, "suggestions": suggestions, "suggestion_agents": agents,
            })
            for r in rec.get("responses", []):
                responses.append({
                    "project": project, "dataset": ds.name, "record_id": rec["external_id"] or rec["id"],
                    "user_id": r["user_id"], "annotator": names.get(r["user_id"], r["user_id"]),
                    "status": r["status"],
                    "values": {q: v.get("value") for q, v in sorted((r.get("values") or {}).items())},
                    "inserted_at": r["inserted_at"], "updated_at": r["updated_at"],
                })
    responses.sort(key=lambda r: (r["dataset"], r["record_id"], r["annotator"]))
    records.sort(key=lambda r: (r["dataset"], r["record_id"]))
    return responses, records


def _write_if_changed(path: Path, rows: list[dict]) -> bool:
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    atomic_write_text(path, text)
    return True


def adjudication_path(out_dir: Path, project: str) -> Path:
    """The adjudicators' responses (``annotate adjudicate``), pulled beside the annotators'."""
    return Path(out_dir) / f"{project}.adjudication.responses.jsonl"


def pull(rg_client, settings: AnnotateSettings, project: str, out_dir: Path) -> PullResult:
    """Write ``<out_dir>/<project>.responses.jsonl`` and ``<project>.records.jsonl``, and the adjudicators'
    responses (``<project>.adjudication.responses.jsonl``) when the project has adjudication datasets."""
    responses, records = fetch_rows(rg_client, settings, project)
    out_dir = Path(out_dir)
    path = out_dir / f"{project}.responses.jsonl"
    changed = _write_if_changed(path, responses)
    changed = _write_if_changed(out_dir / f"{project}.records.jsonl", records) or changed
    adjudication = adjudication_datasets(rg_client, settings, project)
    if adjudication:
        changed = _write_if_changed(adjudication_path(out_dir, project),
                                    fetch_rows(rg_client, settings, project, adjudication)[0]) or changed
    return PullResult(
        project, path, sorted({r["dataset"] for r in records}), len(records), len(responses), changed,
        dict(Counter(r["status"] for r in responses)),
    )


def read_responses(path: Path) -> list[dict]:
    return [row for _, row in iter_jsonl(Path(path))]


def project_annotators(settings: AnnotateSettings, project: str) -> list[str]:
    """Configured users who can annotate the project (their workspaces include the project's)."""
    workspace = settings.project(project).workspace or settings.workspace
    return [u.username for u in settings.users if workspace in settings.user_workspaces(u)]


def status_table(responses: list[dict], records: list[dict], annotators: list[str] = ()) -> list[dict]:
    """Progress rows: per project (when it has several datasets) and per dataset, then one row per annotator
    of each dataset -- every name in ``annotators`` (the config's, 0 done included) plus anyone else who
    answered. An annotator's pending = records not completed yet that they have not answered."""
    rows = []
    by_ds = _group(records, "dataset")

    def progress(done: int, total: int) -> str:
        return f"{100 * done / total:.0f}%" if total else "-"

    for project, recs in sorted(_group(records, "project").items()):
        datasets = {r["dataset"] for r in recs}
        if len(datasets) > 1:
            done = sum(1 for r in recs if r["status"] == "completed")
            rows.append({"dataset": f"{project} ({len(datasets)} datasets)", "annotator": "(all)", "records": len(recs),
                         "completed": done, "pending": len(recs) - done, "submitted": None, "draft": None,
                         "discarded": None, "progress": progress(done, len(recs))})
    for ds, recs in sorted(by_ds.items()):
        done = sum(1 for r in recs if r["status"] == "completed")
        rows.append({"dataset": ds, "annotator": "(all)", "records": len(recs), "completed": done,
                     "pending": len(recs) - done, "submitted": None, "draft": None, "discarded": None,
                     "progress": progress(done, len(recs))})
        completed = {r["record_id"] for r in recs if r["status"] == "completed"}
        answered: dict[str, set[str]] = defaultdict(set)
        per_user: dict[str, Counter] = defaultdict(Counter)
        for r in responses:
            if r["dataset"] == ds:
                per_user[r["annotator"]][r["status"]] += 1
                answered[r["annotator"]].add(r["record_id"])
        for user in list(dict.fromkeys([*annotators, *sorted(per_user)])):
            c = per_user[user]
            pending = sum(1 for r in recs if r["record_id"] not in completed and r["record_id"] not in answered[user])
            rows.append({"dataset": ds, "annotator": user, "records": len(recs), "completed": None,
                         "pending": pending, "submitted": c["submitted"], "draft": c["draft"],
                         "discarded": c["discarded"], "progress": None})
    return rows


def _group(rows: list[dict], key: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        out[row[key]].append(row)
    return out


def read_adjudications(out_dir: Path, project: str) -> list[dict]:
    path = adjudication_path(out_dir, project)
    return read_responses(path) if path.exists() else []


def write_decisions(project: str, out_dir: Path, min_submitted: int) -> Path:
    """Human decisions for evaluators (the annotators' majority, or the adjudicator's verdict):
    forced-choice picks mapped back to better/worse, or verdicts."""
    out_dir = Path(out_dir)
    responses = read_responses(out_dir / f"{project}.responses.jsonl")
    adjudications = read_adjudications(out_dir, project)
    if project == "forced_choice":
        rows = forced_choice_outcomes(responses, read_responses(out_dir / f"{project}.records.jsonl"), min_submitted,
                                      adjudications)
    else:
        rows = answer_verdicts(responses, min_submitted, adjudications)
    path = out_dir / f"{project}.decisions.jsonl"
    _write_if_changed(path, rows)
    return path
