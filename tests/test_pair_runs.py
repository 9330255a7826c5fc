"""The pairs stage writes its pairs as it finds them (construct/pair_runs.py): sorted runs on disk, the first pair
per two articles kept by a merge. The runs give the bytes the in-memory path gives, and a run killed while
spilling leaves no output and is finished by a plain re-run."""
from __future__ import annotations

from pathlib import Path

import pytest

from babelrag.config import config_from_dict
from babelrag.construct import pair_runs
from babelrag.construct.pair_rows import PairRow, pair_row
from babelrag.construct.pair_runs import PairRuns
from babelrag.pipeline import Pipeline
from babelrag.records import ArticlePair
from babelrag.shards import RECORDS_FILE
from babelrag.store import BuildStore

SAMPLE = Path(__file__).resolve().parents[1] / "babelrag" / "data" / "sample"


def _pair(method: str, a: str, b: str, score: float) -> PairRow:
    return pair_row(method, a, b, "en", "en", score, ["X"] if method == "entity_graph" else [])


def _record(row: PairRow) -> ArticlePair:
    """The record the stage made of a pair before it handed rows (validated by pydantic)."""
    return ArticlePair(**row._asdict())


def _found() -> list[tuple[PairRow, int]]:
    """(pair, rank) as the miners hand them: a dense pair of two articles found before their entity-graph pair
    (which outranks it), a pair found twice by one method, and pairs in no sorted order."""
    out = []
    for n in range(40, 0, -1):
        out.append((_pair("hybrid", f"a{n:02d}", f"b{n:02d}", n / 100), 2))
    for n in range(0, 40, 3):
        out.append((_pair("entity_graph", f"a{n:02d}", f"b{n:02d}", 1.0), 1))
    out.append((_pair("entity_graph", "a06", "b06", 0.5), 1))  # found again, later: the first stays
    out.append((_pair("entity_graph", "a00", "c00", 1.0), 0))
    return out


def _unique(tmp_path: Path, run_rows: int) -> tuple[list[ArticlePair], int, int]:
    runs = PairRuns(tmp_path / f"runs-{run_rows}", run_rows=run_rows)
    for pair, rank in _found():
        runs.add(pair, rank)
    kept = [ArticlePair.model_validate(row) for table in runs.unique() for row in table.to_pylist()]
    n_runs = runs.runs
    runs.close()
    assert not (tmp_path / f"runs-{run_rows}").exists()
    return kept, runs.duplicates, n_runs


def test_runs_on_disk_keep_what_one_buffer_keeps(tmp_path):
    in_memory, dup_memory, no_runs = _unique(tmp_path, 10_000)
    spilled, dup_spilled, several = _unique(tmp_path, 4)
    assert no_runs == 0 and several > 5
    assert [p.model_dump() for p in spilled] == [p.model_dump() for p in in_memory]
    assert dup_spilled == dup_memory == 13 + 1  # 13 article pairs found by both methods, a06-b06 twice by one
    keys = [(p.article_a, p.article_b) for p in in_memory]
    assert keys == sorted(set(keys))
    # the rule of one list in rank order: the first found of the best rank, whatever the runs
    first: dict[tuple[str, str], ArticlePair] = {}
    for pair, _ in sorted(_found(), key=lambda found: found[1]):
        first.setdefault((pair.article_a, pair.article_b), _record(pair))
    assert sorted(p.model_dump_json() for p in in_memory) == sorted(p.model_dump_json() for p in first.values())
    by_key = {(p.article_a, p.article_b): p for p in in_memory}
    assert by_key[("a03", "b03")].method == "entity_graph"  # found after the hybrid pair, ranked before it
    assert by_key[("a06", "b06")].score == 1.0  # the first of one method's two
    assert by_key[("a04", "b04")].method == "hybrid"


def _config(build: Path) -> dict:
    from babelrag.demo import SAMPLE_PAIR_SIMILARITY

    return {"project": {"build_dir": str(build)},
            "corpus": {"inputs": [{"path": str(SAMPLE / "articles.jsonl"), "format": "jsonl"}]},
            "dense": {"queries": "articles", "min_pair_similarity": SAMPLE_PAIR_SIMILARITY}}


class Killed(Exception):
    """Stands for the process dying while the stage spills its runs."""


