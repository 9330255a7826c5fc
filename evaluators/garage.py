"""GaRAGe metrics computed from per-item and per-sentence judgements.

GaRAGe released data only, so the definitions are ours (from the paper's text):
- eligibility: the response has no major issue compared with the gold answer (judge);
- unadjusted factuality: every sentence is supported by at least one grounding passage;
- factuality: eligible AND unadjusted-factual;
- relevance-aware factuality (RAF): eligible AND every sentence is supported by at least one
  passage the gold labels mark relevant (so support from outdated/irrelevant passages does not count);
- deflection: on questions whose grounding is insufficient the model should deflect
  ("not enough information"). True-positive rate = deflected / questions needing deflection;
  false-positive rate = deflected / answerable questions;
- attribution precision/recall/F1 of the passages the response cites vs the gold passages (same
  conventions as RAGE citations, see ``citations.prf``). On GaRAGe's released data the gold are the
  ANSWER-THE-QUESTION passages (not the wider ``evidence_relevant`` set) and citations are read from the
  response's ``[cite_N]`` markers: ``score_garage`` accepts loaded ``GarageRecord``s directly (scoring the
  human answer) or ``GarageItem.from_record(record, response, ...)`` for a model's response.

Conventions: answer-quality metrics (eligibility, factuality, RAF, attribution) are defined on
answerable questions only; a deflection on an answerable question is ineligible and unfactual. A
non-deflected response with no sentences is ineligible with factuality 0. When a judge failed or did not
run (``deflected``/``eligible``/``sentence_support`` is None) the metrics that need that judgement are
NaN for the item; attribution needs no judge.
Undefined values are NaN and counted by the aggregator, never averaged as zero.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from babelrag.errors import InputError
from babelrag.evaluators.answers import passages_shown
from babelrag.evaluators.citations import parse_citations, prf, strip_citations
from babelrag.evaluators.judges import Deflection, Eligibility, prompt, reply_values, sentence_support
from babelrag.evaluators.metric import Column, Metric, MetricRun
from babelrag.evaluators.registry import register
from babelrag.evaluators.results import ScoreResult, make_result, summarise
from babelrag.release.loaders.garage import GarageRecord

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.llm.client import LLMRunner

NAN = float("nan")
SCORE_KEYS = (
    "eligibility", "unadjusted_factuality", "factuality", "raf",
    "deflection_tp", "deflection_fp", "attribution_precision", "attribution_recall", "attribution_f1",
)


@dataclass(frozen=True)
class GarageItem:
    """Judgements for one response.

    ``sentence_support[k]`` lists the passage ids the judge found supporting sentence k;
    ``relevant`` are the gold-relevant passage ids; ``cited`` the ids the response cites.
    """

    query_id: str
    requires_deflection: bool
    deflected: Optional[bool]  # None: deflection judge failed
    eligible: Optional[bool] = None  # None: not judged (deflection questions, deflections, judge failure)
    sentence_support: Optional[Sequence[Sequence[str]]] = field(default_factory=tuple)  # None: not judged
    relevant: Sequence[str] = field(default_factory=tuple)
    cited: Sequence[str] = field(default_factory=tuple)
    category: str = ""  # the question's complexity (the instance's q_type): GaRAGe reports per complexity

    @classmethod
    def from_record(cls, record: Any, response: Optional[str] = None, deflected: Optional[bool] = None,
                    eligible: Optional[bool] = None,
                    sentence_support: Optional[Sequence[Sequence[str]]] = None) -> "GarageItem":
        """The item for a loaded ``GarageRecord`` and a response (default: the record's human answer).

        Gold = the record's ANSWER-THE-QUESTION passages; cited = the response's ``[cite_N]`` markers
        (a citation beyond the grounding is kept as a wrong one). Judgements default to "not judged".
        """
        text = record.answer_generate if response is None else response
        parsed = parse_citations(text, len(record.passages))
        return cls(query_id=record.sample_id, requires_deflection=record.requires_deflection, deflected=deflected,
                   eligible=eligible, sentence_support=sentence_support, relevant=tuple(record.attribution_ids),
                   cited=tuple(f"cite_{m}" for m in parsed.ordered), category=record.category)


def score_item(it: GarageItem) -> dict[str, Any]:
    row: dict[str, Any] = {"query_id": it.query_id, "requires_deflection": it.requires_deflection,
                           "deflected": it.deflected, **({"category": it.category} if it.category else {})}
    known = it.deflected is not None
    row["deflection_tp"] = float(it.deflected) if it.requires_deflection and known else NAN
    row["deflection_fp"] = float(it.deflected) if not it.requires_deflection and known else NAN
    if it.requires_deflection:
        row.update({k: NAN for k in SCORE_KEYS if not k.startswith("deflection")})
        return row
    if it.deflected or (it.sentence_support is not None and not it.sentence_support):
        row.update(eligibility=0.0, unadjusted_factuality=0.0, factuality=0.0, raf=0.0)
        row.update(attribution_precision=NAN, attribution_recall=NAN, attribution_f1=NAN)
        return row
    relevant = set(it.relevant)
    p, r, f1 = prf(set(it.cited), relevant)
    if it.sentence_support is None:  # no support judgement: eligibility (when judged) and attribution only
        row.update(eligibility=NAN if it.eligible is None else float(it.eligible), unadjusted_factuality=NAN,
                   factuality=NAN, raf=NAN, attribution_precision=p, attribution_recall=r, attribution_f1=f1)
        return row
    supported = all(len(s) > 0 for s in it.sentence_support)
    relevant_supported = all(relevant.intersection(s) for s in it.sentence_support)
    if it.eligible is None:  # eligibility judge failed: only the unadjusted metric is defined
        elig = fact = raf = NAN
    else:
        elig, fact, raf = float(it.eligible), float(it.eligible and supported), float(it.eligible and relevant_supported)
    row.update(
        eligibility=elig,
        unadjusted_factuality=float(supported),
        factuality=fact,
        raf=raf,
        attribution_precision=p, attribution_recall=r, attribution_f1=f1,
        n_sentences=len(it.sentence_support),
        supported_sentences=sum(len(s) > 0 for s in it.sentence_support),
    )
    return row


def score_garage(items: Iterable[Any], rounds: int = 1000, seed: int = 0) -> ScoreResult:
    """All GaRAGe metrics with bootstrap CIs; deflection rates are means over their own subsets.

    Items are ``GarageItem``s, mappings of its fields, or loaded ``GarageRecord``s (scored as their
    human answer: attribution only, no judge)."""

    rows = []
    for i, it in enumerate(items):
        if isinstance(it, GarageRecord):
            it = GarageItem.from_record(it)
        elif isinstance(it, Mapping):
            try:
                it = GarageItem(**it)
            except TypeError as exc:
                raise InputError(f"garage item {i}: {exc}") from exc
        rows.append(score_item(it))
    counts = {
        "items": len(rows),
        "deflection_questions": sum(r["requires_deflection"] for r in rows),
        "answerable_questions": sum(not r["requires_deflection"] for r in rows),
    }
    res = make_result("garage", rows, SCORE_KEYS, rounds=rounds, seed=seed, counts=counts)
    # undefined-by-design counts are noise: report failed deflection judgements instead
    for key in ("deflection_tp", "deflection_fp"):
        res.counts.pop(f"{key}_undefined", None)
    res.counts["deflection_unjudged"] = sum(r["deflected"] is None for r in rows)
    add_per_category(res, rows, rounds=rounds, seed=seed)
    return res


def add_per_category(res: ScoreResult, rows: list[dict[str, Any]], rounds: int, seed: int) -> None:
    """GaRAGe's paper reports its metrics per question complexity: each key again over each category's items,
    as ``<key> [<category>]``, with ``items [<category>]`` in the counts (only when the items carry one)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("category"):
            groups.setdefault(row["category"], []).append(row)
    for category, group in sorted(groups.items()):
        agg, _ = summarise(group, SCORE_KEYS, rounds=rounds, seed=seed)
        res.aggregate.update({f"{key} [{category}]": est for key, est in agg.items()})
        res.counts[f"items [{category}]"] = len(group)


def garage_judgements(
    runner: "LLMRunner", endpoint: str, records: Sequence[Mapping[str, Any]],
) -> list[GarageItem]:
    """Judge responses into GarageItems.

    Each record: ``query_id``, ``question``, ``gold``, ``response``, ``passages`` ({id: text}),
    ``relevant`` (gold-relevant ids), ``requires_deflection``, optional ``cited`` (ids).
    """
    ids = [str(r["query_id"]) for r in records]
    defl = reply_values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("garage_deflection"), schema=Deflection, stage="eval.garage.deflection",
        items=[{"question": r["question"], "response": r["response"]} for r in records], item_ids=ids))
    elig = reply_values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("garage_eligibility"), schema=Eligibility, stage="eval.garage.eligibility",
        items=[{"question": r["question"], "gold": r["gold"], "response": r["response"]} for r in records],
        item_ids=ids))
    support = sentence_support(runner, endpoint, records)
    out = []
    for r, d, e, sup in zip(records, defl, elig, support):
        out.append(GarageItem(
            query_id=str(r["query_id"]), requires_deflection=bool(r["requires_deflection"]),
            deflected=None if d is None else d.deflected,  # None: the judge failed (counted)
            eligible=None if e is None else e.eligible,
            # None: the support judge failed or gave no usable reply; the factuality metrics are then undefined
            # (NaN, counted), not 0 as if no sentence were supported
            sentence_support=sup,
            relevant=list(r.get("relevant", ())), cited=list(r.get("cited", ())),
            category=str(r.get("category") or ""),
        ))
    return out


