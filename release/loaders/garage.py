"""Read GaRAGe's JSONL: passages under ``cite_N`` keys with label arrays aligned to the passages.

Accepted grounding shapes: a mapping ``{"cite_1": passage, ...}``, or a list whose items are
``{"cite_N": passage}`` or passages whose text starts with a ``[cite_N]`` marker. A passage is a string or
an object with ``text`` (and optional ``date``, ``age``, ``provider``). The label arrays
``evidence_relevant`` (YES/NO), ``evidence_correct`` (ANSWER-THE-QUESTION / RELATED-INFORMATION / UNKNOWN /
OUTDATED) and, if present, ``evidence_cited`` (YES/NO) follow the passages in ``cite_N`` order and must
have exactly one entry per passage.

``requires_deflection``: no passage answers the question (GaRAGe's deflection case).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from babelrag.records import Document, Instance
from babelrag.release.loaders import Problems, read_jsonl

CITE = re.compile(r"^cite_(\d+)$")
MARKER = re.compile(r"^\s*\[(cite_\d+)\]\s*")
YES_NO = {"YES": True, "NO": False}
CORRECT = ("ANSWER-THE-QUESTION", "RELATED-INFORMATION", "UNKNOWN", "OUTDATED")
COMPLEXITY_TO_QTYPE = {"set": "set", "comparison": "comparison", "aggregation": "aggregation",
                       "multi-hop": "multi-hop"}
KIND = {"ANSWER-THE-QUESTION": "relevant", "RELATED-INFORMATION": "related"}
REQUIRED = ("sample_id", "question", "grounding", "evidence_relevant", "evidence_correct", "answer_generate")


class GaragePassage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cite_id: str
    text: str
    date: str = ""
    age: str = ""
    provider: str = ""
    relevant: bool
    label: str
    cited: Optional[bool] = None


class GarageRecord(BaseModel):
    """One GaRAGe question with its labelled passages (what the GaRAGe evaluator needs)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    question: str
    answer: str
    question_date: str = ""
    complexity: str = ""
    question_type: str = ""
    category: str = ""
    popularity: str = ""
    passages: list[GaragePassage] = Field(default_factory=list)

    @property
    def requires_deflection(self) -> bool:
        return not any(p.label == "ANSWER-THE-QUESTION" for p in self.passages)

    @property
    def relevant_ids(self) -> list[str]:
        return [p.cite_id for p in self.passages if p.relevant]

    def to_instance(self) -> Optional[Instance]:
        """As an Instance when the complexity is one of our four question types, else None."""
        q_type = COMPLEXITY_TO_QTYPE.get(self.complexity.strip().lower())
        if q_type is None:
            return None
        docs = [Document(article_id=p.cite_id, title="", text=p.text, language="en", published=p.date[:10],
                         role="supporting" if p.label == "ANSWER-THE-QUESTION" else "distractor",
                         kind=KIND.get(p.label, "irrelevant")) for p in self.passages]  # type: ignore[arg-type]
        return Instance(id=self.id, qa_id=self.id, setting="garage", language="en", question=self.question,
                        answer=self.answer, en_question=self.question, en_answer=self.answer, q_type=q_type,
                        documents=docs, verified=True,
                        dates=[d.published for d in docs if d.role == "supporting"])


