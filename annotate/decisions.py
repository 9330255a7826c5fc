"""When do submitted responses settle a record? Decision rules, declared per project type.

Why rules and not "a majority on every question": a question both annotators called unnatural is
rejected whatever they said about "answerable"; requiring a majority on all three labels left such
records unresolved, and unresolved records shipped unreviewed. A rule set names

- ``settles``: verdicts that settle the record on their own once decided (a strict majority of the
  responses, unanimity included), whatever the other labels say (qa_verification: natural = no,
  answerable = no: rejection);
- ``decides``: the label questions that otherwise each need a strict majority;
- ``texts``: free-text answers the decision takes (a strict majority of the stripped, non-empty texts,
  optionally only from responses that gave a label, e.g. the corrected answer of those who said the
  answer is wrong); a pre-filled draft submitted unchanged is no answer.

A record the rules cannot settle is *disputed*: ``babelrag annotate adjudicate`` sends it to an
adjudicator, whose response is decided by the same rules (one response is its own majority).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional


def majority(values: list[Any]) -> Optional[Any]:
    """The value more than half of the annotators gave, else None."""
    if not values:
        return None
    value, count = Counter(values).most_common(1)[0]
    return value if count * 2 > len(values) else None


@dataclass(frozen=True)
class TextRule:
    """A free-text question the decision takes; ``when``: (label question, value) the response must have
    given for its text to count (None: every response), and without which the text is not needed."""

    question: str
    when: Optional[tuple[str, str]] = None
    draft_is_no_answer: bool = False  # the pre-filled draft submitted unchanged is not an answer


@dataclass(frozen=True)
class DecisionRules:
    decides: tuple[str, ...] = ()
    settles: tuple[tuple[str, str], ...] = ()
    texts: tuple[TextRule, ...] = ()

    def describe(self) -> str:
        """One line for docs and the CLI."""
        parts = []
        if self.settles:
            parts.append("settled by a decided " + " or ".join(f"{q} = {v}" for q, v in self.settles))
        if self.decides:
            parts.append("else a strict majority on each of " + ", ".join(self.decides))
        for t in self.texts:
            parts.append(f"a majority {t.question}" + (f" (when {t.when[0]} = {t.when[1]})" if t.when else ""))
        return "; ".join(parts)


@dataclass
class Decision:
    """What the responses decided: ``settled`` (and by which verdict, if a settling one), the decided
    label per question (None: no majority, or not needed), the decided texts, and if not settled why."""

    settled: bool
    votes: dict[str, Optional[str]] = field(default_factory=dict)
    texts: dict[str, Optional[str]] = field(default_factory=dict)
    settled_by: Optional[tuple[str, str]] = None
    disputed: list[str] = field(default_factory=list)  # the questions without a decision


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def label_questions(rules: DecisionRules) -> list[str]:
    """The label questions the rules read (settling ones first)."""
    return list(dict.fromkeys([q for q, _ in rules.settles] + list(rules.decides)
                              + [t.when[0] for t in rules.texts if t.when]))


def decide(rules: DecisionRules, responses: list[dict], unchanged: Mapping[str, str] = {}) -> Decision:
    """Apply ``rules`` to the submitted responses of one record (each a pulled row with ``values``).
    ``unchanged``: per text question, the pre-filled draft (a text equal to it is not an answer)."""
    values = [r.get("values") or {} for r in responses]
    votes = {q: majority([v.get(q) for v in values]) for q in label_questions(rules)}
    for q, v in rules.settles:
        if votes.get(q) == v:
            return Decision(True, votes, {}, (q, v))
    disputed = [q for q in rules.decides if votes.get(q) is None]
    texts: dict[str, Optional[str]] = {}
    for t in rules.texts:
        if t.when is not None and votes.get(t.when[0]) != t.when[1]:
            continue  # not needed (e.g. the answer was judged correct)
        given = [_text(v.get(t.question)) for v in values if t.when is None or v.get(t.when[0]) == t.when[1]]
        texts[t.question] = majority([g for g in given if g and g != _text(unchanged.get(t.question))])
        if texts[t.question] is None:
            disputed.append(t.question)
    return Decision(not disputed, votes, texts, None, disputed)
