"""The stage writer's columnar side: records handed over as Arrow tables (``ShardWriter.add_table``, the pairs stage)
give the bytes the same records give one by one, and the ids it remembers for ``has`` are compact sorted bytes
(``StoredIds``) that answer like a set."""
from __future__ import annotations

import random
import tracemalloc

import pyarrow as pa

from babelrag.parquet_io import arrow_schema
from babelrag.records import ArticlePair, ErrorRecord
from babelrag.shards import RECORDS_FILE, ShardWriter, StoredIds


def _pairs(n: int, seed: int = 3) -> list[ArticlePair]:
    rng = random.Random(seed)
    out = []
    for i in rng.sample(range(n), n):
        out.append(ArticlePair(id=f"xl:a{i:05d}|b{i % 97:03d}", article_a=f"a{i:05d}", article_b=f"b{i % 97:03d}",
                               language_a="de", language_b="en", method="dense", score=rng.random(),
                               shared_entities=["Bonn"] * (i % 3), days_apart=i % 15,
                               relevant=None if i % 4 else bool(i % 8), rationale="é" * (i % 2)))
    return out


def test_tables_and_records_give_the_same_bytes(tmp_path):
    pairs = _pairs(900)
    one_by_one = ShardWriter(tmp_path / "p1", ArticlePair, "fp", shard_size=128, flush_seconds=1e9)
    for p in pairs:
        one_by_one.add(p)
    (tmp_path / "o1").mkdir()
    assert one_by_one.finish(tmp_path / "o1") == (900, 0)
    schema = arrow_schema(ArticlePair)
    as_tables = ShardWriter(tmp_path / "p2", ArticlePair, "fp", shard_size=128, flush_seconds=1e9)
    for s in range(0, 600, 77):  # tables of any size, a few records between them, an error
        as_tables.add_table(pa.Table.from_pylist([p.model_dump() for p in pairs[s:min(s + 77, 600)]], schema=schema))
    for p in pairs[600:]:
        as_tables.add(p)
    as_tables.add_error(ErrorRecord(id="pairs:zz", stage="pairs", item_id="zz", reason="r"))
    assert as_tables.has(pairs[5].id) and as_tables.has(pairs[700].id) and not as_tables.has("xl:nothing")
    (tmp_path / "o2").mkdir()
    assert as_tables.finish(tmp_path / "o2") == (900, 1)
    assert (tmp_path / "o2" / RECORDS_FILE).read_bytes() == (tmp_path / "o1" / RECORDS_FILE).read_bytes()
    # a resumed writer knows every id its shards hold
    again = ShardWriter(tmp_path / "p2", ArticlePair, "fp")
    assert again.resumed == 901 and all(again.has(p.id) for p in pairs) and again.has("zz")


def test_stored_ids_answer_like_a_set():
    rng = random.Random(5)
    words = ["", "a", "ab", "abc", "b", "ü", "üb", "x" * 40, "a\u20acb"] + [f"id-{rng.random()}" for _ in range(3000)]
    ids, kept = StoredIds(), set()
    for n, word in enumerate(words * 2):
        if rng.random() < 0.5:
            ids.add(word)
            kept.add(word)
        if n % 97 == 0:
            ids.freeze()
    for word in words + ["abcd", "c", "ü2", "x" * 41, "x" * 39]:
        assert (word in ids) == (word in kept), word
    assert len(ids) == len(kept)
    ids.freeze()
    assert len(ids) == len(kept) and all(w in ids for w in kept)


def test_the_writer_keeps_written_ids_as_bytes_not_strings(tmp_path):
    """Memory the writer holds for 20,000 written pair ids: under 40 bytes an id (a set of str: ~90)."""
    writer = ShardWriter(tmp_path / "p", ArticlePair, "fp", shard_size=1000, flush_seconds=1e9)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(20_000):
            writer.add(ArticlePair(id=f"xl:a{i:07d}|b{i:07d}", article_a=f"a{i:07d}", article_b=f"b{i:07d}",
                                   language_a="de", language_b="en", method="dense"))
        writer.flush()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert writer.stored == 20_000 and writer.has("xl:a0000007|b0000007")
    assert held / 20_000 < 40, held / 20_000