def _passages(grounding: Any) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """[(cite_id, passage dict)] in cite order, and problems."""
    items: list[tuple[str, Any]] = []
    problems = []
    if isinstance(grounding, dict):
        items = list(grounding.items())
    elif isinstance(grounding, list):
        for k, p in enumerate(grounding):
            if isinstance(p, dict) and len(p) == 1 and CITE.match(next(iter(p))):
                items.append(next(iter(p.items())))
                continue
            text = p.get("text") if isinstance(p, dict) else p
            m = MARKER.match(text) if isinstance(text, str) else None
            if not m:
                problems.append(f"grounding[{k}] has no cite_N key or [cite_N] marker")
                continue
            cleaned = text[m.end():]
            items.append((m.group(1), {**p, "text": cleaned} if isinstance(p, dict) else cleaned))
    else:
        return [], [f"grounding must be an object of cite_N keys or a list, got {type(grounding).__name__}"]
    out = []
    for key, p in items:
        if not CITE.match(str(key)):
            problems.append(f"grounding key {key!r} is not cite_N")
            continue
        if isinstance(p, str):
            p = {"text": p}
        if not isinstance(p, dict) or not isinstance(p.get("text"), str) or not p["text"].strip():
            problems.append(f"{key}: passage needs a non-empty text")
            continue
        out.append((key, p))
    ids = [k for k, _ in out]
    if len(set(ids)) != len(ids):
        problems.append(f"duplicate cite ids {sorted({i for i in ids if ids.count(i) > 1})}")
    out.sort(key=lambda kv: int(CITE.match(kv[0]).group(1)))  # type: ignore[union-attr]
    return out, problems


def _label(value: Any, allowed: dict[str, Any] | tuple[str, ...]) -> Any:
    if isinstance(value, bool) and allowed is YES_NO:
        return value
    key = str(value).strip().upper()
    if key not in allowed:
        raise ValueError(value)
    return allowed[key] if isinstance(allowed, dict) else key


def load_garage(path: str | Path) -> list[GarageRecord]:
    """All records of a GaRAGe JSONL file; any invalid record -> InputError naming file:line + sample_id."""
    problems = Problems(str(path))
    out = []
    for line, obj in read_jsonl(path, problems):
        rid = obj.get("sample_id", "?")
        where = f"{line}"
        missing = [f for f in REQUIRED if f not in obj]
        if missing:
            problems.add(where, f"record {rid!r}: missing field(s) {', '.join(missing)}")
            continue
        passages, issues = _passages(obj["grounding"])
        arrays = {"evidence_relevant": obj["evidence_relevant"], "evidence_correct": obj["evidence_correct"]}
        if obj.get("evidence_cited") is not None:
            arrays["evidence_cited"] = obj["evidence_cited"]
        for name, arr in arrays.items():
            if not isinstance(arr, list):
                issues.append(f"{name} must be a list")
            elif len(arr) != len(passages) and not issues:
                issues.append(f"{name} has {len(arr)} labels for {len(passages)} passages (must align with cite_N)")
        if not isinstance(obj["question"], str) or not obj["question"].strip():
            issues.append("question must be a non-empty string")
        if issues:
            problems.add(where, f"record {rid!r}: " + "; ".join(issues))
            continue
        built = []
        for k, (cid, p) in enumerate(passages):
            try:
                relevant = _label(arrays["evidence_relevant"][k], YES_NO)
                label = _label(arrays["evidence_correct"][k], CORRECT)
                cited = _label(arrays["evidence_cited"][k], YES_NO) if "evidence_cited" in arrays else None
            except ValueError as exc:
                issues.append(f"{cid}: label {exc.args[0]!r} not allowed (YES/NO; {'/'.join(CORRECT)})")
                continue
            built.append(GaragePassage(cite_id=cid, text=p["text"], date=str(p.get("date") or ""),
                                       age=str(p.get("age") or ""), provider=str(p.get("provider") or ""),
                                       relevant=relevant, label=label, cited=cited))
        if issues:
            problems.add(where, f"record {rid!r}: " + "; ".join(issues))
            continue
        out.append(GarageRecord(
            id=str(rid), question=obj["question"], answer=str(obj["answer_generate"] or ""),
            question_date=str(obj.get("question_date") or ""), complexity=str(obj.get("question_complexity") or ""),
            question_type=str(obj.get("question_type") or ""), category=str(obj.get("question_category") or ""),
            popularity=str(obj.get("question_popularity") or ""), passages=built))
    problems.raise_if_any()
    return out
