"""What a release card says about annotation, computed from the pulled responses the merge used.

Why not the ``<project>.agreement.json`` files: they are snapshots of whenever ``annotate agreement`` last
ran (before an adjudication, or over the adjudicated subset), and they include the judgement of *model
answers*, which evaluates models and belongs with the evaluation. Here, for each dataset-annotation
project type (``ProjectType.dataset_annotation``) with pulled responses: agreement between annotators per
question over the final submitted responses (stale ones were moved out by ``push --update``; the
adjudicators' are in their own file), with the number of items and annotators, and how the records were
decided (by the annotators' rules, by an adjudicator, still disputed, still pending).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Optional

from . import registry
from .adjudication import drafts
from .agreement import agreement
from .decisions import decide
from .pull import read_adjudications, read_responses
from .settings import AnnotateSettings

EVALUATION_NOTE = ("Human judgement of model answers (`answer_judgement`) and forced choices between contrastive "
                   "answers (`forced_choice`) evaluate models and metrics, not this dataset: they are reported "
                   "with the evaluation (judge-human agreement in `results.json`), not here.")


def decision_counts(project: str, responses: list[dict], records: list[dict], adjudications: list[dict],
                    min_submitted: int) -> dict[str, int]:
    """Records by how they were decided: ``by_annotators`` (the rules settled them), ``by_adjudicator``,
    ``disputed`` (awaiting an adjudicator), ``pending`` (fewer than ``min_submitted`` responses)."""
    rules = registry.get(project).rules
    held = {(r["dataset"], r["record_id"]): r for r in records}
    adjudicated = {r["record_id"] for r in adjudications if r["status"] == "submitted"}
    by_record: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in responses:
        if r["status"] == "submitted":
            by_record[(r["dataset"], r["record_id"])].append(r)
    out: Counter[str] = Counter()
    for key in sorted(set(held) | set(by_record)):
        rs = by_record.get(key, [])
        if key[1] in adjudicated:
            out["by_adjudicator"] += 1
        elif len(rs) < min_submitted:
            out["pending"] += 1
        elif rules is None or decide(rules, rs, drafts(held.get(key, {}), rules)).settled:
            out["by_annotators"] += 1
        else:
            out["disputed"] += 1
    return {k: out.get(k, 0) for k in ("by_annotators", "by_adjudicator", "disputed", "pending")}


def dataset_annotation_summary(annotate_dir: Path, settings: AnnotateSettings) -> Optional[dict[str, Any]]:
    """The card's annotation summary (None when no dataset-annotation project was pulled)."""
    annotate_dir = Path(annotate_dir)
    summary: dict[str, Any] = {}
    evaluation = False
    for name in registry.names():
        path = annotate_dir / f"{name}.responses.jsonl"
        if not path.exists():
            continue
        if not registry.get(name).dataset_annotation:
            evaluation = True
            continue
        responses = [r for r in read_responses(path) if r["status"] == "submitted"]
        records_path = annotate_dir / f"{name}.records.jsonl"
        records = read_responses(records_path) if records_path.exists() else []
        rows = [{"dataset": a.dataset, "question": a.question, "items": a.items, "annotators": a.annotators,
                 "raw_agreement": a.raw_agreement, "cohen_kappa": a.cohen_kappa, "fleiss_kappa": a.fleiss_kappa}
                for a in agreement(responses, name) if a.items]
        summary[f"{name}: agreement between annotators (final responses)"] = rows or [
            {"dataset": "-", "question": "-", "items": 0, "annotators": len({r["annotator"] for r in responses})}]
        summary[f"{name}: how records were decided"] = {
            "records": len({(r["dataset"], r["record_id"]) for r in [*records, *responses]}), "annotators": len({r["annotator"] for r in responses}),
            **decision_counts(name, responses, records, read_adjudications(annotate_dir, name),
                              settings.project(name).min_submitted or 1)}
    if not summary:
        return None
    if evaluation:
        summary["model judgement"] = EVALUATION_NOTE
    return summary
