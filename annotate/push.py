"""Create workspaces/users from config and push project records to Argilla (idempotently).

The server and the requests are ``argilla_api``'s (``resolve_target``: a hosted Argilla from
``ARGILLA_API_URL``/``ARGILLA_API_KEY``, else the local server of ``babelrag annotate serve``). Records are keyed by the build's record
id: pushing the same records twice sends nothing the second time and keeps existing responses; a
record whose content changed (fields, metadata or suggestions: ``stored``) is replaced only with
``--update``, keeping its responses.
"""
from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from babelrag.atomic import atomic_write_text
from babelrag.errors import InputError, StageError

from .argilla_api import delete_response, delete_suggestions, get_dataset, quiet, record_responses, usernames
from . import input_checks  # called through the module: the CLI test counts the checks it runs
from .projects import ProjectRecord, spec, to_argilla_records, to_argilla_settings
from .server.process import write_private
from .settings import AnnotateSettings
from .stored import changed, judged_changed, server_records, stale_suggestions


def user_credentials_path(settings: AnnotateSettings) -> Path:
    return settings.server.resolved_home() / "users.json"


def ensure_users(rg_client, settings: AnnotateSettings) -> dict[str, str]:
    """Create workspaces and users (idempotent); generated passwords go to ``users.json`` (mode 0600)."""
    import argilla as rg

    workspaces = {}
    for name in dict.fromkeys([*settings.all_workspaces(), *(w for u in settings.users for w in settings.user_workspaces(u))]):
        ws = quiet(rg_client.workspaces, name)
        workspaces[name] = ws if ws is not None else rg.Workspace(name=name, client=rg_client).create()
    members = {name: {u.username for u in ws.users} for name, ws in workspaces.items()}
    path = user_credentials_path(settings)
    stored: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    for u in settings.users:
        user = quiet(rg_client.users, u.username)
        if user is None:
            password = u.password or stored.get(u.username) or secrets.token_urlsafe(12)
            role = "annotator" if u.role == "adjudicator" else u.role
            user = rg.User(username=u.username, password=password, role=role, first_name=u.first_name or u.username,
                           client=rg_client).create()
            if not u.password:  # save at once: a later failure must not lose the password
                stored[u.username] = password
                path.parent.mkdir(parents=True, exist_ok=True)
                write_private(path, stored)
        for ws in settings.user_workspaces(u):
            if u.username not in members[ws]:
                user.add_to_workspace(workspaces[ws])
    return stored


@dataclass
class PushResult:
    dataset: str
    workspace: str
    records: int  # in the input
    new: int  # not in the dataset before
    updated: int  # in the dataset with other content, replaced (--update)
    unchanged: int  # already in the dataset as given: an earlier push landed them; not sent again
    seconds: float
    stale_responses: int = 0  # responses to records whose judged content changed: moved to the audit file
    audit_file: Optional[Path] = None

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


class PartialPush(StageError):
    """A push that failed after some batches landed: says which, so the user can check and re-run."""

    def __init__(self, message: str, landed: list[str]) -> None:
        super().__init__(message)
        self.landed = landed


@dataclass
class PushPlan:
    """What a push will do, decided before anything is written: the dataset (None: to be created), the
    records to send, how many of them replace changed records, and per replaced record (by external id)
    its Argilla id and the ids of its suggestions the new content no longer has (deleted after the send)."""

    project: str
    name: str
    workspace: str
    dataset: Any
    records: list[ProjectRecord]
    todo: list[ProjectRecord]
    updated: int
    stale: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    # per replaced record whose judged content changed (by external id): its responses, as pull writes them
    # (plus the response id and the fields they judged); they become stale when the new content lands
    stale_responses: dict[str, list[dict]] = field(default_factory=dict)


def plan_push(rg_client, settings: AnnotateSettings, project: str, records: list[ProjectRecord], suffix: str = "",
              update: bool = False, source: str = "input", checked: bool = False) -> PushPlan:
    """Check the whole input, against the dataset too if it exists (reads only): every problem is raised
    together by record id (``input_checks``), before anything is written. Records already in the
    dataset with the same content (fields, metadata, suggestions) are left out (a re-run after a failed
    push resumes); with other content they are an error unless ``update``. ``checked``: the caller ran
    ``check_input`` on these records already (the CLI checks every language's records before connecting)."""
    name, workspace = settings.dataset_name(project, suffix), settings.project(project).workspace or settings.workspace
    problems = [] if checked else input_checks.check_input(records, spec(project))
    dataset = get_dataset(rg_client, name, workspace)
    if dataset is not None:
        _check_dataset_fields(dataset, records)
    held = server_records(rg_client, str(dataset.id)) if dataset is not None else {}
    existing = {rid: h.content for rid, h in held.items()}
    todo = changed(records, existing)
    problems += input_checks.conflicts(todo, existing, update)  # only the changed ones can be problems
    input_checks.raise_problems(problems, source, name)
    stale = {r.id: (held[r.id].argilla_id, ids) for r in todo
             if r.id in held and (ids := stale_suggestions(r, held[r.id]))}
    answered = {}
    if update and dataset is not None:
        names: dict[str, str] = {}
        for r in todo:
            if r.id in held and judged_changed(r, held[r.id]):
                rows = record_responses(rg_client, held[r.id].argilla_id)
                if rows:
                    names = names or usernames(rg_client)
                    answered[r.id] = [_stale_row(project, name, r.id, row, names, held[r.id].content.fields)
                                      for row in rows]
    return PushPlan(project, name, workspace, dataset, records, todo, sum(1 for r in todo if r.id in existing), stale,
                    answered)


