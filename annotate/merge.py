"""Merge accepted human decisions back into the build's records, with provenance.

A decision is accepted when a record has at least ``min_submitted`` submitted responses and a strict
majority of them agree (ties stay unresolved and go to adjudication). Q&A verification writes the
verdict and any accepted corrected answer into the ``QAItem`` (``verified``, ``answer``) and records
who/when/what in ``human_review``. Translation post-edits replace the machine translation of that
language in ``translations`` (keeping it as ``machine_translation``).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any, Optional

from babelrag.records import HumanReview, HumanVotes, MachineTranslation, QAItem, Reviewer, Translation

from .projects import guideline


@dataclass
class MergeReport:
    merged: int = 0
    corrected: int = 0
    rejected: int = 0
    pending: int = 0  # fewer submitted responses than required
    unresolved: list[str] = field(default_factory=list)  # ties / conflicting corrections

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def majority(values: list[Any]) -> Optional[Any]:
    """The value more than half of the annotators gave, else None."""
    if not values:
        return None
    value, count = Counter(values).most_common(1)[0]
    return value if count * 2 > len(values) else None


def _submitted(responses: list[dict], dataset_suffix: str = "") -> dict[str, list[dict]]:
    by_record: dict[str, list[dict]] = defaultdict(list)
    for r in responses:
        if r["status"] == "submitted" and (not dataset_suffix or r["dataset"].endswith("-" + dataset_suffix)):
            by_record[r["record_id"]].append(r)
    return by_record


def _who(rs: list[dict]) -> list[dict]:
    return [{"annotator": r["annotator"], "updated_at": r["updated_at"]} for r in sorted(rs, key=lambda r: r["annotator"])]


def _reviewers(rs: list[dict]) -> list[Reviewer]:
    return [Reviewer(**w) for w in _who(rs)]


def _merge_each(items: list[QAItem], by_record: dict[str, list[dict]], min_submitted: int, report: MergeReport,
                decide: Callable[[QAItem, list[dict]], Optional[QAItem]]) -> list[QAItem]:
    """Items with fewer than ``min_submitted`` responses stay as they are (pending); ``decide`` returns the
    merged item, or None when the responses do not settle it (unresolved: the item stays as it is)."""
    out = []
    for qa in items:
        rs = by_record.get(qa.id, [])
        if len(rs) < min_submitted:
            report.pending += 1
            out.append(qa)
            continue
        merged = decide(qa, rs)
        if merged is None:
            report.unresolved.append(qa.id)
            out.append(qa)
            continue
        report.merged += 1
        out.append(merged)
    return out


def merge_qa_verification(items: list[QAItem], responses: list[dict], min_submitted: int) -> tuple[list[QAItem], MergeReport]:
    report = MergeReport()
    g = guideline("qa_verification")

    def decide(qa: QAItem, rs: list[dict]) -> Optional[QAItem]:
        votes = {q: majority([r["values"].get(q) for r in rs]) for q in ("natural", "answerable", "answer_correct")}
        if None in votes.values():
            return None
        answer = qa.answer
        if votes["answer_correct"] == "no":
            candidates = [(r["values"].get("corrected_answer") or "").strip() for r in rs if r["values"].get("answer_correct") == "no"]
            candidates = [c for c in candidates if c and c != qa.answer.strip()]
            answer = majority(candidates) if candidates else None
            if answer is None:
                return None
        passed = votes["natural"] == "yes" and votes["answerable"] == "yes"
        review = HumanReview(passed=passed, votes=HumanVotes(**votes), annotators=_reviewers(rs),
                             original_answer=qa.answer if answer != qa.answer else None,
                             dataset=rs[0]["dataset"], guideline=f"{g.id}@{g.version}")
        update: dict[str, Any] = {"answer": answer, "verified": passed, "human_review": review}
        if not passed:
            update.update(accepted=False, rejected_by=qa.rejected_by or "human_verification")
            report.rejected += 1
        report.corrected += int(answer != qa.answer)
        return qa.model_copy(update=update)

    return _merge_each(items, _submitted(responses), min_submitted, report, decide), report


def merge_translation(items: list[QAItem], responses: list[dict], language: str, min_submitted: int) -> tuple[list[QAItem], MergeReport]:
    report = MergeReport()
    g = guideline("translation")

    def decide(qa: QAItem, rs: list[dict]) -> Optional[QAItem]:
        q = majority([(r["values"].get("question_translation") or "").strip() for r in rs])
        a = majority([(r["values"].get("answer_translation") or "").strip() for r in rs])
        if not q or not a:
            return None
        previous = qa.translation(language)
        machine = MachineTranslation(question=previous.question, answer=previous.answer, model=previous.model) \
            if previous is not None and previous.usable else None
        human = Translation(language=language, question=q, answer=a, machine_translated=False,
                            post_edited=machine is not None, machine_translation=machine,
                            annotators=_reviewers(rs), guideline=f"{g.id}@{g.version}")
        report.corrected += int(previous is None or q != previous.question or a != previous.answer)
        others = [t for t in qa.translations if t.language != language]
        return qa.model_copy(update={"translations": sorted([*others, human], key=lambda t: t.language)})

    return _merge_each(items, _submitted(responses, language), min_submitted, report, decide), report


def forced_choice_outcomes(responses: list[dict], records: list[dict], min_submitted: int) -> list[dict]:
    """Human majority pick per pair, mapped back from A/B to better/worse via the recorded positions."""
    meta = {r["record_id"]: r["metadata"] for r in records}
    out = []
    for rid, rs in sorted(_submitted(responses).items()):
        if len(rs) < min_submitted or rid not in meta:
            continue
        pick = majority([r["values"].get("choice") for r in rs])
        better_pos = meta[rid].get("better_position")
        out.append({"id": rid, "criterion": meta[rid].get("criterion"), "human_choice": pick,
                    "human_prefers_better": None if pick is None else pick == better_pos, "annotators": _who(rs)})
    return out


def answer_verdicts(responses: list[dict], min_submitted: int) -> list[dict]:
    """Human majority verdict per model answer, for agreement with the judge panel."""
    out = []
    for rid, rs in sorted(_submitted(responses).items()):
        if len(rs) >= min_submitted:
            out.append({"id": rid, "human_verdict": majority([r["values"].get("verdict") for r in rs]), "annotators": _who(rs)})
    return out
