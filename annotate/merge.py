"""Merge accepted human decisions back into the build's records, with provenance.

A record is decided when it has at least ``min_submitted`` submitted responses and its project type's
``DecisionRules`` settle it (``decisions.py``); records they do not settle stay unresolved until an
adjudicator's verdict (``babelrag annotate adjudicate``) decides them. Q&A verification writes the
verdict and any accepted corrected answer into the ``QAItem`` (``verified``, ``answer``) and records
who/when/what in ``human_review``. Translation post-edits replace the machine translation of that
language in ``translations`` (keeping it as ``machine_translation``).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any, Optional

from babelrag.records import HumanReview, HumanVotes, MachineTranslation, QAItem, Reviewer, Translation

from . import registry
from .decisions import Decision, DecisionRules, decide, majority
from .projects import guideline


@dataclass
class MergeReport:
    merged: int = 0
    corrected: int = 0
    rejected: int = 0
    pending: int = 0  # fewer submitted responses than required
    unresolved: list[str] = field(default_factory=list)  # the rules do not settle them: adjudicate
    adjudicated: int = 0  # settled by an adjudicator's verdict
    # post-edits of an English text that has changed since (the instances stage re-translates them)
    outdated: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


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


Apply = Callable[[QAItem, list[dict], Decision, list[dict]], QAItem]


def _merge_each(items: list[QAItem], by_record: dict[str, list[dict]], adjudicated: dict[str, list[dict]],
                min_submitted: int, report: MergeReport, rules: DecisionRules,
                unchanged: Callable[[QAItem], dict[str, str]], apply: Apply) -> list[QAItem]:
    """Each item's responses decided by ``rules``; an adjudicator's submitted verdict, where there is one,
    decides instead. Items with fewer than ``min_submitted`` responses stay as they are (pending), and so
    do items the rules do not settle (unresolved: to adjudicate). ``apply(item, responses, decision,
    adjudication)`` returns the merged item."""
    out = []
    for qa in items:
        rs, adj = by_record.get(qa.id, []), adjudicated.get(qa.id, [])
        if not adj and len(rs) < min_submitted:
            report.pending += 1
            out.append(qa)
            continue
        decision = decide(rules, adj or rs, unchanged(qa))
        if not decision.settled:
            report.unresolved.append(qa.id)
            out.append(qa)
            continue
        report.merged += 1
        report.adjudicated += bool(adj)
        out.append(apply(qa, rs, decision, adj))
    return out


def merge_qa_verification(items: list[QAItem], responses: list[dict], min_submitted: int,
                          adjudications: Optional[list[dict]] = None) -> tuple[list[QAItem], MergeReport]:
    """Q&A verification by its declared rules (``project_types/qa_verification.py``): a decided "not
    natural" / "not answerable" rejects; otherwise every label needs a majority and a wrong answer a
    majority correction. ``adjudications``: the adjudication dataset's responses (they decide disputes)."""
    report = MergeReport()
    g = guideline("qa_verification")
    rules = registry.get("qa_verification").rules

    def apply(qa: QAItem, rs: list[dict], d: Decision, adj: list[dict]) -> QAItem:
        passed = d.settled_by is None and d.votes["natural"] == "yes" and d.votes["answerable"] == "yes"
        answer = d.texts.get("corrected_answer") or qa.answer
        review = HumanReview(passed=passed, votes=HumanVotes(**{q: d.votes.get(q) for q in HumanVotes.model_fields}),
                             annotators=_reviewers(rs), original_answer=qa.answer if answer != qa.answer else None,
                             dataset=(rs or adj)[0]["dataset"], guideline=f"{g.id}@{g.version}",
                             adjudicator=_reviewers(adj)[0] if adj else None)
        update: dict[str, Any] = {"answer": answer, "verified": passed, "human_review": review}
        if not passed:
            update.update(accepted=False, rejected_by=qa.rejected_by or "human_verification")
            report.rejected += 1
        report.corrected += int(answer != qa.answer)
        return qa.model_copy(update=update)

    return _merge_each(items, _submitted(responses), _submitted(adjudications or []), min_submitted, report, rules,
                       lambda qa: {"corrected_answer": qa.answer}, apply), report


