"""A mined pair as a plain row (``PairRow``), and pair rows as Arrow columns of ``ArticlePair``'s schema.

The pairs stage finds hundreds of thousands of pairs; a pydantic ``ArticlePair`` each (validated field by field,
then read back into columns by ``PairRuns``) was a large share of its own Python. A miner hands a named tuple of
the fields it sets instead; the fields no miner sets (``relevant``, ``rationale``, ``provenance``: the relevance
stage's) are constant columns. What validation guaranteed still holds, checked a table at a time
(``pair_columns``): every value of the type of ``ArticlePair``'s schema (a value Arrow cannot convert is named
with its pair; a ``days_apart`` with a fraction, which Arrow would truncate), no missing value, ``method`` one of
``ArticlePair.method``'s, and (stricter than the record) non-empty ids. A bad row is refused with a
``PairRowError`` naming the pair, the field and the value.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, get_args

from babelrag.construct.pair_ids import pair_id
from babelrag.errors import StageError
from babelrag.records import ArticlePair

#: the methods ``ArticlePair.method`` allows
METHODS: tuple[str, ...] = get_args(ArticlePair.model_fields["method"].annotation)


class PairRow(NamedTuple):
    """One mined pair: ``ArticlePair``'s fields up to ``event_id``, in its order."""

    id: str
    article_a: str
    article_b: str
    language_a: str
    language_b: str
    method: str
    score: float
    shared_entities: Sequence[str] = ()
    days_apart: int = 0
    event_id: str = ""


#: the columns a ``PairRow`` carries; ``ArticlePair``'s others are constant (their defaults)
ROW_FIELDS: tuple[str, ...] = PairRow._fields
#: columns that must be non-empty strings
_NON_EMPTY = ("id", "article_a", "article_b")


class PairRowError(StageError):
    """A miner handed a pair that ``ArticlePair`` would refuse, or one with an empty id."""


def pair_row(method: str, a: str, b: str, language_a: str, language_b: str, score: float,
             shared_entities: Sequence[str] = (), days_apart: int = 0, event_id: str = "") -> PairRow:
    """A pair's row with its id (``pair_id``) and its score rounded as the stage stores it (6 places)."""
    return _new_row(PairRow, (pair_id(method, a, b), a, b, language_a, language_b, method, round(float(score), 6),
                              shared_entities, days_apart, event_id))


_new_row = tuple.__new__  # a named tuple from its values without the generated ``__new__``'s keyword handling


def pair_columns(rows: Sequence[Any], schema: Any) -> list[Any]:
    """``rows`` (``PairRow``s or tuples in its order) as one Arrow array per field of ``schema`` (``ArticlePair``'s),
    checked (``check_pairs``); the values are transposed in C (``zip``), not by a Python loop per column."""
    values = list(zip(*rows)) if len(rows) else [() for _ in ROW_FIELDS]
    if len(values) != len(ROW_FIELDS):
        raise PairRowError(f"pair rows have {len(values)} fields, expected {len(ROW_FIELDS)} ({', '.join(ROW_FIELDS)})")
    return _arrays(dict(zip(ROW_FIELDS, values)), len(rows), schema)


def pair_table(columns: Mapping[str, Any], schema: Any) -> Any:
    """Pairs given as columns (``PairRow``'s fields: sequences or numpy arrays; ``shared_entities``, ``days_apart``
    and ``event_id`` may be left out for their defaults) as a checked Arrow table of ``schema``."""
    import pyarrow as pa

    return pa.Table.from_arrays(_arrays(columns, len(columns["id"]), schema), schema=schema)


