"""The rich console every command prints through, and the one progress helper.

Piped to a log file, rich assumes 80 columns and truncates the run report's columns to "inge…";
a log is read later in an editor, so off a terminal (and without ``COLUMNS``) it gets 160. A progress bar
off a terminal prints either nothing until the end (rich's live display) or a carriage-return redraw per update
(tqdm) that a CI log keeps as thousands of lines, so a log gets a plain line every
``BABELRAG_PROGRESS_EVERY_S`` seconds (default 10) instead: label, done/total, rate, time left.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO

LOG_WIDTH = 160
PROGRESS_EVERY_S = 10.0


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
    lines = ProgressLines(label, total, lambda text: console.print(text, highlight=False), every_s)
    for item in items:
        yield item
        lines.update()
    lines.close()


def progress_every_s() -> float:
    """Seconds between two progress lines in a log (``BABELRAG_PROGRESS_EVERY_S``)."""
    return float(os.environ.get("BABELRAG_PROGRESS_EVERY_S", PROGRESS_EVERY_S))


class ProgressLines:
    """Progress for a log: ``update(n)`` as work finishes; a line (label, done/total, rate, time left) at most
    every ``every_s`` seconds, and a last one on ``close`` when lines were printed and the last one is stale."""

    def __init__(self, label: str, total: int | None, emit: Callable[[str], None],
                 every_s: float | None = None) -> None:
        self.label, self.total, self.emit = label, total, emit
        self.every_s = progress_every_s() if every_s is None else every_s
        self.started = self.last = time.monotonic()
        self.done = 0
        self.shown: int | None = None  # done count of the last line printed

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            self._line(now)

    def close(self) -> None:
        if self.shown is not None and self.shown != self.done:
            self._line(time.monotonic())

    def _line(self, now: float) -> None:
        self.shown = self.done
        self.emit(f"{self.label}: {_progress_text(self.done, self.total, now - self.started)}")


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def stream_progress(total: int, label: str, enabled: bool = True, stream: TextIO | None = None) -> Any:
    """An ``update(n)`` / ``close()`` progress for code without a console (the LLM client's batches): tqdm's bar
    when ``stream`` (default stderr) is a terminal, else plain lines on it at the log interval; nothing when
    not ``enabled``."""
    if not enabled:
        return _Silent()
    stream = stream or sys.stderr
    if stream.isatty():
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=label, file=stream, mininterval=0.5, unit="item")

    def emit(text: str) -> None:
        print(text, file=stream, flush=True)

    return ProgressLines(label, total, emit)


def _rate(done: int, elapsed: float) -> str:
    rate = done / elapsed if elapsed > 0 else 0.0
    if rate >= 100:
        return f"{rate:,.0f}/s"
    return f"{rate:.1f}/s" if rate >= 1 else f"{rate:.2f}/s"


def _progress_text(done: int, total: int | None, elapsed: float) -> str:
    if not total:
        return f"{done:,} done, {_rate(done, elapsed)}, {elapsed:.0f} s elapsed"
    left = elapsed / done * (total - done) if done else 0.0
    return (f"{done:,}/{total:,} ({done / total:.0%}), {_rate(done, elapsed)}, {elapsed:.0f} s elapsed, "
            f"about {left:.0f} s left")
