"""Typed records in parquet: the Arrow schema from a pydantic model, atomic writes in fixed row groups
(the same rows always give the same bytes), and streaming / by-id reads.

Every ParquetFile is opened with pre_buffer=False: pyarrow's default pre-buffers the whole file (a merge
holds up to ``MERGE_FAN_IN`` files open, a stream walks a corpus-sized file).
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from babelrag.arrow_features import features_for
from babelrag.atomic import atomic_path
from babelrag.errors import InputError

M = TypeVar("M", bound=BaseModel)

#: rows per parquet row group in everything the store writes (a reader holds one group at a time)
ROW_GROUP = 256


def arrow_schema(model: type[BaseModel]) -> Any:
    """The Arrow schema of ``model`` (with the ``datasets`` features in its metadata)."""
    return features_for(model).arrow_schema


def write_tables(path: Path, schema: Any, tables: Iterable[Any]) -> int:
    """Write Arrow tables as one parquet file, ``ROW_GROUP`` rows per group; atomic. Returns the row count.

    The row groups depend only on the rows (tables are re-cut into ROW_GROUP-sized, contiguous pieces),
    so the same rows always give the same bytes.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 0
    pending: list[Any] = []
    pending_rows = 0
    with atomic_path(path) as tmp:
        # min/max statistics only for the key columns (read_ids prunes row groups with them): those of
        # text columns would put two article texts per row group into the footer, which every reader
        # and the merge's open files hold in memory
        keys = [name for name in ("id", "item_id") if name in schema.names]
        with pq.ParquetWriter(str(tmp), schema, write_statistics=keys) as writer:
            def emit(table: Any) -> None:
                writer.write_table(table.combine_chunks(), row_group_size=ROW_GROUP)

            for table in tables:
                if table.num_rows == 0:
                    continue
                pending.append(table)
                pending_rows += table.num_rows
                while pending_rows >= ROW_GROUP:
                    whole = pa.concat_tables(pending)
                    emit(whole.slice(0, ROW_GROUP))
                    rest = whole.slice(ROW_GROUP)
                    pending, pending_rows = ([rest] if rest.num_rows else []), rest.num_rows
                    n += ROW_GROUP
            if pending_rows:
                emit(pa.concat_tables(pending))
                n += pending_rows
    return n


def _rows_to_tables(rows: Iterable[dict[str, Any]], schema: Any) -> Iterator[Any]:
    import pyarrow as pa

    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= ROW_GROUP:
            yield pa.Table.from_pylist(batch, schema=schema)
            batch = []
    if batch:
        yield pa.Table.from_pylist(batch, schema=schema)


def write_records(path: Path, records: Iterable[BaseModel], model: type[BaseModel]) -> int:
    """Write records (any iterable, consumed batch by batch) as parquet with exact features; atomic."""
    schema = arrow_schema(model)
    rows = (r.model_dump() for r in records)  # python values: dates stay dates (Arrow date32)
    return write_tables(path, schema, _rows_to_tables(rows, schema))


def read_records(path: Path, model: type[M]) -> list[M]:
    import pyarrow.parquet as pq

    if not path.exists():
        return []
    table = pq.read_table(path)
    return [model.model_validate(row) for row in table.to_pylist()]


def iter_records(path: Path, model: type[M], batch_size: int = 2048) -> Iterator[M]:
    """Records of a parquet file, one batch in memory at a time."""
    import pyarrow.parquet as pq

    if not path.exists():
        return
    with pq.ParquetFile(path, pre_buffer=False) as parquet:
        for batch in parquet.iter_batches(batch_size=batch_size):
            for row in batch.to_pylist():
                yield model.model_validate(row)


def read_by_ids(path: Path, model: type[M], ids: Iterable[str], key: str = "id") -> dict[str, M]:
    """The records whose ``key`` is in ``ids``; reads only row groups whose id range can hold one.

    Stage outputs are sorted by id, so each wanted id falls in (about) one row group of ROW_GROUP rows.
    """
    import pyarrow.parquet as pq

    want = sorted(set(ids))
    out: dict[str, M] = {}
    if not want or not path.exists():
        return out
    wanted = set(want)
    with pq.ParquetFile(path, pre_buffer=False) as parquet:
        for rg in _row_groups_holding(parquet, key, want):
            for row in parquet.read_row_group(rg).to_pylist():
                if row[key] in wanted:
                    out[row[key]] = model.model_validate(row)
    return out


def _row_groups_holding(parquet: Any, key: str, want: list[str]) -> Iterator[int]:
    """The row groups whose ``key`` min/max range can hold one of the sorted ids ``want`` (every group without
    statistics)."""
    meta = parquet.metadata
    col = parquet.schema_arrow.get_field_index(key)
    for rg in range(meta.num_row_groups):
        stats = meta.row_group(rg).column(col).statistics
        if stats is not None and stats.has_min_max:
            lo, hi = stats.min, stats.max
            if isinstance(lo, bytes):
                lo, hi = lo.decode("utf-8"), hi.decode("utf-8")
            i = bisect_left(want, lo)
            if i == len(want) or want[i] > hi:
                continue
        yield rg


def missing_columns(path: Path, columns: Iterable[str]) -> list[str]:
    """Those of ``columns`` the parquet file's schema lacks (a file written by an older version)."""
    import pyarrow.parquet as pq

    names = set(pq.read_schema(path).names)
    return [c for c in columns if c not in names]


def iter_batches(path: Path, columns: Sequence[str], ids: Iterable[str] | None = None, key: str = "id",
                 batch_size: int = 8192) -> Iterator[Any]:
    """Only ``columns`` of a parquet file as Arrow record batches, in file order, one batch in memory at a time: no
    Python object per row (the pairs stage reads a corpus's ids, days and entities this way). With ``ids``: only the
    rows whose ``key`` is one of them, from the row groups whose key range can hold one (stage outputs are sorted by
    id: about one group per id). Nothing for a file that does not exist (a stage that wrote no records)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if not path.exists():
        return
    with pq.ParquetFile(path, pre_buffer=False) as parquet:
        if ids is None:
            yield from parquet.iter_batches(batch_size=batch_size, columns=list(columns))
            return
        want = sorted(set(ids))
        if not want:
            return
        wanted = pa.array(want, type=pa.string())
        read = list(dict.fromkeys([*columns, key]))
        for rg in _row_groups_holding(parquet, key, want):
            group = parquet.read_row_group(rg, columns=read)
            group = group.filter(pc.is_in(group.column(key), value_set=wanted))
            if group.num_rows:
                yield from group.select(list(columns)).combine_chunks().to_batches()


# --------------------------------------------------------------------------------------------------
# sorted merge of shard files


def iter_column(path: Path, column: str) -> Iterator[str]:
    return (row[0] for row in iter_columns(path, [column]))


def iter_columns(path: Path, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """Rows of ``columns`` as tuples, in file order; only those columns are read, a batch at a time."""
    for batch in iter_batches(path, columns):
        yield from zip(*(batch.column(i).to_pylist() for i in range(len(columns))))


def read_rows(path: Path, fix: str = "write it again or restore it from its source") -> list[dict[str, Any]]:
    """Every row of a parquet file as a dict. A damaged file (truncated, empty, not parquet) is an
    InputError naming it, its size and ``fix``, never an ``ArrowInvalid`` traceback."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pylist()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types (ArrowInvalid, OSError, ...)
        size = Path(path).stat().st_size if Path(path).exists() else 0
        raise InputError(f"{path}: damaged parquet file ({size} bytes; {str(exc).splitlines()[0]}); {fix}") from None
