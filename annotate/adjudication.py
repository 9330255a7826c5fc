"""Adjudication: the records a project's decision rules leave undecided go to an adjudicator.

Why a dataset of its own: a record that got its ``min_submitted`` responses is *completed* in Argilla and
leaves every annotator's queue, so a third response never comes by itself; and the adjudicator must see
what the annotators answered (labels, corrections, post-edits), which the original record does not show.
``babelrag annotate adjudicate PROJECT`` reads the pulled responses, finds the disputed records (enough
responses, not settled by ``DecisionRules``), and pushes each, with the original fields, a markdown
``annotations`` field (every annotator's answers) and the original drafts pre-filled, to
``<prefix>-adjudication-<project>[-<lang>]`` in the adjudication workspace (only users with
``role: adjudicator`` see it; one response settles a record). ``pull`` brings the adjudicators'
responses back (``<project>.adjudication.responses.jsonl``) and the merge takes their verdict.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from babelrag.errors import InputError

from . import registry
from .argilla_api import adjudication_name, get_dataset
from .decisions import Decision, DecisionRules, decide
from .projects import FieldSpec, ProjectRecord, ProjectSpec, Suggestion, guidelines_text, spec, to_argilla_records
from .push import ensure_users
from .settings import AnnotateSettings
from .stored import server_records

ANNOTATIONS = FieldSpec("annotations", "What the annotators answered (decide between them, or correct both)",
                        markdown=True)


@dataclass
class Disputed:
    """A record the rules did not settle: its dataset, id, the decision (what is disputed) and responses."""

    dataset: str
    record_id: str
    decision: Decision
    responses: list[dict]


def rules_of(project: str) -> DecisionRules:
    rules = registry.get(project).rules
    if rules is None:
        raise InputError(f"{project} has no decision rules (it is not merged), so nothing to adjudicate; "
                         "projects with rules: " + ", ".join(n for n in registry.names() if registry.get(n).rules))
    return rules


def drafts(record: dict, rules: DecisionRules) -> dict[str, str]:
    """Per text question whose unchanged draft is no answer: the draft the record pre-filled."""
    return {t.question: (record.get("suggestions") or {}).get(t.question) or ""
            for t in rules.texts if t.draft_is_no_answer}


def disputed(project: str, responses: list[dict], records: list[dict], min_submitted: int) -> list[Disputed]:
    """Records with at least ``min_submitted`` submitted responses that the project's rules do not settle."""
    rules = rules_of(project)
    held = {(r["dataset"], r["record_id"]): r for r in records}
    by_record: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in responses:
        if r["status"] == "submitted":
            by_record[(r["dataset"], r["record_id"])].append(r)
    out = []
    for (ds, rid), rs in sorted(by_record.items()):
        if len(rs) < min_submitted:
            continue
        d = decide(rules, rs, drafts(held.get((ds, rid), {}), rules))
        if not d.settled:
            out.append(Disputed(ds, rid, d, sorted(rs, key=lambda r: r["annotator"])))
    return out


def _cell(value: Any) -> str:
    text = "*(blank)*" if value in (None, "") else str(value)
    return text.replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def annotations_markdown(item: Disputed, questions: list[str]) -> str:
    """One row per question, one column per annotator; the undecided questions are named first."""
    who = [r["annotator"] for r in item.responses]
    lines = [f"**Undecided:** {', '.join(item.decision.disputed)}", "",
             "| question | " + " | ".join(who) + " |", "|---|" + "---|" * len(who)]
    for q in questions:
        values = [(r.get("values") or {}).get(q) for r in item.responses]
        if any(v not in (None, "") for v in values):
            lines.append(f"| {q} | " + " | ".join(_cell(v) for v in values) + " |")
    return "\n".join(lines)


def adjudication_spec(project: str) -> ProjectSpec:
    """The project's questions over its fields (all optional: a record shows what it had) plus the
    annotators' answers."""
    ps = spec(project)
    fields = tuple(FieldSpec(f.name, f.title, required=False, markdown=f.markdown) for f in ps.fields)
    return ProjectSpec(f"adjudication-{project}", (ANNOTATIONS, *fields), ps.questions, ps.metadata)


def adjudication_records(project: str, items: list[Disputed], records: list[dict]) -> dict[str, list[ProjectRecord]]:
    """Adjudication dataset (by the project dataset it comes from) -> its records: the original fields,
    the annotators' answers, the original drafts of text questions pre-filled (never a label)."""
    ps = spec(project)
    held = {(r["dataset"], r["record_id"]): r for r in records}
    texts = {q.name for q in ps.questions if not q.is_label}
    out: dict[str, list[ProjectRecord]] = defaultdict(list)
    for item in items:
        rec = held.get((item.dataset, item.record_id), {})
        drafts = [Suggestion(q, v, "draft") for q, v in sorted((rec.get("suggestions") or {}).items())
                  if q in texts and v]
        out[item.dataset].append(ProjectRecord(
            id=item.record_id,
            fields={ANNOTATIONS.name: annotations_markdown(item, [q.name for q in ps.questions]),
                    **{k: v for k, v in (rec.get("fields") or {}).items() if k != "hints"}},
            metadata={**(rec.get("metadata") or {}), "dataset": item.dataset, "disputed": ",".join(item.decision.disputed)},
            suggestions=drafts))
    return dict(out)


def _argilla_settings(project: str, client):
    import argilla as rg

    ps = adjudication_spec(project)
    questions = [rg.LabelQuestion(name=q.name, title=q.title, labels=q.labels, required=q.required, client=client)
                 if q.is_label else rg.TextQuestion(name=q.name, title=q.title, required=q.required, client=client)
                 for q in ps.questions]
    return rg.Settings(
        fields=[rg.TextField(name=f.name, title=f.title, required=f.required, use_markdown=f.markdown, client=client)
                for f in ps.fields],
        questions=questions, metadata=[], allow_extra_metadata=True,
        guidelines="Adjudication: the annotators did not agree on these records. Their answers are in the first "
                   "field; answer as the guidelines below say. Your verdict settles the record.\n\n"
                   + guidelines_text(project),
        distribution=rg.TaskDistribution(min_submitted=1))


@dataclass
class AdjudicationPush:
    dataset: str
    records: int
    new: int


def push_adjudication(rg_client, settings: AnnotateSettings, project: str,
                      batches: dict[str, list[ProjectRecord]]) -> list[AdjudicationPush]:
    """Create the adjudication workspace, adjudicators and datasets as needed and add the records not
    there yet (a record already pushed keeps its dataset entry and any verdict)."""
    import argilla as rg

    if not settings.adjudicators():
        raise InputError("no adjudicator: add a user with `role: adjudicator` to annotate.users")
    ensure_users(rg_client, settings)
    out = []
    for source, recs in sorted(batches.items()):
        name = adjudication_name(settings, source)
        dataset = get_dataset(rg_client, name, settings.adjudication_workspace)
        if dataset is None:
            dataset = rg.Dataset(name=name, workspace=settings.adjudication_workspace,
                                 settings=_argilla_settings(project, rg_client), client=rg_client).create()
        there = server_records(rg_client, str(dataset.id))
        todo = [r for r in recs if r.id not in there]
        if todo:
            dataset.records.log(to_argilla_records(todo))
        out.append(AdjudicationPush(name, len(recs), len(todo)))
    return out

