"""The leakage rules of a benchmark instance, written once.

Construction refuses to store an instance that breaks one (``construct.instances.check_leakage``), release
validation reports every break with its rule name (``release.validate``); both read the rules from here so
the two can never disagree. A rule returns findings instead of raising: each caller decides what a break is.
"""
from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Optional

from babelrag.records import Instance


@dataclass(frozen=True)
class Leak:
    instance: str
    rule: str  # support_in_distractors | distractor_date | split_leak | duplicate_id
    detail: str


def iso_date(value: object) -> Optional[datetime.date]:
    """The date at the start of an ISO date/datetime string; None when there is none."""
    try:
        return datetime.date.fromisoformat(str(value)[:10])
    except (TypeError, ValueError):
        return None


def _supporting_ids(inst: Instance) -> tuple[str, ...]:
    return tuple(sorted({d.article_id for d in inst.documents if d.role == "supporting"}))


def instance_leaks(inst: Instance, min_days_before: int) -> list[Leak]:
    """A supporting article shown as a distractor too; a distractor published less than ``min_days_before``
    days before the earliest supporting article (the instance's ``dates``, else its supporting documents'),
    or with no readable date."""
    support = [d for d in inst.documents if d.role == "supporting"]
    distract = [d for d in inst.documents if d.role == "distractor"]
    leaks = []
    both = sorted({d.article_id for d in support} & {d.article_id for d in distract})
    if both:
        leaks.append(Leak(inst.id, "support_in_distractors", f"supporting article(s) {both} also used as distractors"))
    dates = [d for d in map(iso_date, inst.dates) if d] or [d for d in (iso_date(s.published) for s in support) if d]
    undated = [s.article_id for s in support if iso_date(s.published) is None]
    if undated and distract:  # freshness trusts only real publication dates (corpus.undated keep / infer)
        leaks.append(Leak(inst.id, "distractor_date", f"supporting article(s) {undated} have no publication date, "
                                                      f"so no distractor can be shown to be older"))
    elif dates and distract:
        limit = min(dates) - datetime.timedelta(days=min_days_before)
        late = [f"{d.article_id} ({d.published})" for d in distract
                if (published := iso_date(d.published)) is None or published > limit]
        if late:
            leaks.append(Leak(inst.id, "distractor_date",
                              f"distractor(s) {late} published after {limit.isoformat()} (must be >= "
                              f"{min_days_before} days before the supporting articles)"))
    return leaks


def split_leaks(split_of: Mapping[str, Iterable[Instance]]) -> list[Leak]:
    """``split_of``: split -> its instances. An instance id, a question or a supporting-article pair must not
    appear in more than one split; an id must not repeat within a split."""
    splits = {name: list(insts) for name, insts in sorted(split_of.items())}
    leaks: list[Leak] = []
    seen_id: dict[str, str] = {}
    qa_split: dict[str, set[str]] = defaultdict(set)
    pair_split: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for split, insts in splits.items():
        for inst in insts:
            if inst.id in seen_id:
                first = seen_id[inst.id]
                leaks.append(Leak(inst.id, "duplicate_id", f"id repeated in split {split!r}") if first == split
                             else Leak(inst.id, "split_leak", f"id also in split {first!r}"))
            seen_id.setdefault(inst.id, split)
            qa_split[inst.qa_id].add(split)
            if pair := _supporting_ids(inst):
                pair_split[pair].add(split)
    for insts in splits.values():
        for inst in insts:
            if len(qa_split[inst.qa_id]) > 1:
                leaks.append(Leak(inst.id, "split_leak", f"question {inst.qa_id} is in splits "
                                                         f"{sorted(qa_split[inst.qa_id])}"))
            elif (pair := _supporting_ids(inst)) and len(pair_split[pair]) > 1:
                leaks.append(Leak(inst.id, "split_leak", f"supporting articles {list(pair)} are in splits "
                                                         f"{sorted(pair_split[pair])}"))
    return leaks
