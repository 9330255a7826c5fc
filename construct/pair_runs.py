"""The pairs stage's pairs written as they are found: sorted runs on disk, one pair per two articles by a merge.

The miners (entity graph, cross-language dense, same-language hybrid) hand every pair to ``PairRuns.add`` with a
rank, as a plain row (``construct/pair_rows.py``'s ``PairRow``, no pydantic record), or many at once as an Arrow
table (``add_table``: the entity graph's pairs, made from the miner's arrays): where the same two articles were
found more than once (an entity-graph pair the hybrid found too), the first in (rank, order found) is kept, the
rule of the stage when it held every pair in one list in rank order.

Memory: ``run_rows`` pairs are buffered; a full buffer becomes one Arrow table of the stage's record schema
(a ``pa.array`` per column of the rows, checked for what ``ArticlePair`` refuses: ``pair_rows.pair_columns``) plus
(rank, order found) as one int64, sorted by (article_a, article_b, rank, order) in Arrow, its own repeats dropped,
and written as one Arrow run to ``folder`` (the stage's scratch folder, cleared by the next run and by the commit). ``unique`` merges the runs a record batch per
run at a time: every run's rows up to the smallest last pair any run has read are final; they are sorted together
(Arrow) and handed out as one table, so no pair becomes a Python object again and the stage writer takes the
tables as they are (``ShardWriter.add_table``). A stage whose pairs fit in one buffer never touches the disk.
"""
from __future__ import annotations

import shutil
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from babelrag.construct.pair_rows import PairRow, check_pairs, pair_columns
from babelrag.parquet_io import arrow_schema
from babelrag.records import ArticlePair

#: pairs buffered before a sorted run is written
RUN_ROWS = 10_000
_BATCH = 2048  # rows per record batch in a run file (what the merge holds per run)
_ORDER_BITS = 40  # (rank, order found) as one int64: rank << 40 | order
_RANK_ORDER = "_rank_order"
_SORT = [("article_a", "ascending"), ("article_b", "ascending"), (_RANK_ORDER, "ascending")]


