"""Read GaRAGe's released JSONL (``amazon-science/GaRAGe``, ``data/GaRAGe_benchmark.jsonl``) into typed records.

Published shape (the repository README, "Data Format"; value sets as a public adapter validates them
against the official file, see docs/release.md): one object per line with the 21 fields of
``PUBLISHED_FIELDS``. ``grounding`` is a list of passages; passage k (0-based) is an object with exactly
the keys ``cite_{k+1}`` (the text), ``age``, ``date`` and ``provider`` (``web``/``ent``). The label arrays
``evidence_relevant`` (YES/NO/""), ``evidence_correct`` (ANSWER-THE-QUESTION/RELATED-INFORMATION/OUTDATED/
UNKNOWN/"") and ``evidence_cited`` (YES/NO) hold one label per passage. The human answer
``answer_generate`` cites passages with ``[cite_N]`` markers, usually after the full stop.

Gold used by the metrics: the attribution set is the ANSWER-THE-QUESTION passages (the passages the human
answer is written from); ``evidence_relevant`` is kept as its own, wider set. A question with no
ANSWER-THE-QUESTION passage requires deflection.

Every published field is kept (unknown extra keys too, in ``extra``) so ``to_published()`` writes the
record back field for field; every problem names the line, the ``sample_id``, the field and the defect.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from babelrag.records import Document, Instance
from babelrag.release.loaders import Problems, iso_date, read_jsonl

PUBLISHED_FIELDS = (
    "sample_id", "question_date", "grounding", "question", "question_valid", "question_false_premise",
    "question_seeking", "question_sensitive", "question_type", "question_complexity", "question_category",
    "question_popularity", "evidence_relevant", "evidence_correct", "answer_generate", "answer_related_info",
    "answer_validate", "comments", "evidence_cited", "question_tag", "topic_tag",
)
REQUIRED = ("sample_id", "question", "grounding", "evidence_relevant", "evidence_correct", "answer_generate")
ANSWERS = "ANSWER-THE-QUESTION"
LABELS = {
    "evidence_relevant": ("YES", "NO", ""),
    "evidence_correct": (ANSWERS, "RELATED-INFORMATION", "OUTDATED", "UNKNOWN", ""),
    "evidence_cited": ("YES", "NO"),
}
# question-level value sets (None: any string)
VALUES: dict[str, Optional[tuple[str, ...]]] = {
    "question_date": None, "question_category": None, "question_tag": None, "topic_tag": None,
    "answer_related_info": None, "comments": None,
    "question_valid": ("YES", "NO"), "question_false_premise": ("YES", "NO"), "question_seeking": ("YES", "NO"),
    "question_sensitive": ("YES", "NO"), "question_type": ("FAST-CHANGING", "SLOW-CHANGING", ""),
    "question_complexity": ("Simple", "Simple w. condition", "Set", "Comparison", "Aggregation", "Multi-hop",
                            "Post-processing heavy"),
    "question_popularity": ("Head", "Torso", "Tail"), "answer_validate": ("YES", ""),
}
PROVIDERS = ("web", "ent")
PASSAGE_KEYS = ("age", "date", "provider")
COMPLEXITY_TO_QTYPE = {"set": "set", "comparison": "comparison", "aggregation": "aggregation",
                       "multi-hop": "multi-hop"}
UNSPECIFIED = "unspecified"  # the instance type of a record without question_complexity
CITE_MARKER = re.compile(r"\[\s*cite_(\d+)\s*\]")


class GaragePassage(BaseModel):
    """One grounding passage with its three labels (``cited`` None when the file has no evidence_cited)."""

    model_config = ConfigDict(extra="forbid")
    position: int  # 1-based: the N of cite_N
    text: str
    age: str
    date: str
    provider: str
    relevant: str
    correct: str
    cited: Optional[str] = None

    @property
    def cite_id(self) -> str:
        return f"cite_{self.position}"

    @property
    def published(self) -> str:
        """The passage date as YYYY-MM-DD ("" when the date string holds no date)."""
        return iso_date(self.date)

    def kind(self) -> str:
        """RAGE's document kind: answers -> relevant; related/outdated/relevant-but-not-answering -> related."""
        if self.correct == ANSWERS:
            return "relevant"
        if self.correct in ("RELATED-INFORMATION", "OUTDATED") or self.relevant == "YES":
            return "related"
        return "irrelevant"


