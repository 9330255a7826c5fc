"""A tiny encoder added the way docs/construct.md says ("Adding an encoder"): one module with a
registered ``Encoder`` subclass (a ``kind``, ``from_config``, ``_encode_batch``) and its registry entry."""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from babelrag.construct.encoders.base import Encoder, EncoderEnv, Kind
from babelrag.construct.encoders.registry import register, register_lazy

register_lazy("letter-hash", f"{__name__}:LetterHashEncoder")


@register
class LetterHashEncoder(Encoder):
    """Counts of each word's hash bucket: texts sharing words get close vectors (no model, any device)."""

    kind = "letter-hash"
    name = "letter-hash-1"
    dim = 16

    def __init__(self, batch_size: "int | str" = 8) -> None:
        self.set_batch_size(batch_size)

    @classmethod
    def from_config(cls, settings: Any, env: EncoderEnv) -> Encoder:
        return cls(batch_size=settings.batch_size)

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, hashlib.sha1(word.encode()).digest()[0] % self.dim] += 1.0
        return out + 1e-3
