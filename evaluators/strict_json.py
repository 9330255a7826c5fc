"""Strict JSON for results files: undefined numbers (NaN, ±inf) become ``null``.

Python's ``json`` writes bare ``NaN``/``Infinity``, which ``JSON.parse`` in a browser, ``jq`` and most
strict parsers reject; results.json must open everywhere, so the writer refuses them (``allow_nan=False``)
after turning every non-finite float into ``null``.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any


def finite_or_none(value: Any) -> Any:
    """``value`` with every non-finite float (also inside dicts, lists, tuples, dataclasses) as None."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [finite_or_none(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return finite_or_none(dataclasses.asdict(value))
    if hasattr(value, "item"):  # numpy scalars
        return finite_or_none(value.item())
    if hasattr(value, "tolist"):  # numpy arrays
        return finite_or_none(value.tolist())
    return float(value) if isinstance(value, (int, float)) else str(value)


def dumps(value: Any, indent: int | None = 2) -> str:
    """``value`` as strict JSON text (no NaN/Infinity tokens)."""
    import json

    return json.dumps(finite_or_none(value), indent=indent, ensure_ascii=False, allow_nan=False)
