"""The streaming stage commit: sorted shards k-way merged into records.parquet without loading them."""
import json
import random

import pyarrow.parquet as pq
import pytest

from babelrag import parquet_io, sorted_merge
from babelrag.config import config_from_dict
from babelrag.pipeline import Pipeline
from babelrag.records import Article, ErrorRecord
from babelrag.parquet_io import read_records
from babelrag.shards import ERRORS_FILE, RECORDS_FILE, ShardWriter
from babelrag.store import BuildStore
from tests.helpers.counting_stage import SPEC


@pytest.fixture
def small_groups(monkeypatch):
    """Tiny row groups and fan-in, so a few hundred records exercise multi-pass merges."""
    monkeypatch.setattr(parquet_io, "ROW_GROUP", 4)
    monkeypatch.setattr(sorted_merge, "MERGE_FAN_IN", 3)


def art(i: int, title: str = "") -> Article:
    return Article(id=f"a{i:04d}", title=title or f"T{i}", text="x " * (i % 13), language="en",
                   published="2026-08-01", title_entities=[f"e{i % 5}"] * (i % 3))


def write_items(folder, items, shard_size, fingerprint="fp"):
    """items: ("rec", Article, item_id) or ("err", item_id)."""
    writer = ShardWriter(folder, Article, fingerprint, shard_size=shard_size, flush_seconds=1e9)
    for kind, *rest in items:
        if kind == "rec":
            writer.add(rest[0], item_id=rest[1])
        else:
            writer.add_error(ErrorRecord(id=f"s:{rest[0]}", stage="s", item_id=rest[0], reason="r"))
    return writer


def make_items(seed=7, n=300):
    rng = random.Random(seed)
    order = list(range(n))
    rng.shuffle(order)
    items = []
    for i in order:
        if i % 11 == 0:
            items.append(("err", f"a{i:04d}"))
        else:
            items.append(("rec", art(i), f"item-{i}"))
    # the same record id written again later (distinct item ids): the latest version wins
    items += [("rec", art(5, "newer"), "again-5"), ("rec", art(250, "newer"), "again-250")]
    # an item that failed earlier and then succeeded counts as a success only
    items += [("rec", art(22, "retried"), "a0022")]
    return items


def expected(items):
    recs, errs = {}, {}
    for kind, *rest in items:
        if kind == "rec":
            recs[rest[0].id] = rest[0]
        else:
            errs[rest[0]] = rest[0]
    return [recs[k] for k in sorted(recs)], sorted(k for k in errs if k not in recs)


def test_merge_many_shards_is_sorted_deduplicated_and_independent_of_shard_size(tmp_path, small_groups):
    items = make_items()
    want_records, want_errors = expected(items)
    outputs = []
    for shard_size in (3, 17, 1000):
        folder, dest = tmp_path / f"partial-{shard_size}", tmp_path / f"out-{shard_size}"
        dest.mkdir()
        writer = write_items(folder, items, shard_size)
        n_out, n_err = writer.finish(dest)
        records = read_records(dest / RECORDS_FILE, Article)
        errors = read_records(dest / ERRORS_FILE, ErrorRecord)
        assert records == want_records
        assert [e.item_id for e in errors] == want_errors
        assert (n_out, n_err) == (len(want_records), len(want_errors))
        assert {r.title for r in records if r.id in ("a0005", "a0250")} == {"newer"}
        assert not (folder / "merge").exists(), "intermediate runs are removed"
        # fixed-size row groups: the file's layout depends on the rows only
        meta = pq.ParquetFile(dest / RECORDS_FILE).metadata
        assert all(meta.row_group(i).num_rows == 4 for i in range(meta.num_row_groups - 1))
        outputs.append(((dest / RECORDS_FILE).read_bytes(), (dest / ERRORS_FILE).read_bytes()))
    assert outputs[0] == outputs[1] == outputs[2], "byte-identical whatever the shard boundaries"


def test_merge_never_opens_more_than_fan_in_files(tmp_path, small_groups, monkeypatch):
    open_now, peak = [0], [0]
    real_init, real_next = sorted_merge._Run.__init__, sorted_merge._Run.next_batch

    def init(self, path, key):
        real_init(self, path, key)
        open_now[0] += 1
        peak[0] = max(peak[0], open_now[0])

    def next_batch(self):
        ok = real_next(self)
        if not ok:
            open_now[0] -= 1
        return ok

    monkeypatch.setattr(sorted_merge._Run, "__init__", init)
    monkeypatch.setattr(sorted_merge._Run, "next_batch", next_batch)
    items = make_items(n=200)
    writer = write_items(tmp_path / "p", items, shard_size=2)  # ~100 shards, 3-way merges
    dest = tmp_path / "out"
    dest.mkdir()
    assert len(list((tmp_path / "p").glob("shard-*.records.parquet"))) > 90
    writer.finish(dest)
    assert peak[0] <= 3
    assert read_records(dest / RECORDS_FILE, Article) == expected(items)[0]


