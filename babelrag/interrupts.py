"""Ctrl-C and SIGTERM end a run the way a finished one ends: the stage table, a run report, a line that says
how far the stage got and that a plain re-run resumes, and the shell's exit code (130 / 143).

SIGTERM's default action kills the process on the spot (no report, no flushed shards); ``sigterm_raises``
turns it into ``Terminated`` in the main thread, so it unwinds exactly like Ctrl-C's KeyboardInterrupt.
``StagePosition`` follows a stage's progress loop to say "N of M items done".
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

#: exit codes of a run stopped by a signal (128 + the signal number, as a shell reports it)
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C)
EXIT_TERMINATED = 143  # SIGTERM

RESUME_HINT = "a plain re-run resumes"


class Terminated(BaseException):
    """The process got SIGTERM (a BaseException, like KeyboardInterrupt: no ``except Exception`` eats it)."""


def is_interrupt(exc: BaseException) -> bool:
    return isinstance(exc, (KeyboardInterrupt, Terminated))


def signal_name(exc: BaseException) -> str:
    return "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C (SIGINT)"


def exit_code(exc: BaseException) -> int:
    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED


def interrupt_line(exc: BaseException) -> str:
    """The last line of an interrupted command: the signal, how far the stage got (the exception's notes,
    added by the pipeline), and that a plain re-run resumes."""
    progress = "; ".join(getattr(exc, "__notes__", [])) or f"finished work is kept; {RESUME_HINT}"
    return f"interrupted by {signal_name(exc)}: {progress}"


def mark_reported(exc: BaseException) -> None:
    """The interrupt line was printed (with the run's table): the CLI does not print it again."""
    exc.babelrag_reported = True  # type: ignore[attr-defined]


def interrupt_reported(exc: BaseException) -> bool:
    return bool(getattr(exc, "babelrag_reported", False))


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises ``Terminated`` in the main thread (elsewhere: no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class StagePosition:
    """Where a stage's current progress loop is: its label, the items whose work finished, the total."""

    desc: str = ""
    done: int = 0
    total: int | None = None

    def follow(self, items: Iterable[Any], total: int | None, desc: str) -> Iterator[Any]:
        """``items`` unchanged; an item counts as done when the loop asks for the next one."""
        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        self.desc, self.done, self.total = desc, 0, total
        for item in items:
            yield item
            self.done += 1

    def summary(self, kept: int | None = None) -> str:
        """``N of M items done; a plain re-run resumes`` (M when the loop knew it; ``kept``: items stored
        by the stage's writer, when no progress loop ran)."""
        if self.total is not None:
            where = f" ({self.desc.strip()})" if self.desc.strip() else ""
            return f"{self.done:,} of {self.total:,} items done{where}; {RESUME_HINT}"
        if self.desc:
            return f"{self.done:,} items done ({self.desc.strip()}); {RESUME_HINT}"
        if kept is not None:
            return f"{kept:,} items done; {RESUME_HINT}"
        return f"stopped before its first item; {RESUME_HINT}"
