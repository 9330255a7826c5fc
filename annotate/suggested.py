"""What the pipeline answered for each judgement question, and how annotators saw it (local record).

Why: in suggestion modes ``show`` and ``off`` the pipeline's answer is not an Argilla suggestion, so a
pull cannot return it; agreement between humans and the pipeline, per mode, needs it. The push writes
``<out>/<project>.suggested.jsonl`` (one row per dataset and record: mode, values, agents), replacing the
rows of the dataset it pushed; ``annotate agreement`` reads it.
"""
from __future__ import annotations

import json
from pathlib import Path

from babelrag.atomic import atomic_write_text
from babelrag.rows import iter_jsonl

from .projects import ProjectRecord, spec


def suggested_path(out_dir: Path, project: str) -> Path:
    return Path(out_dir) / f"{project}.suggested.jsonl"


def read_suggested(out_dir: Path, project: str) -> list[dict]:
    path = suggested_path(out_dir, project)
    return [row for _, row in iter_jsonl(path)] if path.exists() else []


def write_suggested(out_dir: Path, project: str, dataset: str, mode: str, records: list[ProjectRecord]) -> Path:
    """Record the judgement suggestions of ``records`` (sent or withheld) for ``dataset``."""
    labels = set(spec(project).label_questions)
    rows = [r for r in read_suggested(out_dir, project) if r["dataset"] != dataset]
    for rec in records:
        judged = [s for s in rec.suggestions + rec.withheld if s.question in labels]
        rows.append({"dataset": dataset, "record_id": rec.id, "mode": mode,
                     "suggestions": {s.question: s.value for s in judged},
                     "suggestion_agents": {s.question: s.agent for s in judged}})
    rows.sort(key=lambda r: (r["dataset"], r["record_id"]))
    path = suggested_path(out_dir, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))
    return path
