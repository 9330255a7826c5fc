"""Where CPU-heavy per-item work runs: one seam, ``map(fn, items)`` in input order.

``local`` runs ``fn`` over chunks of items in a process pool on this machine (1 process, or fewer items
than one chunk per process = inline, no pool). Output order equals input order whatever the number of processes, so a build's output does
not depend on ``executor.processes``. Memory stays bounded: at most ``processes * prefetch`` chunks
are in flight, the input is read lazily. Workers fork from a forkserver that has imported ``fn``'s module
and the modules named in ``fn.preload_modules`` (heavy libraries load once). ``ray`` runs the same
ordered, bounded map as tasks on a Ray cluster (``RayExecutor``); ``fn`` and the items must be picklable.
"""
from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, Protocol, TypeVar

from babelrag.errors import ConfigError, StageError

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

        try:
            with ProcessPoolExecutor(max_workers=self.processes, mp_context=context) as pool:
                submitted = (pool.submit(_run_chunk, fn, chunk) for chunk in chunks(items, self.chunk_size))
                yield from in_order(submitted, self.processes * self.prefetch, lambda future: future.result())
        except BrokenProcessPool:
            raise StageError(f"a worker process of the local executor died while running {getattr(fn, '__name__', type(fn).__name__)} (killed for "
                             "memory, or a crash in a native library); rerun with executor.processes: 1 to see "
                             "which input causes it") from None


def in_order(submitted: Iterable[Any], window: int, result: Callable[[Any], list[R]]) -> Iterator[R]:
    """Results of chunk jobs in submission order, with at most ``window`` jobs in flight (jobs are started
    lazily from ``submitted``, so the input is read only as fast as results are taken)."""
    pending: deque = deque()
    for job in submitted:
        pending.append(job)
        while len(pending) >= window:
            yield from result(pending.popleft())
    while pending:
        yield from result(pending.popleft())


def chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def executor_from_config(config: Any, chunk_size: int | None = None) -> Executor:
    """``executor.backend`` local (a process pool, ``executor.processes`` None/0 = every core) or ray
    (tasks on the Ray cluster at ``executor.address``; None = a local cluster started here).
    ``chunk_size`` overrides ``executor.chunk_size`` for work whose items are already batches."""
    settings = config.executor
    size = chunk_size or settings.chunk_size
    if getattr(settings, "backend", "local") == "ray":
        return RayExecutor(address=settings.address, processes=settings.processes or 0, chunk_size=size)
    processes = settings.processes or available_cores()
    return LocalExecutor(processes=max(1, processes), chunk_size=size)


@dataclass
class RayExecutor:
    """Ray tasks on a cluster: the same ordered, bounded ``map`` as ``LocalExecutor``.

    Ray tasks rather than Ray Data: the inputs are read by this process (WARC records, HTML files,
    spool blocks) and results must come back in input order into the stage store; a task per chunk
    with a bounded window of chunks in flight does exactly that, and ``bench/bench_scaleout.py``
    measures it against a Ray Data pipeline. A worker that dies (killed, out of memory, node lost)
    has its task retried by Ray (``max_retries``); tasks are pure functions of their chunk, so a retried
    chunk gives the same result and the output does not change.
    """
    address: str | None = None  # "ray://head:10001", "auto", "host:6379"; None = start a local cluster
    processes: int = 0  # tasks that run at once; 0 = every CPU of the cluster
    chunk_size: int = 8
    prefetch: int = 2  # chunks in flight per running task
    max_retries: int = 3
    num_gpus: float = 0.0  # GPUs each task asks for (encoding on a GPU cluster: 1, so Ray pins it to one)

    def __post_init__(self) -> None:
        connect_ray(self.address, self.processes)
        if not self.processes:
            self.processes = cluster_cpus()

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        import ray

        task = ray.remote(num_cpus=1, num_gpus=self.num_gpus, max_retries=self.max_retries)(_run_chunk)
        fn_ref = ray.put(fn)  # shipped once, not with every chunk
        submitted = (task.remote(fn_ref, chunk) for chunk in chunks(items, self.chunk_size))
        yield from in_order(submitted, max(1, self.processes) * self.prefetch, _ray_result)


