"""The LLM layer: every chain (questions, relevance checks, judges) calls models through here.

Pieces live in their modules (``.client``, ``.config``, ``.prompts``, ``.usage``, ``.local``); the
names below are resolved lazily so importing ``babelrag.llm`` (and ``babelrag --help``) stays fast.
"""
from __future__ import annotations

from typing import Any

_LAZY = {
    "LLMRunner": "babelrag.llm.client",
    "AsyncLLM": "babelrag.llm.client",
    "Result": "babelrag.llm.client",
    "runner_from_config": "babelrag.llm.client",
    "EndpointConfig": "babelrag.llm.settings",
    "LLMSettings": "babelrag.llm.settings",
    "Prompt": "babelrag.llm.prompts",
    "Usage": "babelrag.llm.usage",
    "embedded_endpoint": "babelrag.llm.local",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'babelrag.llm' has no attribute {name!r}")
