"""XRAG: judge-panel majority vote, answer-language correctness, accuracy per setting and language.

Tie policy (explicit, chosen per run, recorded in every item):
- ``"incorrect"`` (default): a split panel has not agreed the answer is right, so it is wrong. This is
  the conservative reading and makes accuracy a lower bound when judges disagree.
- ``"correct"``: a split panel gives the benefit of the doubt.
- ``"first"``: the first judge in panel order that voted (the "chair") breaks the tie.
Judges that failed (``None`` votes, e.g. unparseable replies) abstain and are counted; an item where
every judge abstained gets no verdict: it is left out of accuracy and counted as ``no_verdict`` — unless a
judge call on it got no answer (timeout, 5xx, ...: ``judge_calls``): then it is counted as ``judge_failed``,
not as a verdict of any kind, and a plain re-run asks that judge again.

Language rule (XRAG): an answer not in the expected language is incorrect whatever the panel says;
an empty answer has no language and is wrong-language. The language is that of the answer's function words,
whatever names it carries (``babelrag.langcheck``, the check construct and release validation use too); an
answer too short or made only of names to read is not wrong-language (counted as ``language_unchecked``).
"""
from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

import numpy as np

from babelrag.errors import ConfigError, InputError
from babelrag.evaluators.judge_reliability import panel_agreement, self_consistency
from babelrag.evaluators.leaderboard import breakdown_table
from babelrag.evaluators.metric import Column, Metric, MetricRun
from babelrag.evaluators.registry import register
from babelrag.evaluators.results import ScoreResult, make_result
from babelrag.evaluators.report import plot_language_accuracy, plot_rank_heatmap, plot_wrong_language
from babelrag.evaluators.report_views import ReportPage, estimate_cell, number_cell, table
from babelrag.evaluators.xrag_judge import panel_votes
from babelrag.langcheck import DEFAULT_LANGUAGES, read_language
from babelrag.stats import Estimate, bootstrap_ci, cohen_kappa

TiePolicy = Literal["incorrect", "correct", "first"]
TIE_POLICIES = ("incorrect", "correct", "first")


@dataclass(frozen=True)
class Vote:
    """The panel's decision for one answer."""

    verdict: Optional[bool]  # None when every judge abstained
    correct_votes: int
    incorrect_votes: int
    abstained: int
    tie: bool


def majority_vote(votes: Sequence[Optional[bool]], tie_policy: TiePolicy = "incorrect") -> Vote:
    """Majority of non-abstaining votes; ties resolved by ``tie_policy`` (see module docstring)."""
    if tie_policy not in TIE_POLICIES:
        raise ConfigError(f"tie_policy must be one of {TIE_POLICIES}, got {tie_policy!r}")
    yes = sum(v is True for v in votes)
    no = sum(v is False for v in votes)
    abstained = len(votes) - yes - no
    if yes + no == 0:
        return Vote(None, 0, 0, abstained, False)
    if yes != no:
        return Vote(yes > no, yes, no, abstained, False)
    if tie_policy == "first":
        verdict = next(v for v in votes if v is not None)
    else:
        verdict = tie_policy == "correct"
    return Vote(verdict, yes, no, abstained, True)


@dataclass(frozen=True)
class XragItem:
    """One model answer with the panel's votes (True = judged correct, None = judge failed)."""

    query_id: str
    setting: str
    language: str  # language the answer must be in
    answer: str
    votes: Sequence[Optional[bool]]
    human: Optional[bool] = None  # human judgement from annotation, when there is one
    detected_language: Optional[str] = None  # filled by the scorer unless given
    extra: dict[str, Any] = field(default_factory=dict)
    unanswered: bool = False  # the system gave no answer (``coverage``): incorrect, wrong language, no judge asked
    judge_failed: int = 0  # judge calls on it that got no answer (their votes are None; a re-run retries them)


