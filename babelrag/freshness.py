"""Publication-date windows over benchmark instances: which instances are provably newer than a model's
training cutoff (``evaluate run --after``), a release config's date range (the dataset card) and the
time-sliced configs ``release`` writes (``release.time_slices``).

An instance's dates are its supporting articles' publication dates (``Instance.dates``; when that list is
empty, the ``published`` dates of its supporting documents). Only real dates count: an instance with no
supporting date, or one that is not a date, cannot be shown to lie in a window, so a window leaves it out
and counts it as ``undated`` — it is never assumed to be fresh.

Both bounds are strict, as the words say: ``after=2024-06-30`` keeps articles published from 2024-07-01 on
(pass a model's training cutoff), ``before=2025-01-01`` keeps those published up to 2024-12-31.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Optional

from babelrag.errors import InputError
from babelrag.leakage import iso_date
from babelrag.records import Instance


def parse_day(value: object, what: str) -> Optional[dt.date]:
    """A bound given on the command line or in YAML (None stays None); a clear error when it is no date."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise InputError(f"{what}: {value!r} is not a date; write it as YYYY-MM-DD (e.g. 2024-06-30)") from None


def supporting_dates(inst: Instance) -> Optional[list[dt.date]]:
    """The publication dates of the instance's supporting articles; None when any is missing or unreadable
    (or there is none), since the instance's age then cannot be proven."""
    raw = list(inst.dates) or [d.published for d in inst.documents if d.role == "supporting"]
    if not raw:
        return None
    days = [iso_date(v) if v else None for v in raw]
    if any(d is None for d in days):
        return None
    return days  # type: ignore[return-value]


@dataclass(frozen=True)
class DateWindow:
    """Articles published strictly after ``after`` and strictly before ``before`` (either may be open)."""

    after: Optional[dt.date] = None
    before: Optional[dt.date] = None

    def __post_init__(self) -> None:
        if self.after is not None and self.before is not None and self.before <= self.after + dt.timedelta(days=1):
            raise InputError(f"the date window after {self.after} and before {self.before} holds no day; "
                             "--before must be at least two days after --after (both bounds are exclusive)")

    @classmethod
    def parse(cls, after: object = None, before: object = None, what: str = "") -> "DateWindow":
        prefix = f"{what} " if what else ""
        return cls(parse_day(after, f"{prefix}--after"), parse_day(before, f"{prefix}--before"))

    @property
    def open(self) -> bool:
        """True when no bound is set (every instance is kept, dated or not)."""
        return self.after is None and self.before is None

    def holds(self, day: dt.date) -> bool:
        return (self.after is None or day > self.after) and (self.before is None or day < self.before)

    def describe(self) -> str:
        parts = ([f"after {self.after}"] if self.after else []) + ([f"before {self.before}"] if self.before else [])
        return "published " + " and ".join(parts) if parts else "all publication dates"

    def recorded(self) -> dict[str, Optional[str]]:
        return {"after": self.after.isoformat() if self.after else None,
                "before": self.before.isoformat() if self.before else None,
                "bounds": "exclusive"}


@dataclass
class Selection:
    """The instances a date window keeps, and how many it left out and why (a selection, not a loss)."""

    window: DateWindow
    kept: list[Instance] = field(default_factory=list)
    out_of_range: int = 0  # some supporting article published outside the window
    undated: int = 0  # some supporting date missing: its age cannot be proven

    @property
    def considered(self) -> int:
        return len(self.kept) + self.out_of_range + self.undated

    def recorded(self) -> dict[str, object]:
        """What results.json says about the selection."""
        return {"published": self.window.recorded(), "instances_considered": self.considered,
                "instances_selected": len(self.kept),
                "left_out": {"outside_window": self.out_of_range, "undated": self.undated}}

    def describe(self) -> str:
        """One line for the report's header."""
        return (f"{self.window.describe()}: {len(self.kept)} of {self.considered} instances "
                f"({self.out_of_range} outside the window, {self.undated} without supporting dates left out)")


def select(instances: Iterable[Instance], window: DateWindow) -> Selection:
    """The instances whose supporting articles were all published inside ``window`` (all of them when the
    window is open)."""
    sel = Selection(window)
    for inst in instances:
        if window.open:
            sel.kept.append(inst)
            continue
        days = supporting_dates(inst)
        if days is None:
            sel.undated += 1
        elif all(window.holds(d) for d in days):
            sel.kept.append(inst)
        else:
            sel.out_of_range += 1
    return sel


@dataclass(frozen=True)
class DateRange:
    """The earliest and latest supporting-article date over some instances, and how many had none."""

    first: Optional[dt.date]
    last: Optional[dt.date]
    dated: int
    undated: int


def date_range(instances: Sequence[Instance]) -> DateRange:
    """Publication range of the supporting articles of ``instances`` (for the dataset card)."""
    days: list[dt.date] = []
    undated = 0
    for inst in instances:
        found = supporting_dates(inst)
        if found is None:
            undated += 1
        else:
            days.extend(found)
    return DateRange(min(days) if days else None, max(days) if days else None,
                     len(instances) - undated, undated)
