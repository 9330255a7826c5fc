"""The index entries mining reads (id, language, day, fresh), held as columns rather than one object per article.

The pairs and distractors stages look articles up by id for the whole stage; at a million articles a dict of
``Doc`` objects cost ~110 bytes an article besides the id itself (issue 34: the stage's peak grew with the
corpus). ``DocTable`` keeps the ids sorted in one list (bisected; the same string objects the exact search's
columns point at), the day and a fresh flag in ``array`` columns and the language as a one-byte code: ~18 bytes an
article. It answers the ``Mapping`` calls the miners made on the dict (``docs[id]``, ``id in docs``, ``items()``),
building a ``Doc`` only when one is asked for, and gives the columns to those that work on rows.
"""
from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(slots=True)
class Doc:
    """An index entry as mining reads it (built on demand from a ``DocTable`` row: no instance dict)."""

    id: str
    language: str
    day: int  # Article.day: UNDATED_DAY when the article has no date for windows
    fresh: bool = True  # the day is a real publication date (distractors' freshness trusts only these)


class DocTable(Mapping[str, Doc]):
    """Index entries by id, as sorted columns: ``ids`` (str, sorted), ``days`` (int64), language codes into
    ``names`` and fresh flags; row ``r`` is the ``r``-th id in sorted order."""

    #: the index stage's columns a table is built from (``from_columns``)
    COLUMNS = ("id", "language", "day", "fresh")

    def __init__(self, entries: Iterable[Doc]) -> None:
        ids: list[str] = []
        days, codes, fresh = array("q"), array("B"), array("B")
        code: dict[str, int] = {}
        for e in entries:
            ids.append(e.id)
            days.append(e.day)
            codes.append(code.setdefault(e.language, len(code)))
            fresh.append(bool(e.fresh))
        self._fill(ids, days, codes, code, fresh)

    @classmethod
    def from_columns(cls, batches: Iterable[Any]) -> DocTable:
        """The table of Arrow record batches with ``COLUMNS`` (the index stage's records, from
        ``StageContext.read_columns``): the same table as from the entries, built a batch at a time with no object
        per entry but the id string."""
        import pyarrow.compute as pc

        ids: list[str] = []
        days, codes, fresh = array("q"), array("B"), array("B")
        code: dict[str, int] = {}
        for batch in batches:
            ids.extend(batch.column("id").to_pylist())
            days.frombytes(np.asarray(batch.column("day").to_numpy(zero_copy_only=False), dtype=np.int64).tobytes())
            languages = pc.dictionary_encode(batch.column("language"))  # codes in order of first appearance
            to_code = np.array([code.setdefault(x, len(code)) for x in languages.dictionary.to_pylist()],
                               dtype=np.uint8)
            codes.frombytes(to_code[languages.indices.to_numpy(zero_copy_only=False)].tobytes())
            flags = pc.fill_null(batch.column("fresh"), True).to_numpy(zero_copy_only=False)
            fresh.frombytes(np.asarray(flags, dtype=np.uint8).tobytes())
        table = cls.__new__(cls)
        table._fill(ids, days, codes, code, fresh)
        return table

    def _fill(self, ids: list[str], days: array, codes: array, code: dict[str, int], fresh: array) -> None:
        """The sorted columns from the entries' columns in input order (``code``: language -> its code)."""
        # one string per language, not one per article
        self.names: list[str] = [sys.intern(x) for x in sorted(code, key=code.__getitem__)]
        column = np.asarray(ids, dtype=object)
        if len(ids) < 2 or bool((column[1:] > column[:-1]).all()):  # the index's own order: sorted, no repeats
            self.ids: list[str] = ids
            self.days, self.codes, self.fresh = days, codes, fresh
            return
        order = np.argsort(column, kind="stable")
        # a repeated id: the last entry wins, as in the dict this replaces
        sorted_ids = column[order]
        order = order[np.append(sorted_ids[1:] != sorted_ids[:-1], True).astype(bool)]
        del column, sorted_ids
        self.ids = [ids[r] for r in order.tolist()]
        self.days = array("q", np.frombuffer(days, dtype=np.int64)[order].tobytes())
        self.codes = array("B", np.frombuffer(codes, dtype=np.uint8)[order].tobytes())
        self.fresh = array("B", np.frombuffer(fresh, dtype=np.uint8)[order].tobytes())

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def row(self, article: str) -> int:
        """The row of ``article``, -1 where it is no entry."""
        k = bisect_left(self.ids, article)
        return k if k < len(self.ids) and self.ids[k] == article else -1

    def __contains__(self, article: object) -> bool:
        return isinstance(article, str) and self.row(article) >= 0

    def __getitem__(self, article: str) -> Doc:
        r = self.row(article)
        if r < 0:
            raise KeyError(article)
        return self.doc(r)

    def doc(self, row: int) -> Doc:
        return Doc(self.ids[row], self.names[self.codes[row]], self.days[row], bool(self.fresh[row]))

    def values(self) -> Iterator[Doc]:  # type: ignore[override]
        return (self.doc(r) for r in range(len(self.ids)))

    def items(self) -> Iterator[tuple[str, Doc]]:  # type: ignore[override]
        return ((i, self.doc(r)) for r, i in enumerate(self.ids))

    def language_column(self) -> list[str]:
        """Each row's language (the shared name strings)."""
        return [self.names[c] for c in self.codes]

    def language_rows(self, language: str) -> np.ndarray:
        """The rows of ``language`` in (day, id) order: the order mining queries them in."""
        if language not in self.names:
            return np.zeros(0, dtype=np.int64)
        rows = np.flatnonzero(np.frombuffer(self.codes, dtype=np.uint8) == self.names.index(language))
        return rows[np.argsort(np.frombuffer(self.days, dtype=np.int64)[rows], kind="stable")]

    def rows_not_in(self, language: str) -> np.ndarray:
        """The rows of every other language, in id order."""
        codes = np.frombuffer(self.codes, dtype=np.uint8)
        if language not in self.names:
            return np.arange(len(codes))
        return np.flatnonzero(codes != self.names.index(language))


class RowValues:
    """A float per entry of a ``DocTable`` (unset: NaN), by article id (``[]``, ``in``): 8 bytes an article where a
    dict of floats took ~60 (the CSLS densities of construct/samelang.py)."""

    def __init__(self, docs: DocTable) -> None:
        self.docs = docs
        self.values = array("d", [float("nan")]) * len(docs)

    def __contains__(self, article: object) -> bool:
        r = self.docs.row(article) if isinstance(article, str) else -1
        return r >= 0 and self.values[r] == self.values[r]

    def __getitem__(self, article: str) -> float:
        r = self.docs.row(article)
        value = self.values[r] if r >= 0 else float("nan")
        if value != value:
            raise KeyError(article)
        return value

    def __setitem__(self, article: str, value: float) -> None:
        r = self.docs.row(article)
        if r < 0:
            raise KeyError(article)
        self.values[r] = value


__all__ = ["Doc", "DocTable", "RowValues"]
