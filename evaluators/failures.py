"""Answer-generation failures: a run that produced no answer must fail loudly, a partly failing model warns.

A failed generation measures the endpoint, not the model (see ``execution``), so metrics leave it out. But
when *every* answer of a model failed (wrong URL, 404, refused key) there is nothing to score, and a
report saying "no results" with exit code 0 hides that; the run stops with an error naming the endpoint
and the first error instead. Above ``WARN_SHARE`` failed answers a model's numbers rest on a subset, which
the run says per model (console and results.json ``warnings``).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from babelrag.errors import BabelragError

WARN_SHARE = 0.1  # warn when more than this share of a model's answers failed


class GenerationFailed(BabelragError):
    """No answer could be produced by one or more model endpoints."""


@dataclass(frozen=True)
class ModelFailures:
    model: str
    endpoint: str  # base URL and served model name
    answers: int
    failed: int
    first_error: str

    @property
    def share(self) -> float:
        return self.failed / self.answers if self.answers else 0.0

    def line(self) -> str:
        return (f"model {self.model!r} ({self.endpoint}): {self.failed} of {self.answers} answers failed; "
                f"first error: {self.first_error}")


def model_failures(answers: Sequence[Any], endpoints: Mapping[str, str]) -> list[ModelFailures]:
    """Failure counts per model (every model that has answers), in model order."""
    total: Counter = Counter()
    failed: Counter = Counter()
    first: dict[str, str] = {}
    for a in answers:
        total[a.model] += 1
        if not a.ok:
            failed[a.model] += 1
            first.setdefault(a.model, a.error or "no error message")
    return [ModelFailures(m, endpoints.get(m, "?"), total[m], failed[m], first.get(m, "")) for m in sorted(total)]


def check_failures(answers: Sequence[Any], endpoints: Mapping[str, str],
                   warn_share: float = WARN_SHARE) -> list[str]:
    """Raise GenerationFailed when a model produced no answer at all; else the warning lines of the models
    whose failure share is above ``warn_share``."""
    per_model = model_failures(answers, endpoints)
    dead = [f for f in per_model if f.answers and f.failed == f.answers]
    if dead:
        raise GenerationFailed("no answer could be produced: " + "; ".join(f.line() for f in dead)
                               + ". Check the endpoint's base_url, model name and key (answers.jsonl lists "
                                 "every error)")
    return [f.line() + f" ({f.share:.0%}; scores rest on the other answers)" for f in per_model
            if f.share > warn_share]