def merge_translation(items: list[QAItem], responses: list[dict], language: str, min_submitted: int,
                      records: Optional[list[dict]] = None,
                      adjudications: Optional[list[dict]] = None) -> tuple[list[QAItem], MergeReport]:
    """Post-edits replace the machine translation; each keeps the fingerprint of the English its
    translators saw (``en_source`` in the pulled record's metadata; without it, the item's English), so a
    post-edit of English corrected since is told apart (``report.outdated``) and not released as current."""
    report = MergeReport()
    g = guideline("translation")
    shown = {r["record_id"]: (r.get("metadata") or {}).get("en_source", "") for r in records or []
             if r["dataset"].endswith("-" + language)}

    def apply(qa: QAItem, rs: list[dict], d: Decision, adj: list[dict]) -> QAItem:
        q, a = d.texts["question_translation"], d.texts["answer_translation"]
        previous = qa.translation(language)
        machine = MachineTranslation(question=previous.question, answer=previous.answer, model=previous.model) \
            if previous is not None and previous.usable else None
        human = Translation(language=language, question=q, answer=a, machine_translated=False,
                            post_edited=machine is not None, machine_translation=machine,
                            annotators=_reviewers(adj + rs), guideline=f"{g.id}@{g.version}",
                            source=shown.get(qa.id) or qa.source_fingerprint)
        report.corrected += int(previous is None or q != previous.question or a != previous.answer)
        if not qa.translation_is_current(human):
            report.outdated.append(qa.id)
        others = [t for t in qa.translations if t.language != language]
        return qa.model_copy(update={"translations": sorted([*others, human], key=lambda t: t.language)})

    return _merge_each(items, _submitted(responses, language), _submitted(adjudications or [], language), min_submitted,
                       report, registry.get("translation").rules, lambda qa: {}, apply), report


def _decided(project: str, responses: list[dict], min_submitted: int,
             adjudications: Optional[list[dict]]) -> dict[str, tuple[Optional[Any], list[dict], list[dict]]]:
    """record id -> (the decided label of the project's one question or None, responses, adjudication),
    for records with ``min_submitted`` responses or an adjudicator's verdict."""
    rules = registry.get(project).rules
    question = rules.decides[0]
    by_record, adjudicated = _submitted(responses), _submitted(adjudications or [])
    out = {}
    for rid in sorted(set(by_record) | set(adjudicated)):
        rs, adj = by_record.get(rid, []), adjudicated.get(rid, [])
        if adj or len(rs) >= min_submitted:
            out[rid] = (decide(rules, adj or rs).votes.get(question), rs, adj)
    return out


def _adjudicator(adj: list[dict]) -> dict:
    return {"adjudicator": _who(adj)[0]} if adj else {}


def forced_choice_outcomes(responses: list[dict], records: list[dict], min_submitted: int,
                           adjudications: Optional[list[dict]] = None) -> list[dict]:
    """Human pick per pair (majority, or the adjudicator's), mapped back from A/B to better/worse via the
    recorded positions."""
    meta = {r["record_id"]: r["metadata"] for r in records}
    out = []
    for rid, (pick, rs, adj) in _decided("forced_choice", responses, min_submitted, adjudications).items():
        if rid not in meta:
            continue
        better_pos = meta[rid].get("better_position")
        out.append({"id": rid, "criterion": meta[rid].get("criterion"), "human_choice": pick,
                    "human_prefers_better": None if pick is None else pick == better_pos, "annotators": _who(rs),
                    **_adjudicator(adj)})
    return out


def answer_verdicts(responses: list[dict], min_submitted: int, adjudications: Optional[list[dict]] = None) -> list[dict]:
    """Human verdict per model answer (majority, or the adjudicator's), for agreement with the judge panel."""
    return [{"id": rid, "human_verdict": verdict, "annotators": _who(rs), **_adjudicator(adj)}
            for rid, (verdict, rs, adj) in _decided("answer_judgement", responses, min_submitted, adjudications).items()]
