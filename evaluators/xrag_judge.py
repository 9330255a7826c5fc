"""XRAG's judge chain: the panel's verdict on each answer (``xrag_judge`` prompt), once per judge, and the
repeated verdicts ``judge_reliability`` measures self-consistency with."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Optional

from babelrag.evaluators.judges import CorrectVerdict, prompt, reply_values

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.llm.client import LLMRunner


def panel_votes(
    runner: "LLMRunner", judges: Sequence[str], items: Sequence[Mapping[str, str]], item_ids: Sequence[str],
    stage: str = "eval.xrag.judge",
) -> list[list[Optional[bool]]]:
    """One vote per judge endpoint per item (``None`` = that judge failed on the item).

    ``items`` carry ``question``, ``gold`` and ``answer``.
    """
    votes: list[list[Optional[bool]]] = [[] for _ in items]
    for judge in judges:
        res = runner.map_structured(endpoint=judge, prompt=prompt("xrag_judge"), items=list(items),
                                    schema=CorrectVerdict, stage=f"{stage}.{judge}", item_ids=list(item_ids))
        for k, v in enumerate(reply_values(res)):
            votes[k].append(None if v is None else v.correct)
    return votes

def repeated_votes(
    runner: "LLMRunner", judge: str, items: Sequence[Mapping[str, str]], item_ids: Sequence[str], repeats: int,
    temperature: float, stage: str = "eval.xrag.repeat",
) -> list[list[Optional[bool]]]:
    """``repeats`` fresh verdicts of one judge per item (one list per repeat): repeat r samples at
    ``temperature`` with seed = the endpoint's seed + r, so its cache key differs from every other repeat's."""
    base = runner.settings.endpoint(judge)[1].seed or 0
    out = []
    for r in range(1, repeats + 1):
        res = runner.map_structured(endpoint=judge, prompt=prompt("xrag_judge"), items=list(items),
                                    schema=CorrectVerdict, stage=f"{stage}.{judge}", item_ids=list(item_ids),
                                    sampling={"temperature": temperature, "seed": base + r})
        out.append([None if v is None else v.correct for v in reply_values(res)])
    return out
