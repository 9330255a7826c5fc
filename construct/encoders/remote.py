"""OpenAI-compatible embeddings endpoint through the LLM layer (retries, limits, usage accounting)."""
from __future__ import annotations

from typing import Any

import numpy as np

from babelrag.errors import StageError

from .base import Encoder, Kind


class OpenAIEncoder(Encoder):
    def __init__(self, runner: Any, endpoint: str | None, batch_size: int = 64, stage: str = "pairs") -> None:
        self.runner = runner
        self.endpoint = endpoint
        self.batch_size = batch_size
        self.stage = stage
        ep = runner.settings.endpoints.get(endpoint) if endpoint and hasattr(runner.settings, "endpoints") else None
        self.name = f"openai:{endpoint or 'default'}:{getattr(ep, 'model', '')}"

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        results = self.runner.embed(endpoint=self.endpoint, texts=texts, stage=self.stage,
                                    batch_size=self.batch_size)
        bad = [r for r in results if not r.ok]
        if bad:
            raise StageError(f"embeddings endpoint {self.endpoint or 'default'} failed for {len(bad)} of "
                             f"{len(texts)} texts: {bad[0].error}")
        return np.asarray([r.value for r in results], dtype=np.float32)
