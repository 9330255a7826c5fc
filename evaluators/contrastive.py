"""Ragas-for-low-resource experiment: which scoring variant agrees best with human forced choices.

Each contrastive pair (design §9) has two sides (context + answer) and the side humans preferred.
For one criterion (faithfulness, answer_relevance, context_relevance) every variant scores both sides:
- ``direct``: the judge gives each side a 1-5 score (``ragas_direct``);
- ``comparative``: the judge picks the better side (``ragas_compare``, sides shown in seeded order);
- ``decomposition``: Ragas' statement / generated-question / essential-sentence arithmetic.
Agreement with humans uses ``ragas.forced_choice_agreement``. Pairs where a variant's judge failed
are left out of that variant and counted as ``judge_failed`` (never turned into ties). The judge calls go
through ``evaluate run``'s ``JudgeRunner``: a pair with a judge call that got *no answer* (timeout, 5xx, ...;
``judge_calls``) is left out and counted, also as ``judge_no_answer``, even where the variant's arithmetic would
have made a score of the empty reply (decomposition's context relevance: no essential sentence = 0); a re-run
retries exactly those calls, the answered ones come from the LLM cache.
"""
from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from babelrag.errors import InputError
from babelrag.records import ContrastivePair
from babelrag.evaluators.ragas import (
    PairPreference,
    Encoder,
    answer_relevance,
    context_relevance,
    faithfulness,
    forced_choice_agreement,
    ragas_decomposition,
)
from babelrag.evaluators.judges import Choice, prompt, reply_values, scores_1_to_5
from babelrag.evaluators.metric import JudgeRunner
from babelrag.evaluators.results import ScoreResult

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.llm.client import LLMRunner

PROMPTS = ("ragas_direct", "ragas_compare")  # the prompt files these comparisons own (the rest: ragas.RagasMetric)
CRITERIA = ("faithfulness", "answer_relevance", "context_relevance")
VARIANTS = ("direct", "comparative", "decomposition")


def human_pairs(pairs: Sequence[ContrastivePair], decisions: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, str]]]:
    """``compare_variants`` input per criterion, straight from ``construct contrastive``'s pairs and
    ``annotate pull forced_choice``'s decisions (``human_prefers_better``, positions already mapped back
    from A/B): the side humans preferred is the pair's ``better`` option or the other one. Pairs without
    a human decision (undecided, or not annotated) are left out. For context relevance the options are
    the contexts."""
    by_id = {p.id: p for p in pairs}
    unknown = sorted(str(d.get("id")) for d in decisions if d.get("id") not in by_id)
    if unknown:
        raise InputError(f"forced-choice decisions for pairs not in the pairs file: {', '.join(unknown[:5])}; "
                         "give the contrastive pairs file that was pushed")
    out: dict[str, list[dict[str, str]]] = {}
    for d in decisions:
        prefers = d.get("human_prefers_better")
        if prefers is None:
            continue
        p = by_id[d["id"]]
        human = p.better if prefers else ("b" if p.better == "a" else "a")
        if p.kind == "context_relevance":
            sides = {"context_a": p.option_a, "context_b": p.option_b, "answer_a": "", "answer_b": ""}
        else:
            sides = {"context_a": p.context, "context_b": p.context, "answer_a": p.option_a, "answer_b": p.option_b}
        out.setdefault(p.kind, []).append({"pair_id": p.id, "question": p.question, **sides, "human": human})
    return out


