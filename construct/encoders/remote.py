"""OpenAI-compatible embeddings endpoint through the LLM layer (retries, limits, usage accounting)."""
from __future__ import annotations

from typing import Any

import numpy as np

from babelrag.errors import ConfigError, IncompleteRunError, StageError

from .base import Encoder, EncoderEnv, Kind
from .registry import register


@register
class OpenAIEncoder(Encoder):
    """The endpoint batches and places the work itself: device and precision do not apply, and
    ``batch_size: auto`` is 64 texts per request."""

    kind = "openai"
    runs_on = "remote"

    def __init__(self, runner: Any, endpoint: str | None, batch_size: "int | str" = 64, stage: str = "pairs") -> None:
        self.runner = runner
        self.endpoint = endpoint
        self.batch_size = 64 if batch_size == "auto" else int(batch_size)
        self.stage = stage
        ep = runner.settings.endpoints.get(endpoint) if endpoint and hasattr(runner.settings, "endpoints") else None
        self.name = f"openai:{endpoint or 'default'}:{getattr(ep, 'model', '')}"

    @classmethod
    def from_config(cls, settings: Any, env: EncoderEnv) -> Encoder:
        if env.runner_factory is None:
            raise ConfigError("dense.encoder.kind openai needs the LLM layer (llm.endpoints)")
        return cls(env.runner_factory(), settings.endpoint, batch_size=settings.batch_size)

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        results = self.runner.embed(endpoint=self.endpoint, texts=texts, stage=self.stage,
                                    batch_size=self.batch_size)
        bad = [r for r in results if not r.ok]
        if bad:
            message = (f"embeddings endpoint {self.endpoint or 'default'} failed for {len(bad)} of "
                       f"{len(texts)} texts: {bad[0].error}")
            if all(r.retryable for r in bad):  # no answer (down, timeouts, 5xx): the same command resumes
                raise IncompleteRunError(f"{message}; finished work is kept: run the same command again")
            raise StageError(message)
        return np.asarray([r.value for r in results], dtype=np.float32)
