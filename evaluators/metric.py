"""What a metric is: one object with a name, the prompts it owns, a ``score`` and its leaderboard columns.

A metric is registered once (``registry.register``) under the name the config (``evaluate.metrics``), the
CLI (``babelrag evaluate metrics``), results.json and the report all use. It scores one model's answers at
a time; an arena-style metric may also ``compare`` the models after all of them are scored.

It also owns its report view: what ``views`` / ``compare`` put into ``evaluation.view(name)`` reaches the report
as ``ReportInputs.views[name]`` and is shown by the metric's ``view_results`` (results.json entries),
``view_plots`` (PNG figures) and ``view_html`` / ``view_markdown`` (a report section). A metric with its own
view is one module; nothing shared names it.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from babelrag.failed_items import is_retryable

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.evaluators.answers import AnswerRecord
    from babelrag.evaluators.execution import Evaluation
    from babelrag.evaluators.report_views import ReportPage
    from babelrag.evaluators.results import ScoreResult
    from babelrag.evaluators.settings import EvalSettings
    from babelrag.records import Instance


@dataclass(frozen=True)
class FailedJudgeCall:
    """One judge call (one item of one judge prompt) that got no answer, or no usable one."""

    stage: str  # the LLM stage, e.g. ``eval.xrag.judge.judge-1``
    judge: str  # the judge endpoint's name
    item_id: str
    reason: str  # the LLM layer's reason (timeout, server_error, invalid_json, ...)
    error: str
    cached: bool = False  # a final outcome answered from the LLM cache (no call made this run)


class JudgeRunner:
    """The LLM runner as metrics use it: calls pass through unchanged; a judge call that got no answer is
    recorded in ``failed``, one whose final outcome holds no usable reply (unreadable after the repair re-ask,
    or refused as a bad request) in ``unusable`` (both in call order). Anything else (``settings``, ``usage``,
    ``embed``) is the wrapped runner's."""

    def __init__(self, runner: Any) -> None:
        self.runner = runner
        self.failed: list[FailedJudgeCall] = []
        self.unusable: list[FailedJudgeCall] = []

    def __getattr__(self, name: str) -> Any:
        if name == "runner":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.runner, name)

    def map_structured(self, *, endpoint: Any, stage: str, **kwargs: Any) -> list[Any]:
        return self._record(endpoint, stage, self.runner.map_structured(endpoint=endpoint, stage=stage, **kwargs))

    def map_text(self, *, endpoint: Any, stage: str, **kwargs: Any) -> list[Any]:
        return self._record(endpoint, stage, self.runner.map_text(endpoint=endpoint, stage=stage, **kwargs))

    def _record(self, endpoint: Any, stage: str, results: list[Any]) -> list[Any]:
        for r in results:
            if not r.ok:
                (self.failed if is_retryable(r.reason) else self.unusable).append(FailedJudgeCall(
                    stage, r.endpoint or str(endpoint), r.item_id, r.reason or "", r.error or "",
                    cached=bool(getattr(r, "cached", False))))
        return results

    def failed_items(self, since: int = 0) -> Counter[str]:
        """Item id -> judge calls that got no answer, among those recorded after the ``since``-th."""
        return Counter(f.item_id for f in self.failed[since:])


@dataclass(frozen=True)
class Column:
    """A leaderboard column: ``name`` as shown, ``key`` the aggregate of the metric's result it shows
    (None: the metric fills it itself in ``compare``, e.g. a Bradley-Terry rating)."""

    name: str
    key: Optional[str] = None


@dataclass
class MetricRun:
    """What every metric sees: the LLM runner, the instances by id, the judges, the languages answers
    are detected among, the run settings, and what metrics share (support models, loaded once). The runner
    is wrapped in a ``JudgeRunner``: judge calls that got no answer are recorded (``judge_calls`` sums them up)."""

    runner: Any
    instances: Mapping[str, "Instance"]
    judges: Sequence[str]
    languages: Sequence[str]
    settings: "EvalSettings"
    shared: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.runner, JudgeRunner):
            self.runner = JudgeRunner(self.runner)

    @property
    def judge(self) -> str:
        """The judge for single-judge metrics (the panel's first)."""
        return self.judges[0]


