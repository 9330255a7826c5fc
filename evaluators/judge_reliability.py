"""How reliable the judge panel is, measured in the run instead of assumed.

- Self-consistency per judge (``evaluate run --judge-repeats N``): each judge is asked N more times about
  every answered item, at a temperature above 0 (the judge's own when it has one, else
  ``--repeat-temperature``) and with seed = the endpoint's seed + repeat index. Seed and temperature are
  part of the LLM layer's cache key, so every repeat is a real new request (a re-run reads the same repeats
  back from the cache, paying nothing); a judge at temperature 0 would only echo its first verdict.
  Self-consistency is the share of items given the same verdict in all N repeats (items where some repeat
  failed are left out and counted).
- Agreement across the panel: Fleiss' kappa over the judges' scoring votes on every item all of them
  judged (needs two judges or more).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from babelrag.evaluators.xrag_judge import repeated_votes
from babelrag.stats import fleiss_kappa

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.llm.client import LLMRunner

NOTE = ("repeats re-ask each judge at a temperature above 0 with seed = endpoint seed + repeat index (both "
        "part of the response cache key), so they are new samples, not cached copies of the first verdict")


def panel_agreement(votes: Sequence[Mapping[str, Optional[bool]]], judges: Sequence[str]) -> dict[str, Any]:
    """Fleiss' kappa of the panel over the items every judge voted on (``votes``: judge -> vote per item)."""
    if len(judges) < 2:
        return {"judges": list(judges), "fleiss_kappa": None, "items": 0,
                "why": "one judge: agreement across a panel needs two or more"}
    full = [[v[j] for j in judges] for v in votes if all(v.get(j) is not None for j in judges)]
    return {"judges": list(judges), "fleiss_kappa": fleiss_kappa(full) if full else None, "items": len(full),
            "left_out": len(votes) - len(full)}


def repeat_temperature(runner: "LLMRunner", judge: str, fallback: float) -> float:
    """The judge's own temperature when it samples, else ``fallback`` (repeats at 0 would be copies)."""
    own = runner.settings.endpoint(judge)[1].temperature
    return float(own) if own else float(fallback)


def self_consistency(runner: "LLMRunner", judges: Sequence[str], items: Sequence[Mapping[str, str]],
                     item_ids: Sequence[str], repeats: int, temperature: float) -> dict[str, Any]:
    """Ask every judge ``repeats`` times per item (``items`` carry question, gold, answer); per judge the
    share of items with one verdict in every repeat."""
    out: dict[str, Any] = {}
    for judge in judges:
        temp = repeat_temperature(runner, judge, temperature)
        runs = repeated_votes(runner, judge, items, item_ids, repeats, temp)
        complete = [vs for vs in zip(*runs) if all(v is not None for v in vs)]
        same = sum(len(set(vs)) == 1 for vs in complete)
        out[judge] = {"repeats": repeats, "temperature": temp, "items": len(complete),
                      "failed_items": len(item_ids) - len(complete),
                      "self_consistency": same / len(complete) if complete else None,
                      "correct_share_per_repeat": [sum(bool(v) for v in run if v is not None)
                                                   / max(1, sum(v is not None for v in run)) for run in runs]}
    return {"note": NOTE, "judges": out}
