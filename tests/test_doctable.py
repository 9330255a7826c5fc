"""The index entries mining holds for the whole pairs stage (``DocTable``, issue 34): the same answers as the dict
of ``Doc`` objects it replaced, in columns whose size per article is a few numbers, not objects."""
from __future__ import annotations

import random
import tracemalloc

import numpy as np
import pytest

from babelrag.construct.doctable import Doc, DocTable, RowValues
from babelrag.records import UNDATED_DAY


def entries(n, seed=0):
    rng = random.Random(seed)
    out = [Doc(f"art-{rng.randrange(10**9):09d}", rng.choice(["en", "de", "ar"]), rng.choice([rng.randrange(400),
               UNDATED_DAY]), rng.random() < 0.8) for _ in range(n)]
    out.append(Doc(out[5].id, "ar", 7, False))  # a repeated id: the later entry wins, as in a dict
    return out


def test_the_table_answers_what_the_dict_answered():
    docs = entries(3000)
    want = {d.id: d for d in docs}
    table = DocTable(docs)
    assert len(table) == len(want) and table.ids == sorted(want)
    assert dict(table.items()) == want and list(table.values()) == [want[i] for i in sorted(want)]
    assert all(table[i] == want[i] and i in table for i in want)
    assert table[docs[5].id] == Doc(docs[5].id, "ar", 7, False)
    assert "nobody" not in table and table.get("nobody") is None and 3 not in table
    with pytest.raises(KeyError):
        table["nobody"]
    assert all(type(table[i].day) is int and type(table[i].fresh) is bool for i in list(want)[:50])
    for lang in ("en", "de", "ar", "xx"):  # the order the miners query a language in: (day, id)
        assert [table.ids[r] for r in table.language_rows(lang)] == sorted(
            (i for i, d in want.items() if d.language == lang), key=lambda i: (want[i].day, i))
        assert [table.ids[r] for r in table.rows_not_in(lang)] == sorted(i for i, d in want.items() if d.language != lang)
    assert table.language_column() == [want[i].language for i in table.ids]
    assert len(DocTable([])) == 0 and not DocTable([]).language_rows("en").size


def test_row_values_hold_a_float_per_entry():
    table = DocTable(entries(50))
    values = RowValues(table)
    a, b = table.ids[3], table.ids[40]
    values[a] = 0.25
    assert a in values and b not in values and "nobody" not in values and values[a] == 0.25
    with pytest.raises(KeyError):
        values[b]
    with pytest.raises(KeyError):
        values["nobody"] = 1.0


def _held(build):
    """Bytes still allocated after ``build()`` (its result kept), traced."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        return tracemalloc.get_traced_memory()[0] - before, kept
    finally:
        tracemalloc.stop()


def test_the_table_holds_a_few_bytes_an_article_besides_the_ids():
    n = 40_000
    ids = [f"a{i:07d}" for i in range(n)]  # the id strings exist already (read from the index, shared)
    days = np.random.default_rng(1).integers(0, 180, size=n).tolist()

    def stream():
        return (Doc(i, "en" if k % 2 else "de", days[k], True) for k, i in enumerate(ids))

    table_bytes, table = _held(lambda: DocTable(stream()))
    dict_bytes, as_dict = _held(lambda: {d.id: d for d in stream()})
    assert len(table) == len(as_dict) == n
    # the list of ids (8), day (8), language code and fresh flag (1 + 1): ~18 bytes an article, against the
    # dict entry and a Doc object per article (~110)
    assert table_bytes / n < 24, table_bytes / n
    assert dict_bytes / n > 4 * table_bytes / n


def test_entries_in_id_order_are_kept_as_they_are_and_a_repeat_still_resolves():
    """The index's records come sorted by id (no sort needed); a repeated id among sorted ones: the later entry wins."""
    docs = [Doc("a", "en", 3), Doc("b", "de", 4, False), Doc("c", "en", 5)]
    table = DocTable(docs)
    assert table.ids == ["a", "b", "c"] and list(table.values()) == docs
    repeated = DocTable([docs[0], docs[1], Doc("b", "ar", 9), docs[2]])
    assert repeated.ids == ["a", "b", "c"] and repeated["b"] == Doc("b", "ar", 9)
    assert repeated.language_rows("ar").tolist() == [1] and repeated.language_rows("de").size == 0
