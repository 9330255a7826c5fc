"""Mined pairs as plain rows (construct/pair_rows.py): the stage's columns made from rows are the bytes pydantic
records gave, a row ArticlePair would refuse is refused with a message naming the pair and the field, and the
entity graph's pairs as tables are the records the stage made of them one by one."""
from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from pydantic import ValidationError

from babelrag.construct.graph import Incidence, mine_pairs
from babelrag.construct.pair_ids import pair_id
from babelrag.construct.pair_rows import METHODS, PairRow, PairRowError, pair_columns, pair_row, pair_table
from babelrag.construct.pair_runs import PairRuns
from babelrag.construct.pairs import EntityGraph, LanguageSlice
from babelrag.parquet_io import arrow_schema, write_records, write_tables
from babelrag.records import ArticlePair
from tests.helpers.mining_oracles import add_article

SCHEMA = arrow_schema(ArticlePair)


def _rows(n: int, seed: int = 0) -> list[PairRow]:
    rng = random.Random(seed)
    names = [f"art-{k}" for k in range(50)] + ["é-1", "a|b", "日本-3"]
    rows = []
    for _ in range(n):
        a, b = sorted(rng.sample(names, 2))
        method = rng.choice(METHODS)
        shared = sorted(rng.sample(["Berlin", "EU", "Merkel", "Ça"], rng.randint(0, 3)))
        rows.append(pair_row(method, a, b, rng.choice(["en", "de"]), rng.choice(["en", "ar"]), rng.uniform(-1, 2),
                             shared, rng.randint(-1, 14), rng.choice(["", "event-3"])))
    return rows


def test_rows_as_columns_write_the_bytes_of_the_records(tmp_path):
    """The parquet file of the rows' columns is byte for byte the file of the validated records (write_records,
    the stage's writer before rows): the constant columns (relevant, rationale, provenance) as ArticlePair's
    defaults write them."""
    rows = _rows(3000)
    write_records(tmp_path / "records.parquet", [ArticlePair(**r._asdict()) for r in rows], ArticlePair)
    table = pa.Table.from_arrays(pair_columns(rows, SCHEMA), schema=SCHEMA)
    write_tables(tmp_path / "rows.parquet", SCHEMA, [table])
    assert (tmp_path / "rows.parquet").read_bytes() == (tmp_path / "records.parquet").read_bytes()
    assert table.slice(7, 1).to_pylist()[0] == ArticlePair(**rows[7]._asdict()).model_dump()


GOOD = pair_row("dense", "de-1", "en-1", "de", "en", 0.9)


@pytest.mark.parametrize("change,field", [
    ({"method": "bm25"}, "method"),
    ({"score": "high"}, "score"),
    ({"article_a": None}, "article_a"),
    ({"article_b": ""}, "article_b"),
    ({"id": ""}, "id"),
    ({"language_a": 3}, "language_a"),
    ({"days_apart": 1.5}, "days_apart"),
    ({"shared_entities": ["EU", None]}, "shared_entities"),
    ({"event_id": None}, "event_id"),
])
def test_a_row_articlepair_refuses_is_refused_naming_the_pair_and_field(tmp_path, change, field):
    bad = GOOD._replace(**change)
    if field not in ("article_b", "id"):  # pydantic checks no emptiness: the rows also refuse empty ids
        with pytest.raises(ValidationError):
            ArticlePair(**bad._asdict())
    rows = [pair_row("dense", f"de-{n}", f"en-{n}", "de", "en", 0.5) for n in range(20)]
    rows.insert(11, bad)
    with pytest.raises(PairRowError, match=field) as err:
        pair_columns(rows, SCHEMA)
    assert repr(bad.id) in str(err.value) or field == "id"  # names the pair
    assert "not a valid ArticlePair" in str(err.value)
    runs = PairRuns(tmp_path / "runs", run_rows=5)  # the runs check what they are handed before a run is written
    with pytest.raises(PairRowError, match=field):
        for row in rows:
            runs.add(row, 2)


def test_a_table_with_a_bad_method_is_refused(tmp_path):
    table = pa.Table.from_arrays(pair_columns([GOOD], SCHEMA), schema=SCHEMA)
    bad = table.set_column(SCHEMA.get_field_index("method"), "method", pa.array(["graph"]))
    with pytest.raises(PairRowError, match="method is not one of entity_graph, dense, hybrid"):
        PairRuns(tmp_path / "runs").add_table(bad, 0)
    with pytest.raises(PairRowError, match="article_a is missing"):
        pair_table({"id": ["x"], "article_a": [None], "article_b": ["b"], "language_a": ["en"],
                    "language_b": ["en"], "method": ["dense"], "score": [0.1]}, SCHEMA)


def test_tables_and_rows_handed_in_keep_their_order_found(tmp_path):
    """Pairs handed as a table and as rows, in one rank: the first handed in is kept, whichever form it came in."""
    same = [pair_row("hybrid", "a", "b", "en", "en", s) for s in (0.1, 0.2, 0.3)]
    for first in ("row", "table"):
        runs = PairRuns(tmp_path / first, run_rows=10)
        table = pa.Table.from_arrays(pair_columns([same[1]], SCHEMA), schema=SCHEMA)
        if first == "row":
            runs.add(same[0], 1)
            runs.add_table(table, 1)
        else:
            runs.add_table(table, 1)
            runs.add(same[0], 1)
        runs.add(same[2], 2)  # a later rank: left out
        kept = [r for t in runs.unique() for r in t.to_pylist()]
        assert [r["score"] for r in kept] == [0.1 if first == "row" else 0.2]
        assert runs.duplicates == 2 and runs.added["hybrid"] == 3
        runs.close()


def test_entity_graph_tables_are_the_records_made_one_by_one():
    """The graph's pairs as tables (ids ordered and pair ids made over columns) hold the records the stage made
    per pair: the two ids in order, the shared entities' names sorted, the score rounded, the days apart."""
    rng = np.random.default_rng(5)
    sl = LanguageSlice()
    ents = ["Berlin", "EU", "Merkel", "Paris", "Ça", "Zürich"]
    ids = [f"en-{rng.integers(10**6)}-{n}" for n in range(300)]
    for n, art_id in enumerate(ids):
        add_article(sl, SimpleNamespace(id=art_id, day=int(rng.integers(0, 30)),
                               title_entities=list(rng.choice(ents, size=int(rng.integers(1, 4)), replace=False))))
    mined = mine_pairs(np.frombuffer(sl.days, dtype=np.int64), sl.incidence(), k=2, max_days=14, hub_policy="none")
    assert len(mined) > 1000
    names = {v: k for k, v in sl.vocab.items()}
    want = []
    for i, j, score, d in zip(mined.i.tolist(), mined.j.tolist(), mined.score.tolist(), mined.days.tolist()):
        a, b = sorted((sl.ids[i], sl.ids[j]))
        shared = sorted(names[e] for e in set(sl.entity_ids(i)) & set(sl.entity_ids(j)))
        want.append(ArticlePair(id=pair_id("entity_graph", a, b), article_a=a, article_b=b, language_a="en",
                                language_b="en", method="entity_graph", score=round(float(score), 6),
                                shared_entities=shared, days_apart=int(d)).model_dump())
    graph = EntityGraph("en", sl, mined)
    tables = list(graph.tables(size=256))
    assert len(tables) == -(-len(mined) // 256)
    assert [r for t in tables for r in t.to_pylist()] == want
    assert [ArticlePair(**r._asdict()).model_dump() for r in graph.rows()] == want
