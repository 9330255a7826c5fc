"""The local executor's own failure path: a worker that dies names what it was running."""
import os

import pytest

from babelrag.errors import StageError
from babelrag.executor import LocalExecutor


class DiesInWorker:
    """A callable object (no __name__), as stages pass their per-page work."""

    def __call__(self, item: int) -> int:
        if item == 3:
            os._exit(1)  # a worker killed mid-chunk (OOM killer, a crash in a native library)
        return item


def test_a_dead_worker_is_a_stage_error_naming_the_callable():
    executor = LocalExecutor(processes=2, chunk_size=1)
    with pytest.raises(StageError, match="died while running DiesInWorker"):
        list(executor.map(DiesInWorker(), range(6)))
