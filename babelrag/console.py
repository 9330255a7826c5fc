"""The rich console every command prints through, and the one progress helper.

Piped to a log file, rich assumes 80 columns and truncates the run report's columns to "inge…";
a log is read later in an editor, so off a terminal (and without ``COLUMNS``) it gets 160. A progress bar
off a terminal would print nothing until the end (rich's live display is not shown there), so a log gets
a progress line every ``BABELRAG_PROGRESS_EVERY_S`` seconds (default 30) instead.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

LOG_WIDTH = 160
PROGRESS_EVERY_S = 30.0


def make_console(stderr: bool = True) -> Any:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else LOG_WIDTH
    return Console(stderr=stderr, width=width)


def track(items: Iterable[Any], total: int | None, label: str, console: Any,
          every_s: float | None = None) -> Iterator[Any]:
    """``items`` with progress on ``console``: a transient bar (label, bar, done/total, time left) on a
    terminal, a line every ``every_s`` seconds elsewhere (a log); nothing when ``console`` is None."""
    if console is None:
        yield from items
        return
    if not console.is_terminal:
        yield from _log_lines(items, total, label, console, every_s)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        yield from bar.track(items, total=total)


def _log_lines(items: Iterable[Any], total: int | None, label: str, console: Any,
               every_s: float | None) -> Iterator[Any]:
    if every_s is None:
        every_s = float(os.environ.get("BABELRAG_PROGRESS_EVERY_S", PROGRESS_EVERY_S))
    started = last = time.monotonic()
    done = 0
    for item in items:
        yield item
        done += 1
        now = time.monotonic()
        if now - last >= every_s:
            last = now
            console.print(f"{label}: {_progress_text(done, total, now - started)}", highlight=False)


def _progress_text(done: int, total: int | None, elapsed: float) -> str:
    if not total:
        return f"{done:,} done, {elapsed:.0f} s elapsed"
    left = elapsed / done * (total - done) if done else 0.0
    return f"{done:,}/{total:,} ({done / total:.0%}), {elapsed:.0f} s elapsed, about {left:.0f} s left"
