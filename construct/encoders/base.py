"""The encoder interface, batching with progress, and a vector cache keyed by text hash.

An encoder turns texts into L2-normalised float32 vectors; ``kind`` says whether they are queries or
passages (e5-style models prefix them differently, symmetric models ignore it). ``CachedEncoder`` wraps
any encoder: texts already embedded by the same model are read from a SQLite file instead of re-encoded.
"""
from __future__ import annotations

import hashlib
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Optional

import numpy as np

from babelrag.batching import BatchSize, encode_sorted

Kind = Literal["query", "passage"]


def l2_normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def vector_identity(model: str, precision: str, max_length: int) -> str:
    """The name a torch encoder's vectors are cached under: the model, plus the precision and token limit
    where they differ from fp32 / 512 (both change the vectors; caches written with the defaults stay valid)."""
    return ":".join([model, *(v for v, default in ((precision, "fp32"), (f"max{max_length}", "max512"))
                              if v != default)])


@dataclass(frozen=True)
class EncoderEnv:
    """What ``from_config`` gets besides the settings: the one device this instance runs on, its
    precision (both resolved), and the LLM layer for endpoint encoders."""
    device: str = "cpu"
    precision: str = "fp32"
    runner_factory: Optional[Callable[[], Any]] = None


class Encoder(ABC):
    """Subclasses implement ``_encode_batch``; ``encode`` batches by length (``batching.encode_sorted``)
    with progress. Torch encoders override ``_prepare`` to tokenize once and sort by token count."""

    kind: ClassVar[str] = ""  # the registry name (dense.encoder.kind)
    runs_on: ClassVar[str] = "cpu"  # cpu (CPU-only runtime) | torch (any torch device) | remote (an endpoint)
    name: str = "encoder"  # identifies the model in the cache key: change it when the weights change
    dim: int = 0
    batch_size: int = 32
    auto_batch: bool = False  # batch_size: auto (back off on out-of-memory)
    device: str = "cpu"
    precision: str = "fp32"
    _batch: Optional[BatchSize] = None

    @classmethod
    def from_config(cls, settings: Any, env: EncoderEnv) -> "Encoder":
        """Build from ``dense.encoder`` settings (``EncoderConfig``, paths already resolved); this default
        suits a model that takes only a batch size (CPU-only encoders)."""
        return cls(batch_size=settings.batch_size)  # type: ignore[call-arg]

    @abstractmethod
    def _encode_batch(self, items: list[Any], kind: Kind) -> np.ndarray: ...

    def _prepare(self, texts: list[str], kind: Kind) -> tuple[list[Any], list[int]]:
        """What ``_encode_batch`` takes for each text, and its length (characters unless overridden)."""
        return texts, [len(t) for t in texts]

    def set_batch_size(self, value: "int | str", setting: str = "dense.encoder.batch_size") -> None:
        """A fixed size, or ``auto`` (a device-dependent start that halves on out-of-memory)."""
        self._batch = BatchSize.from_setting(value, self.device, setting)
        self.batch_size, self.auto_batch = self._batch.size, self._batch.auto

    @property
    def batch(self) -> BatchSize:
        if self._batch is None:
            self._batch = BatchSize(self.batch_size, self.auto_batch, device=self.device)
        return self._batch

    def encode(self, texts: Sequence[str], kind: Kind = "passage",
               progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        items, lengths = self._prepare(texts, kind)
        out = encode_sorted(items, lengths, lambda b: l2_normalise(self._encode_batch(b, kind)), self.batch,
                            progress)
        self.batch_size = self.batch.size
        if not self.dim:
            self.dim = out.shape[1]
        return out

    def encode_blocks(self, blocks: Iterable[Sequence[str]], kind: Kind = "passage") -> Iterator[np.ndarray]:
        """Vectors for each block, in order (a device pool overrides this to run blocks side by side)."""
        return (self.encode(b, kind) for b in blocks)

    def placement(self) -> dict[str, Any]:
        """Where and how it ran, for the run report: devices, precision, the batch size in the end and
        how often ``auto`` backed off on out-of-memory (and grew back after it)."""
        return {"devices": [self.device], "precision": self.precision, "batch_size": self.batch.size,
                "batch_auto": self.batch.auto, "oom_backoffs": self.batch.backoffs,
                "batch_growths": self.batch.growths}

    def close(self) -> None:
        """Release what outlives a call (worker processes, files), so that a stage's workers are gone
        before the next stage starts its own; an in-process encoder holds nothing of the kind."""

    def __enter__(self) -> "Encoder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class VectorCache:
    """``(model, kind, sha256(text)) -> float32 vector`` in one SQLite file (safe across re-runs)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (key TEXT PRIMARY KEY, dim INTEGER, data BLOB)")
        self._lock = threading.Lock()

    @staticmethod
    def key(model: str, kind: str, text: str) -> str:
        return hashlib.sha256(f"{model}\x1f{kind}\x1f{text}".encode()).hexdigest()

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for s in range(0, len(keys), 500):
                chunk = list(keys[s:s + 500])
                q = f"SELECT key, data FROM vec WHERE key IN ({','.join('?' * len(chunk))})"
                for k, data in self._db.execute(q, chunk):
                    out[k] = np.frombuffer(data, dtype=np.float32)
        return out

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vec VALUES (?, ?, ?)",
                                 ((k, len(v), np.asarray(v, np.float32).tobytes()) for k, v in items))
            self._db.commit()

    def close(self) -> None:
        self._db.close()


class CachedEncoder(Encoder):
    """Any encoder plus the vector cache: only texts never seen by this model are encoded."""

    def __init__(self, inner: Encoder, cache: VectorCache) -> None:
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self.dim = inner.dim
        self.batch_size = inner.batch_size
        self.hits = 0
        self.misses = 0

    def _encode_batch(self, items: list[Any], kind: Kind) -> np.ndarray:
        return self.inner._encode_batch(items, kind)

    def placement(self) -> dict[str, Any]:
        return self.inner.placement()

    def close(self) -> None:
        """The inner encoder (a device pool's workers) and the cache file."""
        try:
            self.inner.close()
        finally:
            self.cache.close()

    def encode(self, texts: Sequence[str], kind: Kind = "passage",
               progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None) -> np.ndarray:
        return next(self.encode_stream([list(texts)], kind,
                                       lambda todo: (self.inner.encode(t, kind, progress) for t in todo)))

    def encode_stream(self, blocks: Iterable[Sequence[str]], kind: Kind = "passage",
                      encode_misses: Callable[[Iterable[list[str]]], Iterable[np.ndarray]] | None = None,
                      ) -> Iterator[np.ndarray]:
        """Vectors for each block of texts, in block order. ``encode_misses`` turns an iterable of text
        lists (each block's texts missing from the cache, sorted by cache key) into their vectors in the
        same order: an executor's ``map`` over workers, or the inner encoder here (default).

        A text missing from several blocks is encoded once, with the first block, whether blocks are
        encoded one after another or many at a time: the batches the model sees, and so the vectors,
        do not depend on how many blocks are in flight."""
        if encode_misses is None:
            encode_misses = lambda todo: self.inner.encode_blocks(todo, kind)  # noqa: E731
        pending: deque[tuple[list[str], dict[str, np.ndarray], list[tuple[str, str]]]] = deque()
        in_flight: set[str] = set()

        def misses() -> Iterator[list[str]]:
            for block in blocks:
                keys = [VectorCache.key(self.inner.name, kind, t) for t in block]
                found = self.cache.get_many(keys)
                todo = sorted({k: t for k, t in zip(keys, block) if k not in found and k not in in_flight}.items())
                in_flight.update(k for k, _ in todo)
                self.hits += len(keys) - len(todo)
                self.misses += len(todo)
                pending.append((keys, found, todo))
                yield [t for _, t in todo]

        for vecs in encode_misses(misses()):
            keys, found, todo = pending.popleft()
            if todo:
                new = {k: v for (k, _), v in zip(todo, vecs)}
                self.cache.put_many(new.items())
                found.update(new)
                in_flight.difference_update(new)
            late = [k for k in keys if k not in found]  # encoded with an earlier block, cached since
            if late:
                found.update(self.cache.get_many(late))
            if not keys:
                yield np.zeros((0, self.inner.dim), dtype=np.float32)
                continue
            out = np.stack([found[k] for k in keys]).astype(np.float32)
            self.dim = out.shape[1]
            yield out
