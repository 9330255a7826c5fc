"""``evaluate run --answers FILE.jsonl``: score answers produced elsewhere (your own RAG system).

One JSON object per line::

    {"instance_id": "...", "model": "my-rag", "answer": "... [1] ...",
     "doc_order": ["<article_id>", ...]}      # optional: the documents in the order your system showed them

``instance_id``, ``model`` and ``answer`` are required. ``doc_order`` is needed only when the documents were
not shown in the release's own order (the order of ``documents`` in the release row); citations ``[n]``
(or a converted benchmark's keys, e.g. GaRAGe's ``[cite_n]``) refer to positions in that order. Optional
``style`` ("citations" default, "articles", "closed-book") says which metrics apply, as for generated
answers. Answers become the same ``AnswerRecord``s generation writes, so metrics, leaderboard and report
are the same. Every problem names the file, line and field: an unknown instance id, a missing or mistyped
field, a document id the instance does not have, a repeated (model, instance) pair.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from babelrag.errors import InputError
from babelrag.records import AnswerRecord, Instance
from babelrag.rows import BadLine, iter_jsonl

REQUIRED = ("instance_id", "model", "answer")
OPTIONAL = ("doc_order", "style")
STYLES = ("citations", "articles", "closed-book")
MAX_PROBLEMS = 20
SOURCE = "answers-file"  # the prompt id recorded for answers made elsewhere
UNANSWERED = "not in the answers file"  # the error of an instance a system of the file did not answer


def _problems(obj: Any, by_id: Mapping[str, Instance]) -> list[str]:
    if not isinstance(obj, dict):
        return [f"not a JSON object ({type(obj).__name__})"]
    issues = [f"missing field {name!r}" for name in REQUIRED if name not in obj]
    issues += [f"field {name!r} must be a string" for name in REQUIRED if name in obj and not isinstance(obj[name], str)]
    unknown = sorted(set(obj) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        issues.append(f"unknown field(s) {unknown} (allowed: {', '.join(REQUIRED + OPTIONAL)})")
    if isinstance(obj.get("model"), str) and not obj["model"].strip():
        issues.append("field 'model' is empty")
    if obj.get("style", "citations") not in STYLES:
        issues.append(f"style {obj.get('style')!r} is not one of {', '.join(STYLES)}")
    iid = obj.get("instance_id")
    inst = by_id.get(iid) if isinstance(iid, str) else None
    if isinstance(iid, str) and inst is None:
        issues.append(f"unknown instance_id {iid!r} (not in the release split scored; check --split and configs)")
    order = obj.get("doc_order")
    if order is not None:
        if not isinstance(order, list) or not all(isinstance(x, str) for x in order):
            issues.append("doc_order must be a list of document ids (article_id)")
        elif inst is not None:
            known = {d.article_id for d in inst.documents}
            bad = [x for x in order if x not in known]
            if bad:
                issues.append(f"doc_order names {bad[:3]} which instance {iid!r} does not have")
            elif len(set(order)) != len(order):
                issues.append("doc_order repeats a document id")
    return issues


def answer_record(inst: Instance, model: str, answer: str, style: str, dataset_version: str,
                  doc_order: Optional[list[str]] = None, ok: bool = True, error: str = "") -> AnswerRecord:
    """The answer record of one line (``doc_order`` default: the release's order of the documents)."""
    docs = {d.article_id: d for d in inst.documents}
    order = doc_order or [d.article_id for d in inst.documents]
    return AnswerRecord(
        id=f"{model}:{inst.id}", instance_id=inst.id, qa_id=inst.qa_id, setting=inst.setting,
        language=inst.language, model=model, question=inst.question, gold_answer=inst.answer,
        served_model=model, answer=answer, ok=ok, error=error,
        doc_order=order if style != "closed-book" else [],
        relevant=[k for k, aid in enumerate(order, start=1) if docs[aid].role == "supporting"]
        if style != "closed-book" else [],
        prompt_id=SOURCE, style=style, dataset_version=dataset_version)


def unanswered_records(answers: Sequence[AnswerRecord], instances: Sequence[Instance]) -> list[AnswerRecord]:
    """A record (``ok`` False, empty answer) for every instance a model of the file did not answer: scored
    as wrong (``coverage``), never left out. Its style is the one the model's lines use most."""
    given: dict[str, set[str]] = defaultdict(set)
    styles: dict[str, Counter] = defaultdict(Counter)
    for a in answers:
        given[a.model].add(a.instance_id)
        styles[a.model][a.style] += 1
    return [answer_record(inst, model, "", styles[model].most_common(1)[0][0], answers[0].dataset_version,
                          ok=False, error=UNANSWERED)
            for model in sorted(given) for inst in instances if inst.id not in given[model]]


def read_answers_file(path: str | Path, instances: list[Instance], dataset_version: str = "") -> list[AnswerRecord]:
    """The answers of ``path`` as AnswerRecords for ``instances``; one InputError lists every problem."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"--answers {path}: file not found; pass a JSONL file with instance_id, model, answer")
    by_id = {inst.id: inst for inst in instances}
    problems: list[str] = []
    out: list[AnswerRecord] = []
    seen: dict[tuple[str, str], int] = {}
    for n, obj in iter_jsonl(path, keep_bad=True):
        if isinstance(obj, BadLine):
            problems.append(f"{path}:{n}: {obj.detail}")
            continue
        issues = _problems(obj, by_id)
        key = (str(obj.get("model")), str(obj.get("instance_id"))) if isinstance(obj, dict) else ("", "")
        if not issues and key in seen:
            issues = [f"model {key[0]!r} answers instance {key[1]!r} again (first on line {seen[key]})"]
        if issues:
            problems.append(f"{path}:{n}: " + "; ".join(issues))
            continue
        seen[key] = n
        out.append(answer_record(by_id[obj["instance_id"]], obj["model"], obj["answer"].strip(),
                                 obj.get("style", "citations"), dataset_version, obj.get("doc_order")))
    if problems:
        more = f"\n... and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS else ""
        raise InputError(f"{len(problems)} invalid answer line(s) in {path}:\n" + "\n".join(problems[:MAX_PROBLEMS])
                         + more)
    if not out:
        raise InputError(f"--answers {path}: no answers in the file")
    return out
