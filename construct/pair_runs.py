"""The pairs stage's pairs written as they are found: sorted runs on disk, one pair per two articles by a merge.

The miners (entity graph, cross-language dense, same-language hybrid) hand every pair to ``PairRuns.add`` with a
rank: where the same two articles were found more than once (an entity-graph pair the hybrid found too), the
first in (rank, order found) is kept, the rule of the stage when it held every pair in one list in rank order.
Memory: ``run_rows`` pairs are buffered; a full buffer is sorted by (article_a, article_b, rank, order) and
written as one Arrow run to ``folder`` (the stage's scratch folder, cleared by the next run and by the commit),
and ``unique`` merges the runs holding one record batch per run. A stage whose pairs fit in one buffer never
touches the disk.
"""
from __future__ import annotations

import heapq
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from babelrag.parquet_io import arrow_schema
from babelrag.records import ArticlePair

#: pairs buffered before a sorted run is written (~1 KB each as records)
RUN_ROWS = 10_000
_BATCH = 2048  # rows per record batch in a run file (what the merge holds per run)

_Key = tuple[str, str, int, int]  # (article_a, article_b, rank, order found)


class PairRuns:
    """Pairs in sorted runs; ``unique()`` gives each pair of articles once, the first found by rank."""

    def __init__(self, folder: Path, run_rows: int | None = None) -> None:
        self.folder = folder
        self.run_rows = run_rows or RUN_ROWS
        self.added: Counter[str] = Counter()  # pairs handed in, per method
        self.duplicates = 0  # pairs left out by unique(): the same two articles found before
        self._buffer: list[tuple[_Key, ArticlePair]] = []
        self._runs: list[Path] = []
        self._order = 0
        self._schema: Any = None

    @property
    def runs(self) -> int:
        """Runs written to disk so far (0: everything is still in the buffer)."""
        return len(self._runs)

    def add(self, pair: ArticlePair, rank: int) -> None:
        self._buffer.append(((pair.article_a, pair.article_b, rank, self._order), pair))
        self._order += 1
        self.added[pair.method] += 1
        if len(self._buffer) >= self.run_rows:
            self._spill()

    def adder(self, rank: int) -> Callable[[ArticlePair], None]:
        """``add`` with this rank, for a miner that hands out pairs one at a time."""
        return lambda pair: self.add(pair, rank)

    def unique(self) -> Iterator[ArticlePair]:
        """Every pair handed in, in (article_a, article_b) order, the first by (rank, order) where two articles
        were paired more than once (the others are counted in ``duplicates``)."""
        if self._runs:
            self._spill()
            stream: Iterator[tuple[_Key, ArticlePair]] = heapq.merge(*(self._read(run) for run in self._runs))
        else:
            self._buffer.sort(key=lambda item: item[0])
            stream, self._buffer = iter(self._buffer), []
        last: tuple[str, str] | None = None
        for key, pair in stream:
            if key[:2] == last:
                self.duplicates += 1
                continue
            last = key[:2]
            yield pair

    def close(self) -> None:
        """Remove the runs (the folder is the stage's scratch folder)."""
        self._buffer, self._runs = [], []
        shutil.rmtree(self.folder, ignore_errors=True)

    def _spill(self) -> None:
        if not self._buffer:
            return
        import pyarrow as pa

        if self._schema is None:
            base = arrow_schema(ArticlePair)
            self._schema = base.append(pa.field("_rank", pa.int64())).append(pa.field("_order", pa.int64()))
        self._buffer.sort(key=lambda item: item[0])
        path = self.folder / f"run-{len(self._runs) + 1:06d}.arrow"
        self.folder.mkdir(parents=True, exist_ok=True)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, self._schema) as writer:
            for s in range(0, len(self._buffer), _BATCH):
                rows = [{**pair.model_dump(), "_rank": key[2], "_order": key[3]}
                        for key, pair in self._buffer[s:s + _BATCH]]
                writer.write_table(pa.Table.from_pylist(rows, schema=self._schema))
        self._runs.append(path)
        self._buffer = []

    @staticmethod
    def _read(path: Path) -> Iterator[tuple[_Key, ArticlePair]]:
        import pyarrow as pa

        with pa.memory_map(str(path)) as source:
            reader = pa.ipc.open_file(source)
            for b in range(reader.num_record_batches):
                for row in reader.get_batch(b).to_pylist():
                    key = (row["article_a"], row["article_b"], row.pop("_rank"), row.pop("_order"))
                    yield key, ArticlePair.model_validate(row)


__all__ = ["PairRuns", "RUN_ROWS"]
