"""A record as the server holds it and as a push would leave it, compared to decide what a push sends.

Why the suggestions and metadata count, not only the fields: a re-judged verdict or another suggestion
mode changes only them, and a push that looked at the fields alone left the old ones on the server while
the local suggestion log recorded the new. Why stale suggestions are deleted on update: the server's
upsert replaces a record's fields and metadata but writes suggestions question by question, so a
question no longer suggested (mode ``show``/``off`` now) would keep its old, pre-selected answer.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from .argilla_api import iter_records, question_names
from .projects import HINTS, ProjectRecord, shown_fields, shown_metadata


@dataclass(frozen=True)
class Content:
    """What annotators see and the suggestion log records: fields, metadata, suggestions by question
    (value, agent, score), as JSON values."""

    fields: dict[str, Any]
    metadata: dict[str, Any]
    suggestions: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class ServerRecord:
    """A record in a dataset: Argilla's own id, its content, and its suggestions' ids by question."""

    argilla_id: str
    content: Content
    suggestion_ids: dict[str, str]


def _json(value: Any) -> Any:
    """As the server gives it back (tuples become lists; ints and floats stay as they are)."""
    return json.loads(json.dumps(value, ensure_ascii=False))


def content(record: ProjectRecord) -> Content:
    """What a push sends for ``record`` (``projects.to_argilla_records``), as the server stores it."""
    return Content(_json(shown_fields(record)), _json(shown_metadata(record)),
                   {s.question: _json({"value": s.value, "agent": s.agent or None, "score": s.score})
                    for s in record.suggestions})


def server_records(rg_client, dataset_id: str) -> dict[str, ServerRecord]:
    """External id -> every record of the dataset, with suggestions and without responses."""
    questions = question_names(rg_client, dataset_id)
    return {rec["external_id"] or rec["id"]: _server_record(rec, questions)
            for rec in iter_records(rg_client, dataset_id, include="suggestions")}


def _server_record(rec: dict, questions: dict[str, str]) -> ServerRecord:
    sugs = {questions.get(s["question_id"], s["question_id"]): s for s in rec.get("suggestions") or []}
    return ServerRecord(
        rec["id"],
        Content(rec.get("fields") or {}, rec.get("metadata") or {},
                {q: {"value": s["value"], "agent": s.get("agent"), "score": s.get("score")} for q, s in sugs.items()}),
        {q: s["id"] for q, s in sugs.items()},
    )


def stale_suggestions(record: ProjectRecord, held: ServerRecord) -> list[str]:
    """Ids of the server's suggestions for questions ``record`` no longer suggests (sorted by question)."""
    now = {s.question for s in record.suggestions}
    return [sid for q, sid in sorted(held.suggestion_ids.items()) if q not in now]


def judged_changed(record: ProjectRecord, held: ServerRecord) -> bool:
    """Whether what annotators judged changed: any field but the hints line (a re-judged verdict or another
    suggestion mode changes only the hints, suggestions or metadata; their responses still hold)."""
    def judged(fields: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in fields.items() if k != HINTS.name}

    return judged(content(record).fields) != judged(held.content.fields)


def changed(records: list[ProjectRecord], held: Mapping[str, Content]) -> list[ProjectRecord]:
    """The records a push sends: not in the dataset yet, or there with other content."""
    return [r for r in records if r.id not in held or content(r) != held[r.id]]
