"""Release validation: every rule runs before anything is written; each failure names instance + rule.

Rules (``RULES``): ``schema`` (row matches ``Instance``; ISO dates), ``language`` (question/answer in the
declared language, English question in the pivot language, language among the project's), ``distractor_date``
(every distractor published >= N days before the earliest supporting article), ``support_in_distractors``,
``missing_support`` (every setting but no-retrieval shows a supporting article), ``split_leak`` (an instance
id, a question or a supporting article pair in more than one split), ``duplicate_id``, ``unverified`` (unless
``release.allow_unverified``), ``empty_text``.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Optional, get_args

from pydantic import ValidationError

from babelrag.errors import BabelragError
from babelrag.langcheck import LanguageChecker
from babelrag.languages import language_label
from babelrag.leakage import instance_leaks, iso_date, split_leaks
from babelrag.records import ANSWER_TYPES, Instance, QuestionType

RULES = ("schema", "language", "distractor_date", "support_in_distractors", "missing_support", "split_leak",
         "duplicate_id", "unverified", "empty_text")
A_TYPES = ANSWER_TYPES
QUESTION_TYPES = get_args(QuestionType)  # a build's q_type (a converted benchmark keeps its own categories)


class ReleaseValidationError(BabelragError):
    """The build breaks release rules; the message lists the failures (instance + rule)."""


@dataclass(frozen=True)
class Violation:
    instance: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.instance}: [{self.rule}] {self.detail}"


@dataclass
class ValidationReport:
    checked: int = 0
    violations: list[Violation] = field(default_factory=list)
    unchecked_language: int = 0
    unverified_released: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations

    def by_rule(self) -> dict[str, int]:
        return dict(sorted(Counter(v.rule for v in self.violations).items()))

    def summary(self, limit: int = 20) -> str:
        head = f"{len(self.violations)} release rule violation(s) in {self.checked} instances " + \
            ", ".join(f"{k}={v}" for k, v in self.by_rule().items())
        lines = [head] + [f"  {v}" for v in self.violations[:limit]]
        if len(self.violations) > limit:
            lines.append(f"  ... and {len(self.violations) - limit} more (`babelrag release validate` lists all)")
        return "\n".join(lines)

    def raise_if_failed(self) -> None:
        if self.violations:
            raise ReleaseValidationError(self.summary())


@dataclass
class Rules:
    """What the rules need from the config."""

    languages: list[str]
    pivot: str = "en"
    min_days_before: int = 14
    allow_unverified: bool = False
    check_languages: bool = True
    # a folder converted from an external benchmark (``release convert``): its passages may be undated
    # (GaRAGe writes N/A), its distractors were not chosen by our date rule and a question without a
    # supporting passage is a deflection question, so none of these is a violation
    external: bool = False
    # built with corpus.undated keep / infer: a document without a real publication date is released with
    # published "" (freshness never trusts an inferred date; docs/construct.md "Undated articles")
    allow_undated: bool = False

    @classmethod
    def from_config(cls, config: Any) -> Rules:
        return cls(languages=list(config.project.languages), pivot=config.project.pivot_language,
                   min_days_before=config.distractors.min_days_before,
                   allow_unverified=config.release.allow_unverified,
                   allow_undated=config.corpus.undated != "drop")


def _pydantic_detail(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])


def parse_rows(rows: Iterable[dict[str, Any]], report: ValidationReport, allow_undated: bool = False,
               external: bool = False) -> list[tuple[int, Instance]]:
    """Rows -> (row index, Instance); a row that does not match the schema is a ``schema`` violation.
    ``allow_undated``: an empty date ("no date given") is accepted; a non-empty one must still be ISO.
    ``external``: a converted benchmark's ``q_type`` may be its own category; a build's is one of ours."""
    out = []
    for i, row in enumerate(rows):
        report.checked += 1
        ident = str(row.get("id") or f"row {i}")
        try:
            inst = Instance.model_validate(row)
        except ValidationError as exc:
            report.violations.append(Violation(ident, "schema", _pydantic_detail(exc)))
            continue
        problems = [f"{where} {value!r} is not an ISO date" for where, value in
                    [("dates", d) for d in inst.dates] + [(f"document {d.article_id} published", d.published)
                                                          for d in inst.documents]
                    if iso_date(value) is None and not (allow_undated and value == "")]
        if inst.a_type not in A_TYPES:
            problems.append(f"a_type {inst.a_type!r} not in {A_TYPES}")
        if not external and inst.q_type not in QUESTION_TYPES:
            problems.append(f"q_type {inst.q_type!r} not in {QUESTION_TYPES}")
        if problems:
            report.violations.append(Violation(inst.id, "schema", "; ".join(problems)))
            continue
        out.append((i, inst))
    return out


def check_instance(inst: Instance, rules: Rules, lang: Any, report: ValidationReport) -> None:
    """Per-instance rules (everything except splits and duplicates)."""
    add = lambda rule, detail: report.violations.append(Violation(inst.id, rule, detail))  # noqa: E731
    empty = [name for name in ("question", "answer", "en_question", "en_answer") if not getattr(inst, name).strip()]
    empty += [f"document {d.article_id} text" for d in inst.documents if not d.text.strip()]
    if empty:
        add("empty_text", "empty " + ", ".join(empty))
    support = [d for d in inst.documents if d.role == "supporting"]
    if not support and inst.setting != "no-retrieval" and not rules.external:  # external: deflection questions
        add("missing_support", f"setting {inst.setting!r} has no supporting document")
    report.violations += [Violation(leak.instance, leak.rule, leak.detail)
                          for leak in instance_leaks(inst, rules.min_days_before)
                          if not (rules.external and leak.rule == "distractor_date")]
    if not inst.verified:
        if rules.allow_unverified:
            report.unverified_released += 1
        else:
            add("unverified", "not verified by an annotator (annotate it, or set release.allow_unverified: true "
                              "to release it flagged verified=false)")
    if rules.check_languages:
        if inst.language not in rules.languages:
            add("language", f"declared language {inst.language!r} is not a project language {rules.languages}")
        elif lang is not None:
            for name, text, declared in (("question", inst.question, inst.language),
                                         ("answer", inst.answer, inst.language),
                                         ("en_question", inst.en_question, inst.source_language(rules.pivot))):
                found = lang.check(text, declared)
                if found:
                    add("language", f"{name} looks {language_label(found)}, declared {language_label(declared)}: "
                                    f"{text[:60]!r}")


def check_splits(split_of: dict[str, list[Instance]], report: ValidationReport) -> None:
    """``split_of``: split -> its instances. Ids, questions and article pairs must not cross splits."""
    report.violations += [Violation(leak.instance, leak.rule, leak.detail) for leak in split_leaks(split_of)]


def validate(rows: Iterable[dict[str, Any]], rules: Rules, split_for: Optional[Any] = None,
             row_splits: Optional[list[str]] = None, progress: Optional[Any] = None,
             ) -> tuple[list[Instance], ValidationReport]:
    """Run every rule. Splits come from ``split_for(instances) -> {qa_id: split}`` (a new build) or from
    ``row_splits`` aligned with ``rows`` (an existing release folder); neither: everything is "test"."""
    report = ValidationReport()
    parsed = parse_rows(rows, report, allow_undated=rules.external or rules.allow_undated, external=rules.external)
    instances = [inst for _, inst in parsed]
    lang = LanguageChecker(sorted(set(rules.languages) | {rules.pivot})) if rules.check_languages else None
    for inst in (progress(instances, len(instances)) if progress else instances):
        check_instance(inst, rules, lang, report)
    assignment = split_for(instances) if split_for else {}
    by_split: dict[str, list[Instance]] = defaultdict(list)
    for i, inst in parsed:
        split = row_splits[i] if row_splits is not None else assignment.get(inst.qa_id, "test")
        by_split[split].append(inst)
    check_splits(by_split, report)
    report.unchecked_language = lang.unchecked if lang else 0
    order = {r: i for i, r in enumerate(RULES)}
    report.violations.sort(key=lambda v: (v.instance, order.get(v.rule, 99), v.detail))
    return instances, report