class Metric:
    name: ClassVar[str]
    description: ClassVar[str] = ""
    prompts: ClassVar[tuple[str, ...]] = ()  # prompt files it renders: evaluators/prompts/<id>.yaml
    columns: ClassVar[tuple[Column, ...]] = ()
    # True: ``score`` gets every instance's record and scores the unanswered ones (``ok`` False: missing from
    # an answers file, or a failed generation) as wrong without calling a model (``coverage``). False (a
    # plug-in that does not know about them): it gets the answered records only.
    scores_unanswered: ClassVar[bool] = False
    # the item values the report's per-answer view shows for this metric (None: every number of its item)
    answer_keys: ClassVar[Optional[tuple[str, ...]]] = None
    # a metric that gives each answer a verdict: the header of its own per-answer column (``answer_html``) and
    # what its ✓ means (``answer_verdict``); None: its item values go into the "metric scores" column
    answer_column: ClassVar[Optional[str]] = None
    answer_verdict_means: ClassVar[str] = ""

    def prepare(self, settings: "EvalSettings") -> dict[str, Any]:
        """Check settings and load what the metric needs before any LLM call (fail fast); the returned
        values land in ``MetricRun.shared``."""
        return {}

    def score(self, run: MetricRun, model: str, answers: Sequence["AnswerRecord"]) -> Optional["ScoreResult"]:
        """Score one model's answers (with ``scores_unanswered``: also its unanswered instances, as wrong);
        None when there is nothing to score (e.g. no answer cites)."""
        raise NotImplementedError

    def views(self, run: MetricRun, model: str, result: "ScoreResult", evaluation: "Evaluation") -> None:
        """After one model is scored: what the report shows beyond leaderboard columns (counts, per-language
        plots, breakdown tables), written into ``evaluation.view(self.name)``. Default: none."""

    def compare(self, run: MetricRun, results: Mapping[str, "ScoreResult"], answers: Mapping[str, Sequence["AnswerRecord"]],
                evaluation: "Evaluation") -> None:
        """After every model is scored: cross-model work (battles, ratings). Default: none."""

    # ---------------------------------------------------------------- its report view

    def view_results(self, view: Mapping[str, Any]) -> dict[str, Any]:
        """The results.json entries of the view (top-level keys). Default: the view under ``views.<name>``."""
        return {"views": {self.name: dict(view)}}

    def view_plots(self, view: Mapping[str, Any]) -> dict[str, bytes]:
        """Figures of the view, title -> PNG (written to plots/, inlined in report.html). Default: none."""
        return {}

    def view_html(self, view: Mapping[str, Any], page: "ReportPage") -> str:
        """The view's section of report.html ("" = none)."""
        return ""

    def view_markdown(self, view: Mapping[str, Any], page: "ReportPage") -> str:
        """The view's part of leaderboard.md ("" = none)."""
        return ""

    # ---------------------------------------------------------------- its per-answer verdict (``answer_column``)

    def answer_verdict(self, item: Optional[Mapping[str, Any]]) -> Optional[bool]:
        """The answer's mark in the per-answer view: True ✓, False ✗, None – (no verdict / no item)."""
        return None

    def answer_html(self, item: Optional[Mapping[str, Any]]) -> str:
        """The answer's cell in the metric's own per-answer column (HTML; "" without an item)."""
        return ""

    def judge_verdicts(self, result: "ScoreResult") -> dict[str, bool]:
        """Answer id -> the judges' verdict (True: correct), written to answers.jsonl as ``judge_verdict``:
        the annotators' hint, compared with their own verdicts. Default: none."""
        return {}

    def leaderboard(self, result: "ScoreResult") -> dict[str, Any]:
        """The columns this metric adds to a model's leaderboard row."""
        return {c.name: result.aggregate[c.key] for c in self.columns if c.key and c.key in result.aggregate}
