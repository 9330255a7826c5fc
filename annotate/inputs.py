"""Input record types for the projects that have no core record type, and loading of input files.

Core types (``QAItem``, ``Instance``) come from ``babelrag.records``; contrastive pairs and model
answers are produced by evaluators and arrive here as JSONL rows of the shapes below.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict

from babelrag.rows import parse, read_rows  # noqa: F401 - re-exported: the CLI reads input files through here


class ContrastivePair(BaseModel):
    """Two responses of which construction says one is better (Ragas-for-Romanian contrastive pairs)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    criterion: Literal["faithfulness", "answer_relevance", "context_relevance"]
    question: str
    context: str = ""
    better: str  # the response construction says is better
    worse: str
    language: str = "en"
    judge_choice: Optional[Literal["better", "worse"]] = None  # an LLM judge's pick, shown as a suggestion


class ModelAnswer(BaseModel):
    """A model's answer to a benchmark question, with the judge panel's majority verdict if any."""

    model_config = ConfigDict(extra="forbid")
    id: str
    qa_id: str
    model: str
    question: str
    gold_answer: str
    answer: str
    language: str = "en"
    setting: str = ""
    judge_verdict: Optional[Literal["correct", "incorrect"]] = None