def _ray_result(ref: Any) -> list[Any]:
    """A task's result; an exception raised by ``fn`` in the worker is raised here as itself (a
    ConfigError stays a one-line ConfigError, not Ray's wrapper with the worker's traceback)."""
    import ray

    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, Exception):
            raise cause from None
        raise


def connect_ray(address: str | None, processes: int = 0) -> None:
    """Join the cluster at ``address`` (or start a local one with ``processes`` CPUs, 0 = all) unless
    this process is already connected. Ray is an optional extra: a clear error when it is missing."""
    try:
        import ray
    except ImportError:
        raise ConfigError("executor.backend ray needs Ray: pip install 'babelrag[ray]' "
                          "(or set executor.backend: local)") from None
    if ray.is_initialized():
        return
    # An empty address means a local cluster, as documented. Ray's own default (no address) would instead
    # attach to whatever /tmp/ray/ray_current_cluster names, a file `ray start` leaves behind, and then
    # refuse num_cpus. RAY_ADDRESS (set by `ray job submit` for its driver) still counts as an address.
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "address": address}
    if address.startswith("ray://"):
        token_auth_as_ray_start_does()
    if address == "local" and processes:
        options["num_cpus"] = processes
    try:
        init_ray(ray, options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"cannot reach the Ray cluster at executor.address={address!r}: "
                          f"{type(exc).__name__}: {str(exc)[:300]} (start it with `ray start --head`, "
                          f"or leave executor.address empty for a local cluster)") from None


CLIENT_INIT_ATTEMPTS = 3


def token_auth_as_ray_start_does() -> None:
    """Turn Ray's token authentication on for a Ray Client driver when ``ray start`` would turn it on.

    ``ray start --head`` enables token auth when ``RAY_AUTH_MODE`` is unset and a token exists
    (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``, which any local ``ray.init()`` of
    Ray 2.5x writes on first use). A Ray Client driver does not: it sends no token, the head refuses every
    call ("Authentication required but no authorization header provided") and the driver sees only a
    connection timeout. An explicit ``RAY_AUTH_MODE`` is left as it is."""
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token authentication
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def init_ray(ray: Any, options: dict[str, Any], pause_s: float = 2.0) -> None:
    """``ray.init``; through Ray Client (``ray://``) up to CLIENT_INIT_ATTEMPTS times when the head reports
    an init failure (ConnectionAbortedError: the per-driver server it starts for each client exited while
    starting), since each new connection gets a fresh one. Unreachable heads and other errors fail at once."""
    import logging

    for attempt in range(1, CLIENT_INIT_ATTEMPTS + 1):
        try:
            ray.init(**options)
            return
        except ConnectionAbortedError as exc:
            if not str(options.get("address", "")).startswith("ray://") or attempt == CLIENT_INIT_ATTEMPTS:
                raise
            logging.getLogger(__name__).warning(
                "Ray Client at %s: %s; connecting again (%d/%d)", options["address"], str(exc).splitlines()[0][:200],
                attempt + 1, CLIENT_INIT_ATTEMPTS)
            with contextlib.suppress(Exception):
                ray.shutdown()
            time.sleep(pause_s)


def cluster_cpus() -> int:
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def cluster_gpus() -> int:
    import ray

    return int(ray.cluster_resources().get("GPU", 0))


def in_ray_worker() -> bool:
    """True inside a Ray task (where a process-local resource such as a Milvus Lite file must not be opened)."""
    import sys

    if "ray" not in sys.modules:
        return False
    import ray

    try:
        return ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE
    except Exception:  # e.g. a Ray Client driver (ray://) has no local worker: not a worker either
        return False