@pytest.mark.skipif(not (SAMPLE / "articles.jsonl").exists(), reason="sample corpus missing")
def test_spilled_runs_give_the_in_memory_bytes_and_a_killed_run_leaves_no_output(tmp_path, monkeypatch):
    raw = _config(tmp_path / "b")
    Pipeline(config_from_dict(raw)).run(until="index")
    store = BuildStore(tmp_path / "b")
    # a run that dies at its third spilled run: no pairs output, its runs left in the unfinished-run folder
    monkeypatch.setattr(pair_runs, "RUN_ROWS", 3)
    spill = PairRuns._spill

    def dying_spill(self):
        if len(self._runs) == 2:
            raise Killed()
        spill(self)

    monkeypatch.setattr(PairRuns, "_spill", dying_spill)
    with pytest.raises(Killed):
        Pipeline(config_from_dict(raw)).run(until="pairs")
    assert not (store.stage_dir("pairs") / RECORDS_FILE).exists() and store.manifest("pairs") is None
    runs = store.partial_dir("pairs") / "pair-runs"
    assert not runs.exists()  # an error removes its runs; a kill -9 leaves them, half-written maybe:
    runs.mkdir(parents=True)
    (runs / "run-000001.arrow").write_bytes(b"half a run")
    # a plain re-run finishes (the killed run's leftovers are not read), spilling many runs
    monkeypatch.setattr(PairRuns, "_spill", spill)
    Pipeline(config_from_dict(raw)).run(until="pairs")
    spilled = (store.stage_dir("pairs") / RECORDS_FILE).read_bytes()
    manifest = store.manifest("pairs")
    assert manifest.extra["pair_runs"] > 10, manifest.extra
    assert manifest.counts["skipped"].get("duplicate-pair", 0) > 0, manifest.counts  # the merge dropped some
    assert not store.partial_dir("pairs").exists()  # the runs went with the commit
    # the same stage with every pair in one buffer (the default size): the same bytes
    monkeypatch.setattr(pair_runs, "RUN_ROWS", 1_000_000)
    Pipeline(config_from_dict(raw)).run(until="pairs", force=["pairs"])
    again = store.manifest("pairs")
    assert "pair_runs" not in again.extra
    assert (store.stage_dir("pairs") / RECORDS_FILE).read_bytes() == spilled
    assert again.output_fingerprint == manifest.output_fingerprint
    assert again.counts["skipped"] == manifest.counts["skipped"] and again.counts["out"] == manifest.counts["out"]


@pytest.mark.parametrize("run_rows,batch", [(97, 5), (1000, 7), (100_000, 2048)])
def test_merge_of_many_runs_read_a_few_rows_at_a_time_keeps_the_first_by_rank(tmp_path, monkeypatch, run_rows, batch):
    """Random pairs among few articles (most found several times, by several methods), runs read back a few rows
    per batch: the merge hands out what one list in rank order keeps, each pair of articles once."""
    import random

    monkeypatch.setattr(pair_runs, "_BATCH", batch)
    rng = random.Random(run_rows)
    names = [f"art-{n}" for n in range(40)] + ["é-1", "z", "a|b"]
    found = []
    for n in range(3000):
        a, b = rng.sample(names, 2)
        method = rng.choice(["entity_graph", "dense", "hybrid"])
        found.append((_pair(method, a, b, round(rng.random(), 6)), rng.randint(0, 2)))
    runs = PairRuns(tmp_path / "runs", run_rows=run_rows)
    for pair, rank in found:
        runs.add(pair, rank)
    tables = list(runs.unique())
    kept = [row for table in tables for row in table.to_pylist()]
    assert [(r["article_a"], r["article_b"]) for r in kept] == sorted({(r["article_a"], r["article_b"]) for r in kept})
    assert runs.runs == (0 if run_rows > 3000 else -(-3000 // run_rows))
    first: dict[tuple[str, str], ArticlePair] = {}
    for pair, _ in sorted(found, key=lambda item: item[1]):
        first.setdefault((pair.article_a, pair.article_b), _record(pair))
    assert sorted(kept, key=lambda r: r["id"]) == sorted((p.model_dump() for p in first.values()),
                                                         key=lambda r: r["id"])
    assert runs.duplicates == 3000 - len(first)
    assert all(t.schema.names == list(ArticlePair.model_fields) for t in tables)
    runs.close()



@pytest.mark.skipif(not (SAMPLE / "articles.jsonl").exists(), reason="sample corpus missing")
def test_a_run_killed_after_writing_shards_resumes_without_writing_its_pairs_twice(tmp_path, monkeypatch):
    """The stage writer takes the merged pairs as tables; a run that dies after some became shards leaves them for
    the re-run, which leaves those pairs out (``has``) and commits the bytes of an uninterrupted run."""
    from babelrag.shards import ShardWriter

    raw = _config(tmp_path / "b")
    Pipeline(config_from_dict(raw)).run(until="index")
    store = BuildStore(tmp_path / "b")
    monkeypatch.setattr(pair_runs, "RUN_ROWS", 3)
    monkeypatch.setattr(pair_runs, "_BATCH", 2)  # many small tables out of the merge
    add_table = ShardWriter.add_table
    calls = []

    def dying_add_table(self, table):
        calls.append(table.num_rows)
        if len(calls) == 3:
            raise Killed()
        add_table(self, table)
        self.flush()  # each table its own shard, kept for the re-run

    monkeypatch.setattr(ShardWriter, "add_table", dying_add_table)
    with pytest.raises(Killed):
        Pipeline(config_from_dict(raw)).run(until="pairs")
    assert len(list(store.partial_dir("pairs").glob("shard-*.records.parquet"))) == 2
    handed: list[int] = []

    def counting_add_table(self, table):
        handed.append(table.num_rows)
        add_table(self, table)

    monkeypatch.setattr(ShardWriter, "add_table", counting_add_table)
    Pipeline(config_from_dict(raw)).run(until="pairs")
    manifest = store.manifest("pairs")
    assert manifest.counts["out"] == sum(calls[:2]) + sum(handed)  # the resumed pairs were not handed over again
    resumed = (store.stage_dir("pairs") / RECORDS_FILE).read_bytes()
    monkeypatch.setattr(ShardWriter, "add_table", add_table)
    monkeypatch.setattr(pair_runs, "RUN_ROWS", 1_000_000)
    Pipeline(config_from_dict(raw)).run(until="pairs", force=["pairs"])  # uninterrupted, one buffer
    assert store.manifest("pairs").counts["out"] == manifest.counts["out"]
    assert (store.stage_dir("pairs") / RECORDS_FILE).read_bytes() == resumed