def _sides(pairs: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """Flatten pairs into side records a, b, a, b, ... with ids ``<pair>:<side>``."""
    out = []
    for p in pairs:
        for side in ("a", "b"):
            out.append({"query_id": f"{p['pair_id']}:{side}", "question": p["question"],
                        "context": p[f"context_{side}"], "answer": p[f"answer_{side}"]})
    return out


def ragas_compare(
    runner: "LLMRunner", endpoint: str, criterion: str, pairs: Sequence[Mapping[str, str]], seed: int = 0,
) -> list[Optional[str]]:
    """Comparative ranking: "a"/"b" per pair (None on failure). Sides are shown in a seeded random
    order per pair so position bias cannot line up with the human labels."""
    rng = random.Random(seed)
    swaps = [rng.random() < 0.5 for _ in pairs]
    items = []
    for p, swap in zip(pairs, swaps):
        a, b = ("b", "a") if swap else ("a", "b")
        items.append({"criterion": criterion, "question": p["question"],
                      "context_a": p[f"context_{a}"], "answer_a": p[f"answer_{a}"],
                      "context_b": p[f"context_{b}"], "answer_b": p[f"answer_{b}"]})
    res = reply_values(runner.map_structured(
        endpoint=endpoint, prompt=prompt("ragas_compare"), schema=Choice, stage=f"eval.ragas.compare.{criterion}",
        items=items, item_ids=[str(p["pair_id"]) for p in pairs]))
    out: list[Optional[str]] = []
    for v, swap in zip(res, swaps):
        if v is None:
            out.append(None)
        else:
            shown_first = v.choice == "A"
            out.append("a" if shown_first != swap else "b")
    return out


def _decomposition_scores(
    runner: "LLMRunner", endpoint: str, criterion: str, sides: list[dict[str, str]], encoder: Encoder | None,
) -> list[float]:
    d = ragas_decomposition(runner, endpoint, sides)
    if criterion == "faithfulness":
        return [faithfulness(x["supported"]) for x in d["faithfulness"]]
    if criterion == "context_relevance":
        return [context_relevance(x["essential"], x["context"])[0] for x in d["context_relevance"]]
    if encoder is None:
        raise InputError("answer_relevance by decomposition needs an encoder (texts -> vectors)")
    return [answer_relevance(x["question"], x["generated"], encoder, x["noncommittal"]) for x in d["answer_relevance"]]


def compare_variants(
    runner: "LLMRunner",
    endpoint: str,
    criterion: str,
    pairs: Sequence[Mapping[str, str]],
    encoder: Encoder | None = None,
    variants: Sequence[str] = VARIANTS,
    rounds: int = 1000,
    seed: int = 0,
) -> dict[str, ScoreResult]:
    """Agreement with the human choice (``pairs[i]["human"]`` = "a"/"b") for each variant."""
    if criterion not in CRITERIA:
        raise InputError(f"criterion {criterion!r} is not one of {CRITERIA}")
    bad = sorted(set(variants) - set(VARIANTS))
    if bad:
        raise InputError(f"unknown variant(s) {bad}; choose from {VARIANTS}")
    for p in pairs:
        if p.get("human") not in ("a", "b"):
            raise InputError(f"pair {p.get('pair_id')!r}: human choice must be 'a' or 'b', got {p.get('human')!r}")
    sides = _sides(pairs)
    runner = runner if isinstance(runner, JudgeRunner) else JudgeRunner(runner)
    out: dict[str, ScoreResult] = {}
    for variant in variants:
        since = len(runner.failed)
        choices: list[Any] = []
        raw: list[float] = []
        if variant == "comparative":
            choices = ragas_compare(runner, endpoint, criterion, pairs, seed=seed)
        elif variant == "direct":
            items: list[dict[str, Any]] = [{**s, "criterion": criterion.replace("_", " ")} for s in sides]
            raw = scores_1_to_5(runner, endpoint, "ragas_direct",
                                [{k: it[k] for k in ("criterion", "question", "context", "answer")} for it in items],
                                [s["query_id"] for s in sides])
        else:
            raw = _decomposition_scores(runner, endpoint, criterion, sides, encoder)
        no_answer = set(runner.failed_items(since))  # item ids: "<pair>" (comparative) or "<pair>:<side>"
        built: list[PairPreference] = []
        failed = unanswered = 0
        for k, p in enumerate(pairs):
            pid = str(p["pair_id"])
            pref: PairPreference | None = None
            if {pid, f"{pid}:a", f"{pid}:b"} & no_answer:  # no verdict from it, whatever the arithmetic makes of it
                unanswered += 1
            elif variant == "comparative":
                pref = None if choices[k] is None else PairPreference(pid, p["human"], choice=choices[k])
            elif not (math.isnan(raw[2 * k]) or math.isnan(raw[2 * k + 1])):
                pref = PairPreference(pid, p["human"], score_a=raw[2 * k], score_b=raw[2 * k + 1])
            if pref is None:
                failed += 1
            else:
                built.append(pref)
        res = forced_choice_agreement(built, rounds=rounds, seed=seed)
        res.metric = f"ragas.{criterion}.{variant}"
        res.counts["judge_failed"] = failed
        res.counts["judge_no_answer"] = unanswered
        out[variant] = res
    return out
