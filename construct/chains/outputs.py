"""Pydantic schemas of every LLM step in the question chain and the filters.

Small models (the embedded Qwen2.5-Coder-0.5B) wrap lists in other keys, answer "Yes." for booleans,
return a bare list, or write "A1" for an index. The validators below accept those shapes and reject
anything that is not usable, so a bad reply becomes a counted failure instead of a wrong record.
"""
from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_TRUE = {"true", "yes", "y", "1", "correct", "answerable"}
_FALSE = {"false", "no", "n", "0", "incorrect", "unanswerable", "not answerable", "none", ""}


def to_bool(v: Any) -> Any:
    if isinstance(v, bool) or v is None:
        return bool(v)
    if isinstance(v, (int, float)):
        return v != 0
    if isinstance(v, str):
        s = v.strip().strip(".!").lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
    return v  # let pydantic report it


def to_text(v: Any) -> Any:
    if isinstance(v, list):
        return ", ".join(str(x).strip() for x in v if str(x).strip())
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return v.strip() if isinstance(v, str) else v


class Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


# --- question chain --------------------------------------------------------------------------------
class Summary(Loose):
    summary: str = Field(min_length=20)

    @field_validator("summary", mode="before")
    @classmethod
    def _t(cls, v: Any) -> Any:
        return to_text(v) if not isinstance(v, list) else " ".join(str(x) for x in v)


class QAPair(Loose):
    question: str = Field(min_length=8)
    answer: str = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, v: Any) -> Any:
        if isinstance(v, dict):
            v = dict(v)
            for src, dst in (("q", "question"), ("a", "answer"), ("Question", "question"), ("Answer", "answer")):
                if src in v and dst not in v:
                    v[dst] = v.pop(src)
        return v

    @field_validator("question", "answer", mode="before")
    @classmethod
    def _t(cls, v: Any) -> Any:
        return to_text(v)


class SimplePairs(Loose):
    pairs: list[QAPair] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, v: Any) -> Any:
        if isinstance(v, list):
            return {"pairs": v}
        if isinstance(v, dict) and "pairs" not in v:
            for key in ("qa_pairs", "questions", "qas", "items", "qa", "simple_pairs"):
                if isinstance(v.get(key), list):
                    return {"pairs": v[key]}
            if "question" in v and "answer" in v:
                return {"pairs": [v]}
        return v

    @field_validator("pairs", mode="before")
    @classmethod
    def _drop_junk(cls, v: Any) -> Any:
        if isinstance(v, list):  # keep the usable entries; an all-junk list still fails min_length
            return [p for p in v if isinstance(p, dict) and p.get("question", p.get("q")) and
                    p.get("answer", p.get("a")) not in (None, "")]
        return v


_IDX = re.compile(r"(\d+)")


def _indices(v: Any) -> Any:
    if v is None:
        return []
    if not isinstance(v, list):
        v = [v]
    out = []
    for x in v:
        if isinstance(x, bool):
            continue
        if isinstance(x, int):
            out.append(x)
        elif isinstance(x, str) and _IDX.search(x):
            out.append(int(_IDX.search(x).group(1)))  # "A2" -> 2
    return out


_LABEL = re.compile(r"^\s*(?:question|q)\s*[:.\-]\s*", re.I)
_TRAILING_ANSWER = re.compile(r"(?<=\?)\s*(?:A|Answer)\s*:\s.*$", re.S)


def clean_question(v: Any) -> Any:
    """Drop a "Question:" label and an answer the model appended ("...? A: ...")."""
    if not isinstance(v, str):
        return v
    v = _LABEL.sub("", v.strip())
    return _TRAILING_ANSWER.sub("", v).strip()


class CrossDocQuestion(Loose):
    question: str = Field(min_length=10)
    used_a: list[int] = Field(default_factory=list)
    used_b: list[int] = Field(default_factory=list)

    @field_validator("used_a", "used_b", mode="before")
    @classmethod
    def _i(cls, v: Any) -> Any:
        return _indices(v)

    @field_validator("question", mode="before")
    @classmethod
    def _t(cls, v: Any) -> Any:
        return clean_question(to_text(v))


class Answer(Loose):
    answer: str = Field(min_length=1)

    @field_validator("answer", mode="before")
    @classmethod
    def _t(cls, v: Any) -> Any:
        return to_text(v)


# --- filters ---------------------------------------------------------------------------------------
class Attempt(Loose):
    """A model's attempt to answer (from one article, or closed-book)."""

    answerable: bool = True
    answer: str = ""

    @field_validator("answerable", mode="before")
    @classmethod
    def _b(cls, v: Any) -> Any:
        return to_bool(v)

    @field_validator("answer", mode="before")
    @classmethod
    def _t(cls, v: Any) -> Any:
        return to_text(v) if v is not None else ""


class Judgement(Loose):
    correct: bool
    reason: str = ""

    @field_validator("correct", mode="before")
    @classmethod
    def _b(cls, v: Any) -> Any:
        return to_bool(v)


class Rating(Loose):
    score: int = Field(ge=1, le=5)
    reason: str = ""

    @field_validator("score", mode="before")
    @classmethod
    def _n(cls, v: Any) -> Any:
        if isinstance(v, str) and _IDX.search(v):
            return int(_IDX.search(v).group(1))
        return v
