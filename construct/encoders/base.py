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
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

Kind = Literal["query", "passage"]


def l2_normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


class Encoder(ABC):
    """Subclasses implement ``_encode_batch``; ``encode`` handles batching and progress."""

    name: str = "encoder"  # identifies the model in the cache key: change it when the weights change
    dim: int = 0
    batch_size: int = 32

    @abstractmethod
    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray: ...

    def encode(self, texts: Sequence[str], kind: Kind = "passage",
               progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        starts = range(0, len(texts), self.batch_size)
        it: Iterable[int] = progress(starts, len(starts)) if progress else starts
        parts = [l2_normalise(self._encode_batch(texts[s:s + self.batch_size], kind)) for s in it]
        out = np.concatenate(parts)
        if not self.dim:
            self.dim = out.shape[1]
        return out


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

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        return self.inner._encode_batch(texts, kind)

    def encode(self, texts: Sequence[str], kind: Kind = "passage",
               progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None) -> np.ndarray:
        texts = list(texts)
        keys = [VectorCache.key(self.inner.name, kind, t) for t in texts]
        found = self.cache.get_many(keys)
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in found}.items())
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        if todo:
            vecs = self.inner.encode([t for _, t in todo], kind, progress)
            new = {k: v for (k, _), v in zip(todo, vecs)}
            self.cache.put_many(new.items())
            found.update(new)
        if not texts:
            return np.zeros((0, self.inner.dim), dtype=np.float32)
        out = np.stack([found[k] for k in keys]).astype(np.float32)
        self.dim = out.shape[1]
        return out