class GarageRecord(BaseModel):
    """One GaRAGe question, every published field kept (absent optional fields are None)."""

    model_config = ConfigDict(extra="forbid")
    sample_id: str
    question: str
    answer_generate: str
    passages: list[GaragePassage] = Field(default_factory=list)
    question_date: Optional[str] = None
    question_valid: Optional[str] = None
    question_false_premise: Optional[str] = None
    question_seeking: Optional[str] = None
    question_sensitive: Optional[str] = None
    question_type: Optional[str] = None
    question_complexity: Optional[str] = None
    question_category: Optional[str] = None
    question_popularity: Optional[str] = None
    answer_related_info: Optional[str] = None
    answer_validate: Optional[str] = None
    comments: Optional[str] = None
    question_tag: Optional[str] = None
    topic_tag: Optional[str] = None
    has_evidence_cited: bool = True
    extra: dict[str, Any] = Field(default_factory=dict)  # keys GaRAGe does not publish, kept verbatim
    field_order: list[str] = Field(default_factory=list)  # keys in the order the file had them

    @property
    def id(self) -> str:
        return self.sample_id

    @property
    def attribution_ids(self) -> list[str]:
        """The ANSWER-THE-QUESTION passages: what an answer should cite (GaRAGe's attribution gold)."""
        return [p.cite_id for p in self.passages if p.correct == ANSWERS]

    @property
    def relevant_ids(self) -> list[str]:
        """The wider ``evidence_relevant == YES`` set (kept for analysis; not the attribution gold)."""
        return [p.cite_id for p in self.passages if p.relevant == "YES"]

    @property
    def gold_citations(self) -> list[str]:
        """The passages the human answer cites, from its ``[cite_N]`` markers, in order of first mention."""
        return [f"cite_{n}" for n in dict.fromkeys(int(m) for m in CITE_MARKER.findall(self.answer_generate))]

    @property
    def requires_deflection(self) -> bool:
        """No passage answers the question: a model should say the grounding is insufficient."""
        return not self.attribution_ids

    @property
    def category(self) -> str:
        """The instance type: one of our four question types where GaRAGe's complexity is one (Set, Comparison,
        Aggregation, Multi-hop), else GaRAGe's own complexity verbatim ("Simple", "Simple w. condition",
        "Post-processing heavy"; "unspecified" when the record has none)."""
        complexity = (self.question_complexity or "").strip()
        return COMPLEXITY_TO_QTYPE.get(complexity.lower()) or complexity or UNSPECIFIED

    def to_instance(self) -> Instance:
        """Every record is an Instance; its ``q_type`` is ``category`` (GaRAGe's metrics are reported per
        complexity from it)."""
        docs = [Document(article_id=f"{self.sample_id}#{p.cite_id}", title="", text=p.text, language="en",
                         published=p.published, role="supporting" if p.correct == ANSWERS else "distractor",
                         kind=p.kind()) for p in self.passages]  # type: ignore[arg-type]
        return Instance(id=self.sample_id, qa_id=self.sample_id, setting="garage", language="en",
                        question=self.question, answer=self.answer_generate, en_question=self.question,
                        en_answer=self.answer_generate, q_type=self.category, documents=docs, verified=True,
                        dates=[d.published for d in docs if d.role == "supporting"])

    def to_published(self) -> dict[str, Any]:
        """The record in GaRAGe's own shape, keys in the file's order (the inverse of ``parse_record``)."""
        values: dict[str, Any] = {
            "grounding": [{p.cite_id: p.text, **{k: getattr(p, k) for k in PASSAGE_KEYS}} for p in self.passages],
            "evidence_relevant": [p.relevant for p in self.passages],
            "evidence_correct": [p.correct for p in self.passages],
            "evidence_cited": [p.cited for p in self.passages],
        }
        out = {}
        for key in self.field_order:
            if key in self.extra:
                out[key] = self.extra[key]
            elif key in values:
                out[key] = values[key]
            else:
                out[key] = getattr(self, key)
        return out


