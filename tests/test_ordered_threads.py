"""``ordered_map``: batches computed on threads, handed back in order, a bounded number ahead; an error in one
reaches the caller and nothing after it starts; BLAS runs on one thread meanwhile and is restored after."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from babelrag.construct.ordered_threads import ordered_map


def blas_threads() -> list[int]:
    """Threads of the BLAS numpy's products run on (the wheel's own OpenBLAS, in numpy.libs); a BLAS another
    library loads later (scipy's) is not what the searches call."""
    return [i["num_threads"] for i in threadpool_info()
            if i["user_api"] == "blas" and Path(i["filepath"]).parent.name.startswith("numpy")]


def test_results_come_in_order_from_several_threads_at_most_twice_the_threads_ahead():
    names, started, lock = set(), [], threading.Lock()

    def slow_square(x: int) -> int:
        with lock:
            started.append(x)
            names.add(threading.current_thread().name)
        time.sleep(0.02 * ((7 * x) % 5))  # later items often finish first
        return x * x

    got = []
    for n, value in enumerate(ordered_map(slow_square, range(30), threads=3)):
        got.append(value)
        with lock:
            assert len(started) <= n + 1 + 2 * 3  # bounded look-ahead: memory holds a few batches' results
    assert got == [x * x for x in range(30)]
    assert len(names) > 1 and all(name.startswith("babelrag-search") for name in names)


def test_one_thread_is_a_plain_map_in_this_thread():
    assert list(ordered_map(lambda x: (x, threading.current_thread().name), range(3), threads=1)) == [
        (x, threading.current_thread().name) for x in range(3)]


def test_an_error_reaches_the_caller_and_later_items_do_not_start():
    started = []

    def fail_at_5(x: int) -> int:
        started.append(x)
        if x == 5:
            raise ValueError("item 5 is bad")
        time.sleep(0.01)
        return x

    got = []
    with pytest.raises(ValueError, match="item 5 is bad"):
        for value in ordered_map(fail_at_5, range(100), threads=2):
            got.append(value)
    assert got == [0, 1, 2, 3, 4]
    assert max(started) < 5 + 2 * 2 + 2  # what was queued when the error came back, no more


def test_blas_runs_on_one_thread_during_the_map_and_is_restored_after():
    before = blas_threads()
    assert before  # numpy's BLAS is found
    seen = list(ordered_map(lambda _: blas_threads(), range(4), threads=2))
    assert all(threads == [1] * len(before) for threads in seen)
    assert blas_threads() == before
    a = np.ones((4, 4), dtype=np.float32)
    assert list(ordered_map(lambda x: float((a @ a.T)[0, 0]) * x, range(3), threads=2)) == [0.0, 4.0, 8.0]


def test_search_threads_follow_executor_processes_up_to_the_cores_and_one_for_milvus_or_a_gpu(monkeypatch):
    from types import SimpleNamespace

    from babelrag.construct import dense
    from babelrag.construct.exactsearch import WindowIndex

    monkeypatch.setattr(dense, "available_cores", lambda: 4)
    index = WindowIndex(["a"], ["en"], [0], np.ones((1, 2), dtype=np.float32))

    def ctx(processes, device="cpu"):
        return SimpleNamespace(config=SimpleNamespace(dense=SimpleNamespace(search_device=device),
                                                      executor=SimpleNamespace(processes=processes)))

    assert [dense.search_threads(ctx(p), index) for p in (None, 0, 1, 3, 64)] == [4, 4, 1, 3, 4]
    assert dense.search_threads(ctx(None, "cuda"), index) == 1
    assert dense.search_threads(ctx(None), object()) == 1  # a Milvus store: its own search
