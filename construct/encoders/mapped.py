"""Article encoding on workers: Ray tasks (``executor.backend: ray``) or one process per local device.

The driver keeps the vector cache and the Milvus writes; workers only turn texts into vectors. Each
worker builds the encoder once (``worker_encoder``) and keeps it for the tasks that follow. On Ray, a
cluster with GPUs gets tasks that ask for one GPU each (``num_gpus=1``; Ray pins the task to it and the
worker's ``auto`` device resolves to it); a cluster without GPUs, or an encoder that runs on CPU only,
gets CPU tasks. A remote embeddings endpoint (``dense.encoder.kind: openai``) already scales on its
own: it is not mapped.
"""
from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any, Optional, Union

import numpy as np

from babelrag.errors import ConfigError
from babelrag.executor import RayExecutor, cluster_gpus, executor_from_config

from . import registry
from .base import Encoder, Kind
from .factory import build_on_device, encoder_devices, encoder_settings, model_path

_ENCODERS: dict[tuple[Any, ...], Encoder] = {}
_CLAIMED_DEVICE: Optional[str] = None  # the device a local pool worker took at start (multi.py)
BUILDS: Counter[tuple[Any, ...]] = Counter()  # encoders built in this process, per settings (reused across tasks)


@dataclass(frozen=True)
class EncodeTexts:
    """Picklable task: ``texts -> vectors`` for the ``dense.encoder`` settings it carries."""
    encoder_kind: str
    name_or_path: Optional[str]
    batch_size: Union[int, str]
    kind: Kind = "passage"
    device: Union[str, tuple[str, ...]] = "auto"
    precision: str = "auto"
    max_length: int = 512

    def __call__(self, texts: list[str]) -> np.ndarray:
        return worker_encoder(self).encode(texts, self.kind)

    def key(self, device: Union[str, tuple[str, ...]]) -> tuple[Any, ...]:
        return (self.encoder_kind, self.name_or_path, self.batch_size, device, self.precision, self.max_length)


def worker_encoder(task: EncodeTexts) -> Encoder:
    """This process's encoder for ``task`` (built on first use; a pool worker uses the device it claimed)."""
    device = _CLAIMED_DEVICE or task.device
    key = task.key(device)
    if key not in _ENCODERS:
        settings = encoder_settings(SimpleNamespace(
            kind=task.encoder_kind, name_or_path=task.name_or_path, batch_size=task.batch_size, endpoint=None,
            device=list(device) if isinstance(device, tuple) else device, precision=task.precision,
            max_length=task.max_length))
        devices = encoder_devices(settings)
        if len(devices) > 1:  # a worker is one device's: several are a pool of workers (multi.py)
            raise ConfigError(f"an encoding worker runs on one device, not {devices}; list the devices in "
                              "dense.encoder.device for a pool of workers")
        _ENCODERS[key] = build_on_device(settings, devices[0])
        BUILDS[key] += 1
    return _ENCODERS[key]


@dataclass(frozen=True)
class BuildsProbe:
    """Picklable task: ``(pid, times this process built the encoder of task)`` (tests, diagnostics)."""
    task: EncodeTexts
    pause_s: float = 0.0

    def __call__(self, _: Any) -> tuple[int, int]:
        time.sleep(self.pause_s)
        return os.getpid(), BUILDS[self.task.key(_CLAIMED_DEVICE or self.task.device)]


def encode_task(enc_cfg: Any, resolve: Any = None, kind: Kind = "passage") -> EncodeTexts | None:
    """The task for ``dense.encoder`` (its path resolved here, where the config lives); None for kinds
    that do not run in a worker (``openai``: the endpoint does the work)."""
    settings = encoder_settings(enc_cfg)
    if registry.get(settings.kind).runs_on == "remote":
        return None
    device = settings.device if isinstance(settings.device, str) else tuple(settings.device)
    return EncodeTexts(settings.kind, model_path(settings.name_or_path, resolve), settings.batch_size, kind,
                       device, settings.precision, settings.max_length)


def plan_cluster_encoding(task: EncodeTexts, cluster_gpus: int, cpu_workers: int) -> tuple[EncodeTexts, float, int]:
    """``(task, num_gpus per task, tasks at once)`` on a Ray cluster: one task per GPU when the cluster
    has GPUs and the encoder can use them (device not pinned to cpu), else CPU tasks on every CPU worker."""
    on_gpu = (registry.get(task.encoder_kind).runs_on == "torch" and cluster_gpus > 0
              and task.device not in ("cpu", ("cpu",)))
    if on_gpu:
        return replace(task, device="auto"), 1.0, cluster_gpus
    return replace(task, device="cpu"), 0.0, cpu_workers


def cluster_encode_map(config: Any) -> Optional[tuple[Callable[[Iterable[list[str]]], Iterator[np.ndarray]], int]]:
    """``(map over blocks of texts, workers)`` on the Ray cluster for ``dense.encoder``; None for
    endpoint encoders."""
    task = encode_task(config.dense.encoder, config.resolve)
    if task is None:
        return None
    executor = executor_from_config(config, chunk_size=1)  # an item is already a block of passages
    assert isinstance(executor, RayExecutor)
    task, executor.num_gpus, executor.processes = plan_cluster_encoding(task, cluster_gpus(), executor.processes)
    return (lambda blocks: executor.map(task, blocks)), executor.processes
