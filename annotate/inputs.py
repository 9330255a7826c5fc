"""Input record types for the projects that have no core record type, and loading of input files.

Core types (``QAItem``, ``Instance``) come from ``babelrag.records``; contrastive pairs and model
answers are produced by evaluators and arrive here as JSONL rows of the shapes below.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from babelrag.errors import InputError

M = TypeVar("M", bound=BaseModel)


class ContrastivePair(BaseModel):
    """Two responses of which construction says one is better (Ragas-for-Romanian contrastive pairs)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    criterion: Literal["faithfulness", "answer_relevance", "context_relevance"]
    question: str
    context: str = ""
    better: str  # the response construction says is better
    worse: str
    language: str = "en"
    judge_choice: Optional[Literal["better", "worse"]] = None  # an LLM judge's pick, shown as a suggestion


class ModelAnswer(BaseModel):
    """A model's answer to a benchmark question, with the judge panel's majority verdict if any."""

    model_config = ConfigDict(extra="forbid")
    id: str
    qa_id: str
    model: str
    question: str
    gold_answer: str
    answer: str
    language: str = "en"
    setting: str = ""
    judge_verdict: Optional[Literal["correct", "incorrect"]] = None


def read_rows(path: Path) -> list[dict]:
    """Rows of a .jsonl or .parquet file; bad lines raise InputError naming file and line."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    rows = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg}); fix or remove the line") from None
            if not isinstance(row, dict):
                raise InputError(f"{path}:{lineno}: expected a JSON object per line")
            rows.append(row)
    if not rows:
        raise InputError(f"{path}: no records")
    return rows


def parse(model: type[M], rows: list[dict], source: str = "input") -> list[M]:
    """Validate rows as ``model``; the first bad one raises InputError with its id and the problem."""
    out = []
    for i, row in enumerate(rows):
        if isinstance(row, model):
            out.append(row)
            continue
        try:
            out.append(model.model_validate(row))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            rid = row.get("id", f"#{i}") if isinstance(row, dict) else f"#{i}"
            raise InputError(
                f"{source}: record {rid}: {where}: {first['msg']} (expected a {model.__name__})"
            ) from None
    return out