def _coerce(items: Iterable[XragItem | Mapping[str, Any]]) -> list[XragItem]:
    out = []
    for i, it in enumerate(items):
        if isinstance(it, Mapping):
            try:
                it = XragItem(**it)
            except TypeError as exc:
                raise InputError(f"xrag item {i}: {exc}") from exc
        out.append(it)
    return out


def _kappa_estimate(pairs: list[tuple[bool, bool]], rounds: int, seed: int) -> Estimate:
    """Cohen's kappa with a bootstrap CI over questions (pairs encoded as 2*panel + human)."""
    codes = [2 * int(a) + int(b) for a, b in pairs]

    def stat(arr: np.ndarray) -> float:
        a = (arr // 2).astype(int).tolist()
        b = (arr % 2).astype(int).tolist()
        return cohen_kappa(a, b)

    return bootstrap_ci(codes, statistic=stat, rounds=rounds, seed=seed)


def judge_human_pairs(items: Sequence[XragItem], judge: int) -> list[tuple[bool, bool]]:
    """(judge ``judge``'s vote, the human verdict) over the items with both."""
    return [(bool(it.votes[judge]), bool(it.human)) for it in items
            if it.human is not None and judge < len(it.votes) and it.votes[judge] is not None]


def score_panel(
    items: Iterable[XragItem | Mapping[str, Any]],
    tie_policy: TiePolicy = "incorrect",
    languages: Iterable[str] = DEFAULT_LANGUAGES,
    rounds: int = 1000,
    seed: int = 0,
    judges: Sequence[str] = (),
) -> ScoreResult:
    """Accuracy (panel verdict AND right language), language-correctness rate, kappa vs humans.

    Aggregates: ``accuracy``, ``language_correct`` overall and per ``<setting>/<language>`` group
    (``accuracy[mono/de]``), ``kappa_vs_human`` and ``agreement_vs_human`` on items with a human label,
    and per judge (``judges`` names the votes in order) ``kappa_vs_human[<judge>]``: each judge's own vote
    against the human verdict (human answer judgement, ``annotate pull answer_judgement``).
    """
    langs = tuple(sorted(set(languages)))
    rows: list[dict[str, Any]] = []
    items = _coerce(items)
    for it in items:
        if not it.votes and not it.unanswered:
            raise InputError(f"xrag item {it.query_id!r}: no judge votes; run the judge panel first")
        vote = Vote(False, 0, 0, 0, False) if it.unanswered else majority_vote(it.votes, tie_policy)
        if it.unanswered:
            lang, lang_ok, unread = None, False, False
        elif it.detected_language is not None:
            lang, lang_ok, unread = it.detected_language, it.detected_language == it.language, False
        elif not it.answer.strip():
            lang, lang_ok, unread = None, False, False
        else:
            reading = read_language(it.answer, set(langs) | {it.language})
            lang, lang_ok, unread = reading.language, reading.fits(it.language), reading.language is None
        rows.append({
            "query_id": it.query_id, "setting": it.setting, "language": it.language,
            "detected_language": lang, "language_correct": lang_ok, "language_unchecked": unread,
            "panel_correct": vote.verdict,
            "correct": None if vote.verdict is None else bool(vote.verdict and lang_ok),
            "votes_correct": vote.correct_votes, "votes_incorrect": vote.incorrect_votes,
            "votes_abstained": vote.abstained, "tie": vote.tie, "tie_policy": tie_policy,
            "human": it.human, "answered": not it.unanswered, "judge_failed": it.judge_failed, **it.extra,
        })
    counts = {
        "items": len(rows),
        "no_verdict": sum(r["correct"] is None and not r["judge_failed"] for r in rows),  # final
        "judge_failed": sum(bool(r["judge_failed"]) for r in rows),  # not judged yet: a re-run retries
        "ties": sum(r["tie"] for r in rows),
        "abstained_votes": sum(r["votes_abstained"] for r in rows),
        "wrong_language": sum(not r["language_correct"] for r in rows),
        "unanswered": sum(not r["answered"] for r in rows),
        "language_unchecked": sum(r["language_unchecked"] for r in rows),
    }
    # values must be numeric or None for the aggregator: map bools, keep None as undefined
    for r in rows:
        r["accuracy"] = float("nan") if r["correct"] is None else float(r["correct"])
    res = make_result("xrag.panel", rows, ("accuracy", "language_correct"), rounds=rounds, seed=seed, counts=counts)
    res.counts.pop("accuracy_undefined", None)  # no_verdict + the judge_failed items without a verdict
    groups = sorted({(r["setting"], r["language"]) for r in rows})
    for setting, lang in groups:
        sub = [r for r in rows if (r["setting"], r["language"]) == (setting, lang)]
        acc = [r["accuracy"] for r in sub if r["correct"] is not None]
        res.aggregate[f"accuracy[{setting}/{lang}]"] = bootstrap_ci(acc, rounds=rounds, seed=seed)
        res.aggregate[f"language_correct[{setting}/{lang}]"] = bootstrap_ci(
            [float(r["language_correct"]) for r in sub], rounds=rounds, seed=seed
        )
    pairs = [(bool(r["correct"]), bool(r["human"])) for r in rows if r["human"] is not None and r["correct"] is not None]
    if pairs:
        res.aggregate["kappa_vs_human"] = _kappa_estimate(pairs, rounds, seed)
        res.aggregate["agreement_vs_human"] = bootstrap_ci(
            [float(a == b) for a, b in pairs], rounds=rounds, seed=seed
        )
    res.counts["human_labels"] = sum(it.human is not None for it in items)
    for j, judge in enumerate(judges):
        jp = judge_human_pairs(items, j)
        if jp:
            res.aggregate[f"kappa_vs_human[{judge}]"] = _kappa_estimate(jp, rounds, seed)
    return res


def language_views(result: ScoreResult, rounds: int = 1000, seed: int = 0
                   ) -> tuple[dict[str, Estimate], dict[str, float]]:
    """Accuracy per answer language (with CIs) and the wrong-language rate per language, for the report."""
    by_lang: dict[str, list[dict[str, Any]]] = {}
    for row in result.items:
        by_lang.setdefault(row["language"], []).append(row)
    accuracy = {lang: bootstrap_ci([r["accuracy"] for r in rows if r["correct"] is not None], rounds=rounds, seed=seed)
                for lang, rows in sorted(by_lang.items())}
    wrong = {lang: 1.0 - sum(r["language_correct"] for r in rows) / len(rows) for lang, rows in sorted(by_lang.items())}
    return accuracy, wrong


def reliability_html(rel: Mapping[str, Any]) -> str:
    """The panel's agreement (Fleiss' kappa) and, with ``--judge-repeats``, each judge's self-consistency."""
    panel = rel.get("panel") or {}
    if not panel:
        return ""
    out = "<h2>Judge reliability</h2>\n"
    if panel.get("fleiss_kappa") is not None:
        out += (f"<p>Agreement across the panel ({html.escape(', '.join(panel['judges']))}): Fleiss' κ = "
                f"{number_cell(panel['fleiss_kappa'])} over {panel['items']} answers every judge voted on.</p>\n")
    else:
        out += f"<p>Agreement across the panel: {html.escape(str(panel.get('why') or 'no answer every judge voted on'))}.</p>\n"
    repeats = (rel.get("self_consistency") or {}).get("judges") or {}
    if repeats:
        body = [[html.escape(j), str(r["repeats"]), number_cell(r["temperature"]), number_cell(r["self_consistency"]),
                 str(r["items"]), str(r["failed_items"])] for j, r in repeats.items()]
        out += ("<p class=\"meta\">Self-consistency: share of answers a judge gave the same verdict in every "
                f"repeat; {html.escape(rel['self_consistency']['note'])}.</p>\n"
                + table(["judge", "repeats", "temperature", "self-consistency", "answers", "failed"], body))
    return out


def breakdown_html(b: Mapping[str, Mapping[str, Estimate]]) -> str:
    """Accuracy per ``setting/language`` group, one row per model."""
    groups = sorted({g for v in b.values() for g in v})
    if not groups:
        return ""
    body = [[html.escape(m)] + [estimate_cell(b[m][g].as_dict()) if g in b[m] else "–" for g in groups]
            for m in sorted(b)]
    return "<h2>Accuracy per setting / language</h2>\n" + table(["model", *map(html.escape, groups)], body, "wide")


@register
class XragMetric(Metric):
    """XRAG: a judge panel compares each answer with the gold answer (majority vote); an answer in the
    wrong language is incorrect. Always computed: the leaderboard is ordered by its accuracy."""

    name = "xrag"
    description = "judge-panel accuracy vs the gold answer, answer-language correctness (XRAG)"
    prompts = ("xrag_judge",)
    columns = (Column("accuracy", "accuracy"), Column("language_correct", "language_correct"))

    scores_unanswered = True
    answer_column = "judge panel and language"  # the per-answer view's column: the panel's vote and the language
    answer_verdict_means = "judged correct in the right language"

    def score(self, run: MetricRun, model: str, answers: Sequence[Any]) -> ScoreResult:
        """The panel judges the answers; an unanswered instance is incorrect without asking it."""
        answered = [a for a in answers if a.ok]
        mark = len(run.runner.failed)
        votes = dict(zip((a.id for a in answered), panel_votes(run.runner, run.judges, [
            {"question": run.instances[a.instance_id].question, "gold": run.instances[a.instance_id].answer,
             "answer": a.answer} for a in answered], [a.id for a in answered])))
        human = run.settings.human
        failed = run.runner.failed_items(since=mark)
        return score_panel([XragItem(a.instance_id, a.setting, a.language, a.answer, votes.get(a.id, ()),
                                     human=human.get(a.id), unanswered=not a.ok, judge_failed=failed[a.id],
                                     # each judge's own vote: judge-human agreement (``calibration``)
                                     extra={"answer_id": a.id,
                                            **({"judge_votes": dict(zip(run.judges, votes[a.id]))}
                                               if a.id in votes else {})})
                            for a in answers],
                           tie_policy=run.settings.tie_policy, languages=run.languages,
                           rounds=run.settings.rounds, seed=run.settings.seed, judges=run.judges)

    def compare(self, run: MetricRun, results: Mapping[str, ScoreResult], answers: Mapping[str, Sequence[Any]],
                evaluation: Any) -> None:
        """The panel's reliability over every model's answers (``judge_reliability``): Fleiss' kappa of the
        judges' votes, and with ``--judge-repeats`` each judge's self-consistency."""
        votes = [row["judge_votes"] for res in results.values() for row in res.items if "judge_votes" in row]
        report: dict[str, Any] = {"panel": panel_agreement(votes, list(run.judges))}
        if run.settings.judge_repeats > 1:
            answered = [a for recs in answers.values() for a in recs if a.ok]
            report["self_consistency"] = self_consistency(
                run.runner, run.judges,
                [{"question": run.instances[a.instance_id].question, "gold": run.instances[a.instance_id].answer,
                  "answer": a.answer} for a in answered], [a.id for a in answered],
                run.settings.judge_repeats, run.settings.repeat_temperature)
        evaluation.view(self.name)["judge_reliability"] = report
        self._judges_vs_human(run, results, evaluation)

    @staticmethod
    def _judges_vs_human(run: MetricRun, results: Mapping[str, ScoreResult], evaluation: Any) -> None:
        """Each judge against the human verdicts, pooled over every model's answers (``judge_vs_human`` in
        results.json; per model in the metric's aggregates)."""
        if not run.settings.human:
            return
        rows = [r for res in results.values() for r in res.items if r.get("human") is not None]
        out = {}
        for judge in run.judges:
            pairs = [(bool(r["judge_votes"][judge]), bool(r["human"])) for r in rows
                     if r.get("judge_votes", {}).get(judge) is not None]
            if pairs:
                kappa = _kappa_estimate(pairs, run.settings.rounds, run.settings.seed)
                agree = bootstrap_ci([float(a == b) for a, b in pairs], rounds=run.settings.rounds,
                                     seed=run.settings.seed)
                out[judge] = {"kappa": kappa.as_dict(), "agreement": agree.as_dict(), "items": len(pairs)}
        panel = [(bool(r["panel_correct"]), bool(r["human"])) for r in rows if r.get("panel_correct") is not None]
        if panel:
            out["(panel)"] = {"kappa": _kappa_estimate(panel, run.settings.rounds, run.settings.seed).as_dict(),
                              "items": len(panel)}
        evaluation.extra["judge_vs_human"] = {"human_labels": len(rows), "judges": out}

    def views(self, run: MetricRun, model: str, result: ScoreResult, evaluation: Any) -> None:
        """Answer counts (no verdict, wrong language), accuracy and wrong-language rate per answer language,
        and accuracy per ``setting/language`` group for the report's breakdown table."""
        evaluation.counts.setdefault(model, {}).update(result.counts)
        view = evaluation.view(self.name)
        view.setdefault("accuracy_by_language", {})[model], view.setdefault("wrong_language", {})[model] = \
            language_views(result, rounds=run.settings.rounds, seed=run.settings.seed)
        view.setdefault("breakdown", {})[model] = {k[len("accuracy["):-1]: e for k, e in result.aggregate.items()
                                                   if k.startswith("accuracy[")}

    def view_results(self, view: Mapping[str, Any]) -> dict[str, Any]:
        return {"breakdown": {m: {g: e.as_dict() for g, e in v.items()} for m, v in (view.get("breakdown") or {}).items()},
                **({"judge_reliability": view["judge_reliability"]} if "judge_reliability" in view else {})}

    def view_plots(self, view: Mapping[str, Any]) -> dict[str, bytes]:
        images: dict[str, bytes] = {}
        acc = view.get("accuracy_by_language")
        if acc:
            images["Accuracy per language"] = plot_language_accuracy(acc)
            images["Rank per language"] = plot_rank_heatmap({m: {lang: e.value for lang, e in v.items()}
                                                             for m, v in acc.items()})
        if view.get("wrong_language"):
            images["Wrong-language answers"] = plot_wrong_language(view["wrong_language"])
        return images

    def view_html(self, view: Mapping[str, Any], page: ReportPage) -> str:
        """Accuracy per ``setting/language`` group (one row per model), then the panel's reliability."""
        return breakdown_html(view.get("breakdown") or {}) + reliability_html(view.get("judge_reliability") or {})

    def view_markdown(self, view: Mapping[str, Any], page: ReportPage) -> str:
        return breakdown_table(view.get("breakdown") or {})

    def answer_verdict(self, item: Optional[Mapping[str, Any]]) -> Optional[bool]:
        return item.get("correct") if item else None

    def answer_html(self, item: Optional[Mapping[str, Any]]) -> str:
        """The panel's verdict with its votes, then the answer's language against the expected one."""
        if item is None:
            return ""
        if not item.get("answered", True):
            return '<span class="warn">incorrect</span> (no answer; no judge asked)'
        correct = item.get("correct")
        verdict = ('<span class="ok">correct</span>' if correct else '<span class="warn">incorrect</span>'
                   if correct is False else "no verdict (every judge failed)")
        votes = f" ({item.get('votes_correct', 0)} of {item.get('votes_correct', 0) + item.get('votes_incorrect', 0)} " \
                "judges said correct)"
        found, want = item.get("detected_language"), item.get("language")
        lang = (f'language {html.escape(str(found))} <span class="ok">✓</span>' if item.get("language_correct") else
                f'language {html.escape(str(found or "none"))}, expected {html.escape(str(want))} '
                '<span class="warn">✗</span>')
        return f"{verdict}{votes}<br>{lang}"

    def judge_verdicts(self, result: ScoreResult) -> dict[str, bool]:
        """The panel's majority vote (before the language check) where it gave one."""
        return {r["answer_id"]: bool(r["panel_correct"]) for r in result.items
                if r.get("answer_id") and r.get("panel_correct") is not None}
