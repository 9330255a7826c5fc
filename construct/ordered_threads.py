"""Pure per-batch work (a batch of queries' exact searches) on a few threads, its results handed back in batch
order, so what the caller does with them (and the stage's output) is the same as one batch after another.

Why threads, not BLAS threads alone: between its matrix products a search batch runs numpy code that BLAS does
not parallelise (the top-k, the window filter, the gathers), and the stage's own Python runs between batches.
Several batches at once, each product on one BLAS thread, keep every core busy instead; numpy releases the GIL
in the heavy parts. Memory: at most ``2 * threads`` batches' results are held at once.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from babelrag.executor import in_order

T = TypeVar("T")
R = TypeVar("R")


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread per call (threads of our own run the calls side by side); restored after. Without
    threadpoolctl the BLAS default stays (correct, only the cores are shared less well)."""
    controller = _blas_controller()
    if controller is None:
        yield
        return
    with controller.limit(limits=1, user_api="blas"):
        yield


@functools.lru_cache(maxsize=1)
def _blas_controller() -> Any:
    """threadpoolctl's view of the loaded BLAS libraries, made once (finding them scans the process's libraries:
    ~10 ms, per stage run otherwise twice per language); None without threadpoolctl."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def ordered_map(fn: Callable[[T], R], items: Iterable[T], threads: int) -> Iterator[R]:
    """``map(fn, items)`` with up to ``threads`` calls running at once, results in ``items``' order, at most
    ``2 * threads`` calls submitted ahead (``executor.in_order``, as the process pools take their chunks). ``fn``
    must not touch state another call changes (the search index's row cache is locked for this)."""
    if threads <= 1:
        yield from map(fn, items)
        return
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="babelrag-search")
    try:
        with one_blas_thread():
            submitted = (pool.submit(fn, item) for item in items)
            yield from in_order(submitted, 2 * threads, lambda future: [future.result()])
    finally:  # an error (or the caller stopping early): nothing more starts; running calls finish
        pool.shutdown(wait=True, cancel_futures=True)