@register
class GarageMetric(Metric):
    """GaRAGe on our instances: relevant = the supporting documents shown; an instance shown no supporting
    document should be deflected."""

    name = "garage"
    answer_keys = ("eligibility", "factuality", "raf", "attribution_f1")  # shown per answer in the report
    description = "eligibility, factuality, relevance-aware factuality, deflection, attribution (GaRAGe)"
    prompts = ("garage_deflection", "garage_eligibility", "garage_support")
    columns = (Column("eligibility", "eligibility"), Column("factuality", "factuality"), Column("raf", "raf"))
    scores_unanswered = True

    def score(self, run: MetricRun, model: str, answers: Sequence[Any]) -> Optional[ScoreResult]:
        """The judges see the answered responses; an unanswered instance is scored as wrong without a judge:
        ineligible, unfactual, and its deflection wrong both ways (declining an answerable question, not
        deflecting one that needs it)."""
        shown = [a for a in answers if a.doc_order]
        if not shown:
            return None
        records = []
        missing = [GarageItem(query_id=a.id, requires_deflection=not a.relevant, deflected=bool(a.relevant),
                              eligible=False, sentence_support=[], relevant=[str(k) for k in a.relevant])
                   for a in shown if not a.ok]
        for a in (a for a in shown if a.ok):
            inst, n = run.instances[a.instance_id], len(a.doc_order)
            records.append({
                "query_id": a.id, "question": inst.question, "gold": inst.answer,
                "response": strip_citations(a.answer), "passages": passages_shown(inst, a),
                "relevant": [str(k) for k in a.relevant], "requires_deflection": not a.relevant,
                # out-of-range citations stay: they are wrong citations, not nothing
                "cited": [str(c) for c in parse_citations(a.answer, n).ordered],
                "category": inst.q_type,  # per-complexity figures for a converted GaRAGe release
            })
        res = score_garage([*garage_judgements(run.runner, run.judge, records), *missing],
                           rounds=run.settings.rounds, seed=run.settings.seed)
        res.counts["unanswered"] = len(missing)
        return res
