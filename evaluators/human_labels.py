"""Human verdicts on model answers (``babelrag annotate pull answer_judgement`` writes them to
``<build>/annotate/answer_judgement.decisions.jsonl``: the annotators' majority, or the adjudicator's) as
the evaluation reads them: answer id -> correct?, so the judges' agreement with humans is measured.

Why by answer id: a decision is about one model's answer to one instance (``AnswerRecord.id``); the
same instance answered by another model is another item.
"""
from __future__ import annotations

from pathlib import Path

from babelrag.errors import InputError
from babelrag.rows import iter_jsonl

VERDICTS = {"correct": True, "incorrect": False}


def read_human_verdicts(path: Path) -> dict[str, bool]:
    """Answer id -> True (correct) / False (incorrect); undecided rows (``human_verdict`` null) are left
    out. A row without ``id`` or with another verdict names file, line and the fix."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path} not found: run `babelrag annotate pull answer_judgement` (it writes the "
                         "decisions file) or point --human at it")
    out: dict[str, bool] = {}
    for n, row in iter_jsonl(path):
        verdict = row.get("human_verdict")
        if not isinstance(row.get("id"), str) or (verdict is not None and verdict not in VERDICTS):
            raise InputError(f"{path}:{n}: expected {{\"id\": answer id, \"human_verdict\": correct|incorrect|null}} "
                             f"as `annotate pull answer_judgement` writes it, got {str(row)[:120]}")
        if verdict is not None:
            out[row["id"]] = VERDICTS[verdict]
    return out
