"""Length-sorted batching with an automatic batch size that backs off on out-of-memory and grows back.

Texts of one call are encoded longest first, in batches of neighbours in length, so a batch pads to
about its own length instead of the longest text anywhere in it (cache-key order mixes 20-token titles
with 8,000-token articles); the vectors are put back in input order. Longest first also means an
out-of-memory error comes with the first batch, not hours in. ``BatchSize`` with ``auto`` halves the
size on OOM and retries the same texts; after ``GROW_AFTER`` batches in a row succeed at a reduced size
it doubles again (up to where it started), so one long outlier does not slow the rest of the corpus.
It never tries a batch as large, in padded tokens (size x longest length), as one that already ran out
of memory: it shrinks before such a batch instead of failing it again. A fixed size fails with a
one-line error that names the setting and the fix.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from babelrag.errors import ConfigError

from babelrag.devices import free_cached_memory, is_out_of_memory

AUTO_START = {"cuda": 256, "mps": 64, "cpu": 32}  # first try of batch_size: auto, per device type
GROW_AFTER = 8  # successful batches in a row at a reduced auto size before it doubles again


@dataclass
class BatchSize:
    """The current batch size; ``auto`` sizes back off on OOM (halving, down to 1) and grow back
    (doubling, up to ``maximum``) after ``GROW_AFTER`` successes in a row."""
    size: int
    auto: bool = False
    setting: str = "dense.encoder.batch_size"
    device: str = "cpu"
    backoffs: int = 0
    growths: int = 0
    maximum: int = 0  # the size it grows back to (0: the size it started at)
    oom_padded: Optional[int] = None  # the fewest padded tokens (size x longest length) that ran out of memory
    _streak: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        self.maximum = self.maximum or self.size

    @staticmethod
    def from_setting(value: "int | str", device: str = "cpu",
                     setting: str = "dense.encoder.batch_size") -> "BatchSize":
        if value == "auto":
            return BatchSize(AUTO_START[device.split(":")[0]], True, setting, device)
        return BatchSize(int(value), False, setting, device)

    def back_off(self, exc: BaseException, padded: Optional[int] = None) -> None:
        """After an OOM of a batch of ``padded`` tokens: a smaller size, or a ConfigError when it cannot
        shrink (fixed or already 1)."""
        free_cached_memory(self.device)
        if not self.auto:
            raise ConfigError(f"out of memory on {self.device} with {self.setting}={self.size}: set it lower, "
                              f"or 'auto' to back off by itself ({type(exc).__name__})") from None
        if self.size <= 1:
            raise ConfigError(f"out of memory on {self.device} with a batch of 1 ({self.setting}: auto): "
                              "lower max_length or use a device with more memory") from None
        if padded is not None:
            self.oom_padded = padded if self.oom_padded is None else min(self.oom_padded, padded)
        self.size = max(1, self.size // 2)
        self.backoffs += 1
        self._streak = 0

    def fit(self, longest: int, left: int) -> None:
        """Before a batch whose longest text is ``longest`` (``left`` texts to go): shrink below a size
        known to run out of memory at that length; after ``GROW_AFTER`` batches that fit, double unless
        that would be."""
        if not self.auto:
            return
        too_big = (lambda size: self.oom_padded is not None and min(size, left) * longest >= self.oom_padded)
        while self.size > 1 and too_big(self.size):
            self.size, self._streak = self.size // 2, 0
        grown = min(self.maximum, self.size * 2)
        if self._streak >= GROW_AFTER and grown > self.size and not too_big(grown):
            self.size, self._streak = grown, 0
            self.growths += 1

    def succeeded(self) -> None:
        self._streak += 1


def length_order(lengths: Sequence[int]) -> np.ndarray:
    """Indices longest first; equal lengths keep input order (stable), so the batches are reproducible."""
    return np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")


def encode_sorted(items: Sequence[Any], lengths: Sequence[int], run_batch: Callable[[list[Any]], np.ndarray],
                  batch: BatchSize,
                  progress: Optional[Callable[[Iterable[Any], int], Iterable[Any]]] = None) -> np.ndarray:
    """``run_batch`` over length-sorted batches of ``items``; rows back in input order.

    ``run_batch`` raising an out-of-memory error shrinks ``batch`` (auto) and retries the same items;
    a run of batches that fit lets it grow back (``BatchSize.fit``)."""
    n = len(items)
    order = length_order(lengths)
    out: Optional[np.ndarray] = None
    done = 0
    ticks = _Ticks(progress, n)
    while done < n:
        batch.fit(int(lengths[order[done]]), n - done)  # longest first: the first text sets the padding
        idx = order[done:done + batch.size]
        try:
            vecs = np.asarray(run_batch([items[i] for i in idx]), dtype=np.float32)
        except Exception as exc:  # noqa: BLE001 - only OOM is handled, the rest re-raised as is
            if not is_out_of_memory(exc):
                raise
            batch.back_off(exc, len(idx) * int(lengths[idx[0]]))
            continue
        if out is None:
            out = np.empty((n, vecs.shape[1]), dtype=np.float32)
        out[idx] = vecs
        done += len(idx)
        ticks.advance(len(idx))
        batch.succeeded()
    ticks.close()
    assert out is not None
    return out


class _Ticks:
    """Drives a ``progress(iterable, total)`` wrapper (rich/tqdm style) from a loop whose steps change size."""

    def __init__(self, progress: Optional[Callable[[Iterable[Any], int], Iterable[Any]]], total: int) -> None:
        self._it = iter(progress(range(total), total)) if progress else None

    def advance(self, k: int) -> None:
        if self._it is not None:
            for _ in range(k):
                next(self._it, None)

    def close(self) -> None:
        if self._it is not None:
            for _ in self._it:
                pass