def _passages(obj: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The grounding as [{position, text, age, date, provider}], and its problems."""
    grounding = obj["grounding"]
    if not isinstance(grounding, list):
        return [], [f"grounding must be a list of passages, got {type(grounding).__name__}"]
    out, issues = [], []
    for k, p in enumerate(grounding):
        key = f"cite_{k + 1}"
        if not isinstance(p, dict):
            issues.append(f"grounding[{k}] must be an object with {key}, age, date, provider; got {type(p).__name__}")
            continue
        keys = set(p)
        wrong = sorted(keys - {key, *PASSAGE_KEYS})
        missing = [x for x in (key, *PASSAGE_KEYS) if x not in keys]
        if wrong or missing:
            issues.append(f"grounding[{k}] must have exactly the keys {key}, age, date, provider"
                          + (f"; unexpected {', '.join(wrong)}" if wrong else "")
                          + (f"; missing {', '.join(missing)}" if missing else ""))
            continue
        bad = [x for x in (key, *PASSAGE_KEYS) if not isinstance(p[x], str)]
        if bad:
            issues.append(f"grounding[{k}]: {', '.join(bad)} must be strings")
            continue
        if not p[key].strip():
            issues.append(f"grounding[{k}].{key}: passage text is empty")
        if p["provider"] not in PROVIDERS:
            issues.append(f"grounding[{k}].provider {p['provider']!r} not one of {'/'.join(PROVIDERS)}")
        out.append({"position": k + 1, "text": p[key], "age": p["age"], "date": p["date"], "provider": p["provider"]})
    return out, issues


def _label_issues(obj: dict[str, Any], n: int) -> list[str]:
    """The per-passage label arrays: one label per passage, each in its published value set."""
    issues = []
    for name, allowed in LABELS.items():
        arr = obj.get(name)
        if name not in obj:
            continue
        if not isinstance(arr, list):
            issues.append(f"{name} must be a list of labels, got {type(arr).__name__}")
        elif len(arr) != n:
            issues.append(f"{name} has {len(arr)} labels for {n} passages (one per grounding passage)")
        elif bad := [(k, v) for k, v in enumerate(arr) if v not in allowed]:
            k, v = bad[0]
            issues.append(f"{name}[{k}] label {v!r} not allowed ({'/'.join(repr(a) for a in allowed)})"
                          + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""))
    return issues


def _value_issues(obj: dict[str, Any]) -> list[str]:
    """Question-level fields: strings, within their published value sets."""
    issues = []
    for name, allowed in VALUES.items():
        value = obj.get(name)
        if name in obj and not isinstance(value, str):
            issues.append(f"{name} must be a string, got {type(value).__name__}")
        elif name in obj and allowed is not None and value not in allowed:
            issues.append(f"{name} {value!r} not one of {', '.join(repr(a) for a in allowed)}")
    return issues


def check_record(obj: dict[str, Any]) -> list[str]:
    """Every problem with one GaRAGe line (empty list: it loads)."""
    missing = [f for f in REQUIRED if f not in obj]
    if missing:
        return [f"missing field(s) {', '.join(missing)}"]
    issues: list[str] = []
    for f in ("sample_id", "question"):
        if not isinstance(obj[f], str) or not obj[f].strip():
            issues.append(f"{f} must be a non-empty string")
    passages, passage_issues = _passages(obj)
    issues += passage_issues
    n = len(obj["grounding"]) if isinstance(obj["grounding"], list) else 0
    issues += _label_issues(obj, n) + _value_issues(obj)
    if isinstance(obj.get("question_sensitive"), str) and isinstance(obj.get("question_type"), str):
        if (obj["question_sensitive"] == "YES") != (obj["question_type"] != ""):
            issues.append("question_type must be set exactly when question_sensitive is YES")
    for name in ("answer_generate", "answer_related_info"):
        text = obj.get(name)
        if name == "answer_generate" and not isinstance(text, str):
            issues.append("answer_generate must be a string")
        elif isinstance(text, str):
            beyond = sorted({int(m) for m in CITE_MARKER.findall(text) if not 1 <= int(m) <= n})
            if beyond:
                issues.append(f"{name} cites {', '.join(f'cite_{m}' for m in beyond)} but the grounding has "
                              f"{n} passage(s)")
    return issues


def parse_record(obj: dict[str, Any]) -> GarageRecord:
    """A checked line (``check_record`` returned no problem) as a GarageRecord."""
    passages, _ = _passages(obj)
    cited = obj.get("evidence_cited")
    for k, p in enumerate(passages):
        p.update(relevant=obj["evidence_relevant"][k], correct=obj["evidence_correct"][k],
                 cited=cited[k] if cited is not None else None)
    known = {f: obj[f] for f in PUBLISHED_FIELDS
             if f in obj and f not in ("grounding", "evidence_relevant", "evidence_correct", "evidence_cited")}
    return GarageRecord(**known, passages=[GaragePassage(**p) for p in passages],
                        has_evidence_cited=cited is not None,
                        extra={k: v for k, v in obj.items() if k not in PUBLISHED_FIELDS}, field_order=list(obj))


def load_garage(path: str | Path) -> list[GarageRecord]:
    """All records of a GaRAGe JSONL file; any invalid line -> one InputError naming line, sample_id, field."""
    problems = Problems(str(path))
    out: list[GarageRecord] = []
    seen: set[str] = set()
    for line, obj in read_jsonl(path, problems):
        rid = obj.get("sample_id", "?")
        issues = check_record(obj)
        if not issues and rid in seen:
            issues = ["duplicate sample_id (sample_ids must be unique)"]
        if issues:
            problems.add(f"{line}", f"record {rid!r}: " + "; ".join(issues))
            continue
        seen.add(rid)
        out.append(parse_record(obj))
    problems.raise_if_any()
    return out
