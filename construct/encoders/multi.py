"""Several devices on one machine: one worker process per device, each loading the model once.

``dense.encoder.device: [cuda:0, cuda:1]`` (or ``auto`` with several GPUs) starts a process pool whose
workers each claim one device at start (a queue of device names) and build the encoder there
(``mapped.worker_encoder``), then reuse it for every task. Work goes out as blocks (``encode_blocks``: one
block per task, several in flight, results in order) or, for one big list, as chunks of the
length-sorted input (``encode``). Each block is encoded exactly as one device would encode it, so the
vectors are the same as on one device (within float tolerance across device types).
"""
from __future__ import annotations

import multiprocessing
import os
import time
import weakref
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from babelrag.batching import length_order
from babelrag.devices import resolve_precision
from babelrag.errors import StageError
from babelrag.executor import in_order

from . import mapped, registry
from .base import Encoder, Kind
from .mapped import encode_task, worker_encoder

TASKS_PER_DEVICE = 2  # blocks in flight per worker: one running, one queued


def _start_worker(devices: Any, task: Any) -> None:
    """Pool initializer: take one device and load the model there now, once for this worker's life. A
    load that fails is left to the first task, which raises the error (a one-line ConfigError)."""
    mapped._CLAIMED_DEVICE = devices.get()
    try:
        mapped.worker_encoder(task)
    except Exception:  # noqa: BLE001 - raised again, with its message, by the first task
        pass


def worker_state(pause_s: float = 0.0) -> tuple[int, str, int]:
    """This worker's pid, claimed device and number of encoders built (pauses so that probes sent to
    the pool reach every worker)."""
    time.sleep(pause_s)
    return os.getpid(), mapped._CLAIMED_DEVICE or "", sum(mapped.BUILDS.values())


def _describe(task: Any) -> tuple[str, int]:
    enc = worker_encoder(task)
    return enc.name, enc.dim


class DevicePoolEncoder(Encoder):
    """The encoder of ``settings`` on each of ``devices`` (one process each)."""

    def __init__(self, settings: Any, devices: Sequence[str]) -> None:
        self.devices = list(devices)
        self.precision_setting = settings.precision
        self.kind = settings.kind  # type: ignore[misc]
        self.runs_on = registry.get(settings.kind).runs_on  # type: ignore[misc]
        self._tasks = {k: encode_task(settings, kind=k) for k in ("query", "passage")}
        start = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(start)
        queue = context.Queue()
        for device in self.devices:
            queue.put(device)
        self._pool = ProcessPoolExecutor(max_workers=len(self.devices), mp_context=context,
                                         initializer=_start_worker, initargs=(queue, self._tasks["passage"]))
        # the workers (and their models) go when this encoder does, even if nobody calls close()
        self._finalizer = weakref.finalize(self, self._pool.shutdown, wait=False, cancel_futures=True)
        self.batch_size = settings.batch_size if isinstance(settings.batch_size, int) else 256
        # one submission per device starts every worker now (each finds no idle worker to take it)
        described = [self._pool.submit(_describe, self._tasks["passage"]) for _ in self.devices]
        self.name, self.dim = [f.result() for f in described][0]

    def _encode_batch(self, items: list[Any], kind: Kind) -> np.ndarray:  # pragma: no cover - encode is overridden
        return self.encode(items, kind)

    def encode_blocks(self, blocks: Iterable[Sequence[str]], kind: Kind = "passage") -> Iterator[np.ndarray]:
        task = self._tasks[kind]
        submitted = (self._pool.submit(task, list(b)) for b in blocks)
        try:
            yield from in_order(submitted, len(self.devices) * TASKS_PER_DEVICE, lambda f: [f.result()])
        except BrokenProcessPool:
            raise StageError(f"an encoder worker process on one of {self.devices} died (killed for memory, or a "
                             "crash in the device driver); rerun with one device in dense.encoder.device to see "
                             "the error") from None

    def encode(self, texts: Sequence[str], kind: Kind = "passage", progress: Any = None) -> np.ndarray:
        """One list: chunks of neighbours in length (so each worker pads little), back in input order."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = length_order([len(t) for t in texts])
        size = max(1, min(self.batch_size * 4, -(-len(texts) // len(self.devices))))
        parts = [order[s:s + size] for s in range(0, len(texts), size)]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for idx, vecs in zip(parts, self.encode_blocks(([texts[i] for i in p] for p in parts), kind)):
            out[idx] = vecs
        return out

    def placement(self) -> dict[str, Any]:
        return {"devices": self.devices, "precision": sorted({resolve_precision(self.precision_setting, d)
                                                               for d in self.devices}),
                "batch_size": self.batch_size, "workers": len(self.devices)}

    def workers(self) -> list[tuple[int, str, int]]:
        """``(pid, device, encoders built)`` of each worker process (for the run report and tests)."""
        probes = [self._pool.submit(worker_state, 0.2) for _ in range(len(self.devices) * 4)]
        return sorted({p.result() for p in probes})

    def close(self) -> None:
        self._finalizer.detach()
        self._pool.shutdown(wait=True, cancel_futures=True)

