"""Arrow features derived from the pydantic record types, so stored columns have exact types."""
from __future__ import annotations

import datetime
import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel


def _feature_for(annotation: Any) -> Any:
    import datasets

    origin = get_origin(annotation)
    if origin is Annotated:
        base, *metadata = get_args(annotation)
        if any(type(m).__name__ == "ArrowDate" for m in metadata):
            return datasets.Value("date32")
        return _feature_for(base)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union {annotation!r}: store it as a JSON string")
        return _feature_for(args[0])
    if origin is Literal:
        return datasets.Value("string")
    if origin in (list, tuple, typing.Sequence):
        (item,) = get_args(annotation)[:1]
        return datasets.List(_feature_for(item))
    if origin is dict:
        raise TypeError("dict fields are stored as JSON strings (name them *_json)")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {name: _field_feature(f) for name, f in annotation.model_fields.items()}
    scalar = {str: "string", int: "int64", float: "float64", bool: "bool", datetime.date: "date32"}
    if annotation in scalar:
        return datasets.Value(scalar[annotation])
    raise TypeError(f"no Arrow feature for {annotation!r}")


def _field_feature(field: Any) -> Any:
    """A field's feature; pydantic keeps a top-level ``Annotated`` field's markers in ``field.metadata``."""
    if field.metadata:
        return _feature_for(Annotated[(field.annotation, *field.metadata)])
    return _feature_for(field.annotation)


def features_for(model: type[BaseModel]) -> Any:
    """``datasets.Features`` matching ``model``'s fields (nested models become structs)."""
    import datasets

    return datasets.Features({name: _field_feature(field) for name, field in model.model_fields.items()})