class PairRuns:
    """Pairs in sorted runs; ``unique()`` gives each pair of articles once, the first found by rank."""

    def __init__(self, folder: Path, run_rows: int | None = None) -> None:
        self.folder = folder
        self.run_rows = run_rows or RUN_ROWS
        self.added: Counter[str] = Counter()  # pairs handed in, per method
        self.duplicates = 0  # pairs left out by unique(): the same two articles found before
        self._buffer: list[PairRow] = []  # rows not in a table yet
        self._ranks: list[int] = []
        self._tables: list[Any] = []  # buffered tables with their (rank, order): rows before them, ``add_table``'s
        self._buffered = 0  # rows buffered, in rows and tables
        self._runs: list[Path] = []
        self._order = 0  # pairs handed in before the buffer's rows
        self._schema = arrow_schema(ArticlePair)

    @property
    def runs(self) -> int:
        """Runs written to disk so far (0: everything is still in the buffer)."""
        return len(self._runs)

    def add(self, pair: PairRow, rank: int) -> None:
        """One pair (a ``PairRow``) found with this rank."""
        self._buffer.append(pair)
        self._ranks.append(rank)
        self.added[pair.method] += 1
        self._buffered += 1
        if self._buffered >= self.run_rows:
            self._spill()

    def adder(self, rank: int) -> Callable[[PairRow], None]:
        """``add`` with this rank, for a miner that hands out pairs one at a time."""
        return lambda pair: self.add(pair, rank)

    def add_table(self, table: Any, rank: int) -> None:
        """Pairs as an Arrow table of ``ArticlePair``'s schema, found with this rank, in its row order (checked as
        ``add``'s rows are: ``pair_rows.check_pairs``)."""
        if not table.num_rows:
            return
        check_pairs(table)
        self._rows_to_table()  # the rows handed in before it come first in the order found
        self._tables.append(self._with_rank_order(table.select(self._schema.names).cast(self._schema),
                                                  np.full(table.num_rows, rank, dtype=np.int64)))
        for method, n in zip(*np.unique(table.column("method").to_numpy(zero_copy_only=False), return_counts=True)):
            self.added[str(method)] += int(n)
        self._buffered += table.num_rows
        if self._buffered >= self.run_rows:
            self._spill()

    def unique(self) -> Iterator[Any]:
        """Every pair handed in as Arrow tables of ``ArticlePair``'s schema, in (article_a, article_b) order,
        the first by (rank, order) where two articles were paired more than once (the others are counted in
        ``duplicates``)."""
        if not self._runs:
            table = self._sorted_table()
            if table.num_rows:
                yield table.select(self._schema.names)
            return
        self._spill()
        runs = [_RunReader(path) for path in self._runs]
        try:
            while True:
                for run in runs:
                    run.fill()
                pending = [run for run in runs if run.left]
                if not pending:
                    return
                # nothing a run has not read yet sorts before the smallest last pair read: all up to it is final
                unread = [run.last_key for run in pending if run.more]
                upto = min(unread) if unread else None
                table = _concat([run.take_upto(upto) for run in pending])
                table = self._first_per_pair(table)
                if table.num_rows:
                    yield table.select(self._schema.names)
        finally:
            for run in runs:
                run.close()

    def close(self) -> None:
        """Remove the runs (the folder is the stage's scratch folder)."""
        self._buffer, self._ranks, self._tables, self._runs, self._buffered = [], [], [], [], 0
        shutil.rmtree(self.folder, ignore_errors=True)

    def _spill(self) -> None:
        if not self._buffered:
            return
        import pyarrow as pa

        table = self._sorted_table()
        path = self.folder / f"run-{len(self._runs) + 1:06d}.arrow"
        self.folder.mkdir(parents=True, exist_ok=True)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=_BATCH)
        self._runs.append(path)

    def _sorted_table(self) -> Any:
        """The buffer as one table with its (rank, order), sorted, one row per pair of articles; the buffer emptied."""
        import pyarrow as pa

        self._rows_to_table()
        tables, self._tables, self._buffered = self._tables, [], 0
        if not tables:
            return pa.Table.from_arrays(
                pair_columns([], self._schema) + [pa.array([], type=pa.int64())],
                schema=self._schema.append(pa.field(_RANK_ORDER, pa.int64())))
        return self._first_per_pair(_concat(tables))

    def _rows_to_table(self) -> None:
        """The buffered rows as one table with their (rank, order), after the tables before them."""
        import pyarrow as pa

        if not self._buffer:
            return
        rows, ranks = self._buffer, self._ranks
        self._buffer, self._ranks = [], []
        table = pa.Table.from_arrays(pair_columns(rows, self._schema), schema=self._schema)
        self._tables.append(self._with_rank_order(table, np.asarray(ranks, dtype=np.int64)))

    def _with_rank_order(self, table: Any, ranks: np.ndarray) -> Any:
        """``table`` with the column (rank, order found): its rows are the next handed in."""
        import pyarrow as pa

        order = np.arange(self._order, self._order + table.num_rows, dtype=np.int64)
        self._order += table.num_rows
        return table.append_column(pa.field(_RANK_ORDER, pa.int64()), pa.array((ranks << _ORDER_BITS) | order))

    def _first_per_pair(self, table: Any) -> Any:
        """``table`` sorted by (article_a, article_b, rank and order), the first row of each pair (the rest counted)."""
        import pyarrow.compute as pc

        if table.num_rows < 2:
            return table
        table = table.take(pc.sort_indices(table, sort_keys=_SORT))
        a, b = table.column("article_a"), table.column("article_b")
        n = table.num_rows
        repeat = pc.and_(pc.equal(a.slice(1), a.slice(0, n - 1)), pc.equal(b.slice(1), b.slice(0, n - 1)))
        first = np.ones(n, dtype=bool)
        first[1:] = ~repeat.to_numpy(zero_copy_only=False)
        self.duplicates += int(n - first.sum())
        return table.filter(first)


def _concat(tables: list[Any]) -> Any:
    import pyarrow as pa

    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


class _RunReader:
    """One run file read a record batch at a time, with a cursor into the batch."""

    def __init__(self, path: Path) -> None:
        import pyarrow as pa

        self._source = pa.memory_map(str(path))
        self._reader = pa.ipc.open_file(self._source)
        self._next = 0
        self._batch: Any = None
        self._keys: list[tuple[str, str]] = []  # the batch's (article_a, article_b)
        self._at = 0

    @property
    def more(self) -> bool:
        """Batches not read yet."""
        return self._next < self._reader.num_record_batches

    @property
    def left(self) -> int:
        """Rows read and not yet handed out."""
        return len(self._keys) - self._at

    @property
    def last_key(self) -> tuple[str, str]:
        return self._keys[-1]

    def fill(self) -> None:
        """Read the next batch where every row read was handed out."""
        while not self.left and self.more:
            self._batch = self._reader.get_batch(self._next)
            self._next += 1
            self._keys = list(zip(self._batch.column("article_a").to_pylist(),
                                  self._batch.column("article_b").to_pylist()))
            self._at = 0

    def take_upto(self, key: tuple[str, str] | None) -> Any:
        """The rows read whose pair is ``key`` or before it (None: all)."""
        import pyarrow as pa

        end = len(self._keys) if key is None else bisect_right(self._keys, key, self._at)
        rows = pa.Table.from_batches([self._batch.slice(self._at, end - self._at)])
        self._at = end
        return rows

    def close(self) -> None:
        self._batch, self._keys = None, []
        self._source.close()


__all__ = ["PairRuns", "RUN_ROWS"]
