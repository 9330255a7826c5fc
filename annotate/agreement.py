"""Inter-annotator agreement per question, and the disagreements to adjudicate.

Only submitted responses count. Per label question: raw agreement (share of agreeing annotator pairs,
averaged over records with >= 2 labels), Cohen's kappa when exactly two annotators labelled the
records, Fleiss' kappa when three or more did (over records with the modal number of labels; the rest
are counted as skipped). The statistics themselves are ``babelrag.stats``.
"""
from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Optional

from babelrag.atomic import atomic_write_text
from babelrag.stats import cohen_kappa, fleiss_kappa, raw_agreement

from .decisions import majority
from .projects import spec


@dataclass
class QuestionAgreement:
    dataset: str
    question: str
    items: int  # records with >= 2 submitted labels
    annotators: int
    raw_agreement: Optional[float]
    cohen_kappa: Optional[float]
    fleiss_kappa: Optional[float]
    skipped: int  # records left out of Fleiss' kappa (not the modal number of labels)
    disagreements: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _labels_by_record(responses: list[dict], dataset: str, question: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for r in responses:
        if r["dataset"] != dataset or r["status"] != "submitted":
            continue
        value = (r.get("values") or {}).get(question)
        if value is None:
            continue
        out[r["record_id"]][r["annotator"]] = json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value
    return out


def _pairwise_share(labels: list[Any]) -> float:
    pairs = list(combinations(labels, 2))
    return sum(a == b for a, b in pairs) / len(pairs)


def question_agreement(responses: list[dict], dataset: str, question: str) -> QuestionAgreement:
    by_record = {rid: labs for rid, labs in _labels_by_record(responses, dataset, question).items() if len(labs) >= 2}
    annotators = sorted({a for labs in by_record.values() for a in labs})
    disagreements = sum(1 for labs in by_record.values() if len(set(labs.values())) > 1)
    if not by_record:
        return QuestionAgreement(dataset, question, 0, len(annotators), None, None, None, 0, 0)
    raw = sum(_pairwise_share(list(labs.values())) for labs in by_record.values()) / len(by_record)
    cohen = fleiss = None
    skipped = 0
    if len(annotators) == 2:
        a, b = annotators
        cohen = cohen_kappa([labs[a] for labs in by_record.values()], [labs[b] for labs in by_record.values()])
        # with two annotators the pairwise share is exactly raw_agreement(a, b)
        raw = raw_agreement([labs[a] for labs in by_record.values()], [labs[b] for labs in by_record.values()])
    else:
        m = Counter(len(labs) for labs in by_record.values()).most_common(1)[0][0]
        kept = [list(labs.values()) for labs in by_record.values() if len(labs) == m]
        skipped = len(by_record) - len(kept)
        fleiss = fleiss_kappa(kept)
    return QuestionAgreement(dataset, question, len(by_record), len(annotators), raw, cohen, fleiss, skipped, disagreements)


POOLED = {"grounding": ("relevance", re.compile(r"^relevance_(\d+)$"))}


def _pooled_rows(responses: list[dict], project: str) -> list[dict]:
    """Grounding: every (record, passage) becomes one item of a pooled ``relevance`` question."""
    name, pattern = POOLED[project]
    out = []
    for r in responses:
        for q, v in (r.get("values") or {}).items():
            m = pattern.match(q)
            if m and v is not None:
                out.append({**r, "record_id": f"{r['record_id']}#{m.group(1)}", "values": {name: v}})
    return out


def agreement(responses: list[dict], project: str) -> list[QuestionAgreement]:
    """Agreement for every label question of every dataset of a project (plus pooled passage relevance)."""
    questions = spec(project).label_questions
    datasets = sorted({r["dataset"] for r in responses})
    out = [question_agreement(responses, ds, q) for ds in datasets for q in questions]
    if project in POOLED:
        pooled = _pooled_rows(responses, project)
        out += [question_agreement(pooled, ds, POOLED[project][0]) for ds in datasets]
    return out


@dataclass
class SuggestionAgreement:
    """How often the pipeline's answer (model, judge panel, construction) matched the human majority,
    per suggestion mode: ``preselect`` (pre-selected in the form), ``show`` (a hint), ``off`` (unseen)."""

    dataset: str
    question: str
    mode: str
    agent: str
    items: int
    raw_agreement: Optional[float]
    cohen_kappa: Optional[float]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def suggestion_agreement(responses: list[dict], records: list[dict], project: str, min_submitted: int = 1,
                         suggested: Optional[list[dict]] = None) -> list[SuggestionAgreement]:
    """Per label question and mode: human strict-majority label vs the pipeline's answer, over records
    having both. ``suggested`` (the push's local record, see suggested.py) gives the answers and the mode;
    without it, the Argilla suggestions of pulled ``records`` count as ``preselect``."""
    known = {(r["dataset"], r["record_id"]): r for r in records}
    for row in suggested or []:
        known[(row["dataset"], row["record_id"])] = row
    out = []
    for ds in sorted({key[0] for key in known}):
        for q in spec(project).label_questions:
            by_mode: dict[str, tuple[list, list, Counter]] = {}
            for rid, labs in sorted(_labels_by_record(responses, ds, q).items()):
                row = known.get((ds, rid), {})
                sug = (row.get("suggestions") or {}).get(q)
                maj = majority(list(labs.values())) if len(labs) >= min_submitted else None
                if sug is not None and maj is not None:
                    human, model, who = by_mode.setdefault(row.get("mode", "preselect"), ([], [], Counter()))
                    human.append(maj)
                    model.append(sug)
                    who[(row.get("suggestion_agents") or {}).get(q) or "?"] += 1
            for mode, (human, model, who) in sorted(by_mode.items()):
                out.append(SuggestionAgreement(ds, q, mode, who.most_common(1)[0][0], len(human),
                                               raw_agreement(model, human), cohen_kappa(model, human)))
    return out


def _answers_by_record(responses: list[dict], dataset: str, question: str, text: bool) -> dict[str, dict[str, Any]]:
    if not text:
        return _labels_by_record(responses, dataset, question)
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for r in responses:
        value = (r.get("values") or {}).get(question)
        if r["dataset"] == dataset and r["status"] == "submitted" and isinstance(value, str) and value.strip():
            out[r["record_id"]][r["annotator"]] = value.strip()
    return out


def disagreements(responses: list[dict], project: str, records: Optional[list[dict]] = None) -> list[dict]:
    """One row per (record, question) where submitted answers differ: label questions, and free-text
    answers (corrected answers, post-edits; stripped, compared exactly), with every annotator's answer to
    that question (``labels``) and every annotator's whole response (``responses``: the corrections and
    post-edits beside the labels), for adjudication."""
    fields = {(r["dataset"], r["record_id"]): r.get("fields", {}) for r in records or []}
    whole: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    for r in responses:
        if r["status"] == "submitted":
            whole[(r["dataset"], r["record_id"])][r["annotator"]] = r.get("values") or {}
    questions = [(q.name, not q.is_label) for q in spec(project).questions]
    rows = []
    for ds in sorted({r["dataset"] for r in responses}):
        for q, text in questions:
            for rid, labs in sorted(_answers_by_record(responses, ds, q, text).items()):
                if len(labs) >= 2 and len(set(labs.values())) > 1:
                    rows.append({"project": project, "dataset": ds, "record_id": rid, "question": q,
                                 "labels": dict(sorted(labs.items())),
                                 "responses": dict(sorted(whole[(ds, rid)].items())),
                                 "fields": fields.get((ds, rid), {})})
    return rows


def write_disagreements(rows: list[dict], path: Path) -> Path:
    """JSONL, or CSV (labels/fields as JSON strings) when the path ends in .csv; temp file + replace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=["project", "dataset", "record_id", "question", "labels", "responses",
                                                 "fields"])
        writer.writeheader()
        for r in rows:
            writer.writerow({**r, **{k: json.dumps(r[k], ensure_ascii=False) for k in ("labels", "responses", "fields")}})
        text = buf.getvalue()
    else:
        text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    atomic_write_text(path, text)
    return path
