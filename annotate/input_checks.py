"""Checks a push runs on the whole input before its first request to the server.

Why: the server finds some problems only mid-push (an empty required text is "Record at position 1",
a lone surrogate breaks httpx's JSON encoding, a repeated id in one batch is a 422 naming no id) and
leaves an empty or half-filled dataset behind; a repeated id in a later batch silently replaces the
earlier record. Here every problem is found first and reported together by record id, so nothing is
created until the input is clean. Reading the input file (decoding, JSON) is ``babelrag.rows``'s job.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from babelrag.errors import InputError

from .projects import ProjectRecord, ProjectSpec, shown_fields  # noqa: F401 - shown_fields: re-exported
from .stored import Content, changed

# Lone UTF-16 surrogates cannot be encoded as UTF-8 (JSON to the server fails mid-push).
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls other than tab, newline and carriage return, DEL and C1 controls: invisible in the UI and
# usually the mark of a broken conversion.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
MAX_ID_CHARS = 200  # ids are URLs' path segments in the server API and keys in exports: keep them short
MAX_FIELD_CHARS = 200_000  # one field's text; far beyond what an annotator reads
MAX_RECORD_CHARS = 1_000_000  # all fields, metadata and suggestions of one record
MAX_SHOWN = 30


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one record, and where (a field, metadata key or suggestion)."""

    record_id: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"record {self.record_id}: {self.where}: {self.message}"


def _text_problems(text: str) -> list[str]:
    found = []
    m = _SURROGATE.search(text)
    if m:
        found.append(f"lone surrogate U+{ord(m.group()):04X} at character {m.start() + 1} (not encodable as "
                     "UTF-8; the file had a broken \\ud8xx escape: fix the text)")
    m = _CONTROL.search(text)
    if m:
        found.append(f"control character U+{ord(m.group()):04X} at character {m.start() + 1} (remove it)")
    return found


def _values(record: ProjectRecord) -> Iterable[tuple[str, Any]]:
    yield "id", record.id
    for name, value in record.fields.items():
        yield f"field {name}", value
    for name, value in record.metadata.items():
        yield f"metadata {name}", value
    for s in record.suggestions:
        yield f"suggestion {s.question}", s.value
        yield f"suggestion {s.question} agent", s.agent


def record_problems(record: ProjectRecord, spec: ProjectSpec) -> list[Problem]:
    """Problems of one record on its own: text encoding, empty required fields, sizes."""
    rid = record.id if record.id else "(empty id)"
    out: list[Problem] = []
    if not str(record.id).strip():
        out.append(Problem(rid, "id", "empty id: every record needs a unique id"))
    elif len(record.id) > MAX_ID_CHARS:
        out.append(Problem(rid, "id", f"{len(record.id)} characters; at most {MAX_ID_CHARS}"))
    total = 0
    for where, value in _values(record):
        if not isinstance(value, str):
            continue
        total += len(value)
        out += [Problem(rid, where, msg) for msg in _text_problems(value)]
        if where.startswith("field ") and len(value) > MAX_FIELD_CHARS:
            out.append(Problem(rid, where, f"{len(value):,} characters; at most {MAX_FIELD_CHARS:,} (shorten it)"))
    for f in spec.fields:
        if f.required and not str(record.fields.get(f.name) or "").strip():
            out.append(Problem(rid, f"field {f.name}", "empty, but annotators need it (required field)"))
    if total > MAX_RECORD_CHARS:
        out.append(Problem(rid, "record", f"{total:,} characters in all; at most {MAX_RECORD_CHARS:,}"))
    return out


def duplicate_problems(records: list[ProjectRecord]) -> list[Problem]:
    """Ids that occur more than once in the input (positions are 1-based, in input order)."""
    counts = Counter(r.id for r in records)
    out = []
    for rid, n in counts.items():
        if n > 1:
            positions = [i for i, r in enumerate(records, 1) if r.id == rid]
            out.append(Problem(rid, "id", f"appears {n} times (records {', '.join(map(str, positions))}); "
                                          "ids must be unique: remove or rename the copies"))
    return out


def check_input(records: list[ProjectRecord], spec: ProjectSpec) -> list[Problem]:
    """Every local problem of the input (no server needed)."""
    out = duplicate_problems(records)
    for r in records:
        out += record_problems(r, spec)
    return out


def existing_problems(records: list[ProjectRecord], existing: Mapping[str, Content],
                      update: bool) -> list[Problem]:
    """Records whose id is already in the dataset with other content (fields, metadata or suggestions):
    replaced only with ``--update``. Identical ones are not problems: they landed in an earlier (possibly
    interrupted) push."""
    return conflicts(changed(records, existing), existing, update)


def conflicts(todo: list[ProjectRecord], existing: Mapping[str, Content], update: bool) -> list[Problem]:
    """Of the records whose content differs from the dataset's (``stored.changed``), those already in it: a
    problem unless ``update``. For a caller that has ``todo`` already (a push)."""
    if update:
        return []
    return [Problem(r.id, "id", "already in the dataset with different content; pass --update to replace it "
                                "(its annotators' responses are kept)")
            for r in todo if r.id in existing]


def raise_problems(problems: list[Problem], source: str, dataset: Optional[str] = None) -> None:
    """One InputError (exit 2) listing every problem, or nothing if the list is empty."""
    if not problems:
        return
    ids = len({p.record_id for p in problems})
    lines = [f"  {p}" for p in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        lines.append(f"  ... and {len(problems) - MAX_SHOWN} more")
    target = f" to {dataset}" if dataset else ""
    raise InputError(f"{source}: {len(problems)} problem(s) in {ids} record(s); nothing was pushed{target}. "
                     "Fix them and push again:\n" + "\n".join(lines))