def test_empty_stage_writes_empty_typed_files(tmp_path):
    writer = ShardWriter(tmp_path / "p", Article, "fp")
    dest = tmp_path / "out"
    dest.mkdir()
    assert writer.finish(dest) == (0, 0)
    assert pq.read_table(dest / RECORDS_FILE).num_rows == 0
    assert pq.read_table(dest / RECORDS_FILE).schema.field("title_entities").type.value_type == "string"


def test_resume_drops_orphan_error_shards_and_old_shard_formats(tmp_path):
    folder = tmp_path / "p"
    writer = write_items(folder, [("rec", art(1), "a0001"), ("err", "a0002")], shard_size=2)
    assert writer.has("a0002")
    # a run killed between the errors shard and its records shard (the commit point)
    (folder / "shard-000002.errors.parquet").write_bytes((folder / "shard-000001.errors.parquet").read_bytes())
    resumed = ShardWriter(folder, Article, "fp")
    assert not (folder / "shard-000002.errors.parquet").exists()
    assert resumed.resumed == 2 and resumed.has("a0001") and resumed.has("a0002")
    # shards written by an earlier layout (unsorted) are not reused
    (folder / "partial.json").write_text(json.dumps({"fingerprint": "fp"}))
    fresh = ShardWriter(folder, Article, "fp")
    assert fresh.resumed == 0 and not list(folder.glob("shard-*"))


def test_readers_stream_and_read_by_id(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTING_STAGE_N", "3000")
    cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "build")}})
    Pipeline(cfg, stages=(SPEC,)).run()
    store = BuildStore(cfg.build_dir)
    ids = [a.id for a in store.iter_read("count", Article, batch_size=100)]
    assert ids == sorted(ids) and len(ids) == 3000 - len([i for i in range(3000) if i % 7 == 3])
    assert len(store.load_dataset("count")) == len(ids)
    groups = pq.ParquetFile(store.stage_dir("count") / RECORDS_FILE).metadata.num_row_groups
    assert groups > 5
    reads = []
    real = pq.ParquetFile.read_row_group
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", lambda self, i, *a, **k: reads.append(i) or real(self, i, *a, **k))
    got = store.read_ids("count", Article, ["a00001", "a02998", "a00003", "nope"])
    assert sorted(got) == ["a00001", "a02998"]  # a00003 was an error, "nope" does not exist
    assert got["a02998"].title == "T2998"
    assert len(reads) <= 3, "only row groups whose id range can hold a wanted id are read"


def test_commit_from_an_iterable_keeps_working(tmp_path):
    """BuildStore.commit (used by fixtures) accepts any iterable of sorted records."""
    from babelrag.store import Manifest

    store = BuildStore(tmp_path / "b")
    staging = store.new_staging_dir("x")
    manifest = Manifest(stage="x", fingerprint="f", config_hash="c", inputs={})
    store.commit("x", staging, (art(i) for i in range(10)), Article, [], manifest)
    assert [a.id for a in store.read("x", Article)] == [f"a{i:04d}" for i in range(10)]
    assert store.read_errors("x") == []



@pytest.mark.parametrize("batch_bytes", [1, 200, 1 << 20])
@pytest.mark.parametrize("seed", range(6))
def test_merge_of_keys_repeated_across_row_groups_and_files_keeps_the_last_write(tmp_path, monkeypatch, seed,
                                                                                  batch_bytes):
    """Keys repeated many times in a file (runs longer than a row group, so a group can end on a key its next
    group repeats) and across files: the later file's row wins, within a file the later row; ``exclude`` drops
    keys. Checked against a dict written in file order, for the merge in one pass and in several."""
    import pyarrow as pa

    monkeypatch.setattr(parquet_io, "ROW_GROUP", 3)
    monkeypatch.setattr(sorted_merge, "MERGE_FAN_IN", 2 + seed % 3)
    monkeypatch.setattr(sorted_merge, "MERGE_BATCH_BYTES", batch_bytes)  # a row group, a few, the whole file
    rng = random.Random(seed)
    schema = pa.schema([("id", pa.string()), ("v", pa.int64())])
    paths, want = [], {}
    for f in range(rng.randint(1, 7)):
        keys = sorted(rng.choice("abcdefgh") + rng.choice("xy") * rng.randint(0, 1) for _ in range(rng.randint(0, 25)))
        rows = [{"id": k, "v": f * 1000 + n} for n, k in enumerate(keys)]
        for row in rows:
            want[row["id"]] = row["v"]
        path = tmp_path / f"f{f}.parquet"
        parquet_io.write_tables(path, schema, [pa.Table.from_pylist(rows, schema=schema)])
        paths.append(path)
    excluded = sorted(rng.sample(sorted(want) or ["a"], k=min(len(want), 3)))
    dest = tmp_path / "out.parquet"
    n = sorted_merge.merge_sorted_files(paths, dest, schema, "id", tmp_path / "work", exclude=iter(excluded))
    got = pq.read_table(dest).to_pylist()
    assert got == [{"id": k, "v": want[k]} for k in sorted(want) if k not in excluded]
    assert n == len(got)
