"""Article encoding on an executor's workers (``executor.backend: ray``): one task per block of texts.

The driver keeps the vector cache and the Milvus writes; workers only turn texts into vectors. Each
worker builds the encoder once (``worker_encoder``) and keeps it for the tasks that follow. A remote
embeddings endpoint (``dense.encoder.kind: openai``) already scales on its own: it is not mapped.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from .base import Encoder, Kind

_ENCODERS: dict[tuple[str, str | None, int], Encoder] = {}


@dataclass(frozen=True)
class EncodeTexts:
    """Picklable task: ``texts -> vectors`` with the encoder ``(kind, name_or_path, batch_size)`` names."""
    encoder_kind: str
    name_or_path: str | None
    batch_size: int
    kind: Kind = "passage"

    def __call__(self, texts: list[str]) -> np.ndarray:
        return worker_encoder(self.encoder_kind, self.name_or_path, self.batch_size).encode(texts, self.kind)


def worker_encoder(kind: str, name_or_path: str | None, batch_size: int) -> Encoder:
    key = (kind, name_or_path, batch_size)
    if key not in _ENCODERS:
        from . import build_encoder

        _ENCODERS[key] = build_encoder(SimpleNamespace(kind=kind, name_or_path=name_or_path, batch_size=batch_size,
                                                       endpoint=None))
    return _ENCODERS[key]


def encode_task(enc_cfg: Any, resolve: Any = None) -> EncodeTexts | None:
    """The task for ``dense.encoder`` (its path resolved here, where the config lives); None for kinds
    that do not run in a worker (``openai``: the endpoint does the work)."""
    if enc_cfg.kind == "openai":
        return None
    from . import model_path

    return EncodeTexts(enc_cfg.kind, model_path(enc_cfg.name_or_path, resolve), enc_cfg.batch_size)
