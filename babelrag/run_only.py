"""Which config values change a stage's output, and which only change how it runs.

A settings field that never changes what a stage writes (concurrency, rate limits, timeouts, retries,
prices, progress bars, the project's name, where work runs) is declared with ``run_only()``; stage
fingerprints and record provenance hash only the other fields (``output_values``), so changing it never
makes a stage stale. One marker, read by one walker: adding a run-only field is one ``Field`` argument.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python

_MARK = "run_only"


def run_only(default: Any = None, **kwargs: Any) -> Any:
    """``Field(default, **kwargs)`` marked as changing how a stage runs, never what it writes."""
    extra = dict(kwargs.pop("json_schema_extra", None) or {})
    extra[_MARK] = True
    return Field(default, json_schema_extra=extra, **kwargs)


def is_run_only(field: FieldInfo) -> bool:
    extra = field.json_schema_extra
    return isinstance(extra, dict) and bool(extra.get(_MARK))


def output_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``model`` that can change a stage's output."""
    return tuple(name for name, f in model.model_fields.items() if not f.exclude and not is_run_only(f))


def output_values(value: Any) -> Any:
    """``value`` as JSON-able data without its run-only fields (recursing into models, lists, dicts).
    A model with a ``fingerprint_dump()`` method says itself how it is identified (LLM endpoints)."""
    if isinstance(value, BaseModel):
        dump = getattr(value, "fingerprint_dump", None)
        if callable(dump):
            return dump()
        return {name: output_values(getattr(value, name)) for name in output_fields(type(value))}
    if isinstance(value, dict):
        return {str(k): output_values(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [output_values(v) for v in value]
    return to_jsonable_python(value)