def _arrays(columns: Mapping[str, Any], n: int, schema: Any) -> list[Any]:
    import pyarrow as pa

    arrays = []
    for field in schema:
        if field.name in columns:
            values = columns[field.name]
            if pa.types.is_integer(field.type):
                _check_integral(columns["id"], field.name, values)
            try:
                arrays.append(pa.array(values, type=field.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                raise _conversion_error(columns["id"], field, values) from None
        elif field.name in PairRow._field_defaults:
            arrays.append(_constant_value(field, PairRow._field_defaults[field.name], n))
        elif field.name in ROW_FIELDS:
            raise PairRowError(f"pair columns: {field.name} is missing")
        else:
            arrays.append(_constant(field, n))
    check_pairs(pa.Table.from_arrays(arrays, schema=schema))
    return arrays


def check_pairs(table: Any) -> None:
    """What ``ArticlePair`` refuses, for a whole table at once: a missing value, a method it does not know; and an
    empty id (pair id or article id)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not table.num_rows:
        return
    for name in ROW_FIELDS:
        column = table.column(name)
        if column.null_count:
            _refuse(table, pc.is_null(column), f"{name} is missing")
        if pa.types.is_list(column.type):
            items = pc.list_flatten(column)
            if items.null_count:  # the pair of the first missing item
                parents = pc.list_parent_indices(column)
                _refuse(table, pc.is_in(pa.array(range(table.num_rows)), value_set=parents.filter(pc.is_null(items))),
                        f"{name} has a missing item")
    method = table.column("method")
    _refuse(table, pc.invert(pc.is_in(method, value_set=pa.array(METHODS))),
            f"method is not one of {', '.join(METHODS)}", column="method")
    for name in _NON_EMPTY:
        _refuse(table, pc.equal(pc.utf8_length(table.column(name)), 0), f"{name} is empty")


def _refuse(table: Any, bad: Any, why: str, column: str | None = None) -> None:
    """Raise naming the first row where ``bad`` holds (nothing where none does)."""
    import numpy as np
    import pyarrow.compute as pc

    if not pc.any(bad).as_py():
        return
    at = int(np.flatnonzero(np.asarray(bad, dtype=bool))[0])
    row = table.slice(at, 1).to_pylist()[0]
    value = f" ({row[column]!r})" if column else ""
    raise PairRowError(f"pair {row['id']!r} ({row['article_a']!r}, {row['article_b']!r}): {why}{value}; "
                       f"not a valid ArticlePair (construct/pair_rows.py)")


def _check_integral(ids: Sequence[Any], name: str, values: Any) -> None:
    """Arrow stores 1.5 in an integer column as 1; ``ArticlePair`` refuses a float with a fraction."""
    import numpy as np

    if isinstance(values, np.ndarray) and values.dtype.kind in "iu" or set(map(type, values)) <= {int}:
        return
    for n, value in enumerate(values):
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise PairRowError(f"pair {ids[n]!r}: {name} {value!r} is not a whole number; not a valid ArticlePair "
                               "(construct/pair_rows.py)")


def _conversion_error(ids: Sequence[Any], field: Any, column: Sequence[Any]) -> PairRowError:
    """The first value of ``column`` that Arrow cannot store as ``field``'s type, named with its pair."""
    import pyarrow as pa

    for n, value in enumerate(column):
        try:
            pa.array([value], type=field.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as err:
            return PairRowError(f"pair {ids[n]!r}: {field.name} {value!r} is not of type {field.type} ({err}); "
                                f"not a valid ArticlePair (construct/pair_rows.py)")
    return PairRowError(f"pair rows: the {field.name} column is not of type {field.type}")


def _constant(field: Any, n: int) -> Any:
    """A field no miner sets, as ``ArticlePair``'s default writes it: null, empty strings, a struct of them."""
    import pyarrow as pa

    default = ArticlePair.model_fields[field.name].get_default(call_default_factory=True)
    if pa.types.is_struct(field.type):
        values = default.model_dump() if default is not None else {}
        return pa.StructArray.from_arrays([_constant_value(sub, values.get(sub.name), n) for sub in field.type],
                                          fields=list(field.type))
    return _constant_value(field, default, n)


def _constant_value(field: Any, value: Any, n: int) -> Any:
    import pyarrow as pa

    if value is None:
        return pa.nulls(n, type=field.type)
    return pa.array([value] * n, type=field.type)


__all__ = ["PairRow", "PairRowError", "pair_row", "pair_columns", "pair_table", "check_pairs", "METHODS", "ROW_FIELDS"]
