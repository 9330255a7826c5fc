"""The rich console every command prints through.

Piped to a log file, rich assumes 80 columns and truncates the run report's columns to "inge…";
a log is read later in an editor, so off a terminal (and without ``COLUMNS``) it gets 160.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any

LOG_WIDTH = 160


def make_console(stderr: bool = True) -> Any:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else LOG_WIDTH
    return Console(stderr=stderr, width=width)


def track(items: Iterable[Any], total: int | None, label: str, console: Any) -> Iterator[Any]:
    """``items`` with a transient progress bar (label, bar, done/total, time left) on ``console``;
    no bar when ``console`` is None."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True, disable=console is None) as bar:
        yield from bar.track(items, total=total)
