"""Where CPU-heavy per-item work runs: one seam, ``map(fn, items)`` in input order.

``local`` runs ``fn`` over chunks of items in a process pool on this machine (1 process, or fewer items
than one chunk per process = inline, no pool). Output order equals input order whatever the number of processes, so a build's output does
not depend on ``executor.processes``. Memory stays bounded: at most ``processes * prefetch`` chunks
are in flight, the input is read lazily. Workers fork from a forkserver that has imported ``fn``'s module
and the modules named in ``fn.preload_modules`` (heavy libraries load once). A cluster executor can sit behind the same ``Executor``
protocol later; ``fn`` must be a picklable top-level function and items picklable.
"""
from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    processes: int

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        ...


def _run_chunk(fn: Callable[[Any], Any], chunk: list[Any]) -> list[Any]:
    return [fn(item) for item in chunk]


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass
class LocalExecutor:
    """A process pool on this machine; ``processes=1`` runs inline in this process."""
    processes: int = 1
    chunk_size: int = 8
    prefetch: int = 4  # chunks in flight per process

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        items = iter(items)
        first_round = list(islice(items, self.processes * self.chunk_size))
        if self.processes <= 1 or len(first_round) < self.processes * self.chunk_size:
            # one process, or so few items that starting workers costs more than it saves: same output
            for item in chain(first_round, items):
                yield fn(item)
            return
        items = chain(first_round, items)
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # forkserver: workers fork from a clean server process, not from this one (which may hold threads of
        # lingua, tokenizers or progress bars that a plain fork would copy in a locked state); spawn elsewhere
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        if method == "forkserver":  # import fn's module (and its libraries) once in the server, not per worker
            context.set_forkserver_preload([getattr(fn, "__module__", "__main__"),
                                            *getattr(fn, "preload_modules", ())])
        from concurrent.futures.process import BrokenProcessPool

        pending: deque = deque()
        limit = self.processes * self.prefetch
        try:
            with ProcessPoolExecutor(max_workers=self.processes, mp_context=context) as pool:
                for chunk in _chunks(items, self.chunk_size):
                    pending.append(pool.submit(_run_chunk, fn, chunk))
                    while len(pending) >= limit:
                        yield from pending.popleft().result()
                while pending:
                    yield from pending.popleft().result()
        except BrokenProcessPool:
            from babelrag.errors import StageError

            raise StageError(f"a worker process of the local executor died while running {fn.__name__} (killed for "
                             "memory, or a crash in a native library); rerun with executor.processes: 1 to see "
                             "which input causes it") from None


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def executor_from_config(config: Any) -> Executor:
    """``executor.backend`` (only ``local`` today) with ``executor.processes`` (None/0 = every core)."""
    settings = config.executor
    processes = settings.processes or available_cores()
    return LocalExecutor(processes=max(1, processes), chunk_size=settings.chunk_size)