def _stale_row(project: str, dataset: str, record_id: str, response: dict, names: dict[str, str],
               judged: dict[str, Any]) -> dict:
    """A response to content that is being replaced, in pull's row shape, marked stale: its status when it
    was given is ``was``; ``judged_fields`` is the content it answered."""
    return {"project": project, "dataset": dataset, "record_id": record_id, "response_id": response["id"],
            "user_id": response["user_id"], "annotator": names.get(response["user_id"], response["user_id"]),
            "status": "stale", "was": response["status"],
            "values": {q: v.get("value") for q, v in sorted((response.get("values") or {}).items())},
            "inserted_at": response["inserted_at"], "updated_at": response["updated_at"], "judged_fields": judged}


def stale_audit_path(audit_dir: Path, dataset: str) -> Path:
    """Where a push keeps the responses it made stale (one JSONL per dataset, appended to)."""
    return Path(audit_dir) / f"{dataset}.stale-responses.jsonl"


def _keep_stale(path: Path, rows: list[dict], when: str) -> None:
    """Append ``rows`` (stamped ``stale_since``) to the audit file, atomically (before anything is deleted)."""
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    atomic_write_text(path, before + "".join(json.dumps({**r, "stale_since": when}, ensure_ascii=False, sort_keys=True)
                                             + "\n" for r in rows))


def run_push(rg_client, settings: AnnotateSettings, plan: PushPlan, batch_size: int = 256,
             after_batch: Optional[Callable[[int, list[str]], None]] = None,
             audit_dir: Optional[Path] = None) -> PushResult:
    """Create users, workspaces and the dataset if needed, then send the plan's records in batches (and
    delete the suggestions replaced records no longer have). Responses to a replaced record whose judged
    content changed become stale: appended to ``<audit_dir>/<dataset>.stale-responses.jsonl`` (default
    ``audit_dir``: the server home), then deleted on the server, so merge and agreement never count them
    and the record is back in the annotators' queues. A failure after some batches landed raises
    ``PartialPush`` naming them. ``after_batch(n, landed_ids)`` runs after each batch (progress; tests use
    it to interrupt a push)."""
    import argilla as rg

    t0 = time.perf_counter()
    ensure_users(rg_client, settings)
    dataset = plan.dataset
    if dataset is None:
        dataset = rg.Dataset(name=plan.name, workspace=plan.workspace,
                             settings=to_argilla_settings(plan.project, settings, rg_client), client=rg_client).create()
    landed: list[str] = []
    audit = stale_audit_path(audit_dir or settings.server.resolved_home(), plan.name)
    made_stale = 0
    step = max(1, batch_size)
    for n, start in enumerate(range(0, len(plan.todo), step), 1):
        batch = plan.todo[start:start + step]
        try:
            dataset.records.log(to_argilla_records(batch), batch_size=len(batch))
        except Exception as exc:  # noqa: BLE001 - SDK and HTTP errors alike: report what landed first
            raise PartialPush(_partial_message(plan.name, landed, len(plan.todo), exc), landed) from None
        landed += [r.id for r in batch]  # on the server now, whatever happens to the stale suggestions
        try:
            for r in batch:
                if r.id in plan.stale:
                    delete_suggestions(rg_client, *plan.stale[r.id])
            old = [row for r in batch for row in plan.stale_responses.get(r.id, [])]
            if old:
                _keep_stale(audit, old, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
                for row in old:
                    delete_response(rg_client, row["response_id"])
                made_stale += len(old)
        except Exception as exc:  # noqa: BLE001 - a re-run with --update deletes them (the records differ)
            raise PartialPush(_partial_message(plan.name, landed, len(plan.todo), exc), landed) from None
        if after_batch is not None:
            after_batch(n, list(landed))
    total, sent = len(plan.records), len(plan.todo)
    return PushResult(plan.name, plan.workspace, total, sent - plan.updated, plan.updated, total - sent,
                      time.perf_counter() - t0, made_stale, audit if made_stale else None)


def push(rg_client, settings: AnnotateSettings, project: str, records: list[ProjectRecord], suffix: str = "",
         batch_size: int = 256, update: bool = False, source: str = "input",
         after_batch: Optional[Callable[[int, list[str]], None]] = None,
         audit_dir: Optional[Path] = None) -> PushResult:
    """``plan_push`` then ``run_push``: nothing is written unless the whole input passes."""
    plan = plan_push(rg_client, settings, project, records, suffix, update, source)
    return run_push(rg_client, settings, plan, batch_size, after_batch, audit_dir)


def _check_dataset_fields(dataset, records: list[ProjectRecord]) -> None:
    """A dataset made by an older version may lack a field the records now use (e.g. ``hints``)."""
    have = {f.name for f in dataset.settings.fields}
    missing = sorted({k for r in records for k, v in r.fields.items() if v not in (None, "")} - have)
    if missing:
        raise InputError(f"dataset {dataset.name} has no field(s) {', '.join(missing)} (created by an older version); "
                         "push into a new annotate.dataset_prefix, or delete the dataset, or for `hints` set "
                         "annotate.projects.<project>.suggestions: preselect or off")


def _partial_message(dataset: str, landed: list[str], total: int, exc: Exception) -> str:
    if landed:
        shown = ", ".join(landed[:10]) + (f", ... ({len(landed) - 10} more)" if len(landed) > 10 else "")
        what = f"{len(landed)} of {total} records landed before it failed ({shown})"
    else:
        what = f"none of the {total} records landed"
    detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    return (f"push to {dataset} failed midway: {what}: {detail}. Re-run the same command when the server is "
            "back: records that landed are skipped, the rest are pushed (no duplicates).")
