"""Mining's exact blocked search (construct/exactsearch.py) gives the hits Milvus gives, and the pairs stage writes
the same bytes with it as with Milvus Lite's own search (``dense.search: milvus``), on the NTREX-128 events set
(tests/fixtures/ntrex_events) and the shipped sample corpus. Also: a closed Milvus Lite store frees its file."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from babelrag.config import config_from_dict
from babelrag.construct.exactsearch import WindowIndex, _top_rows
from babelrag.construct.vectorstore import VectorStore
from babelrag.pipeline import Pipeline
from babelrag.store import BuildStore
from tests.helpers.fixture_paths import NTREX_EVENTS
from tests.helpers.planted_rows import planted_rows

SAMPLE = Path(__file__).resolve().parents[1] / "babelrag" / "data" / "sample"


def planted(n=400, dim=16, seed=3):
    return planted_rows(n, dim, seed, max_day=60)


def hits(results):
    return [[(h.id, h.score, h.language, h.published) for h in row] for row in results]


def test_window_index_returns_what_milvus_lite_returns(tmp_path):
    ids, langs, days, v = planted()
    vs = VectorStore.lite(tmp_path / "milvus", "articles", v.shape[1])
    try:
        vs.upsert(ids, v, langs, days, ["t"] * len(ids), ["s"] * len(ids))
        index = WindowIndex.from_store(vs, block=7)  # blocks smaller than the query batch
        assert len(index) == len(ids)
        q = v[:40]
        for where in ({"languages": ["en"], "published_from": 10, "published_to": 24},
                      {"languages": ["de", "fr"], "published_from": 30},
                      {"languages": ["fr"], "published_to": 20, "exclude_ids": ids[:20]},
                      {}):
            assert hits(index.search(q, top_k=12, **where)) == hits(vs.search(q, top_k=12, **where)), where
        assert index.search(q[:2], top_k=5, languages=["en"], published_from=99) == [[], []]
        got = index.vectors([ids[5], "missing"])
        assert list(got) == [ids[5]] and np.array_equal(got[ids[5]], vs.vectors([ids[5]])[ids[5]])
    finally:
        vs.close()


def test_ties_go_to_the_smaller_id_whatever_the_block():
    base = np.eye(4, dtype=np.float32)
    v = np.repeat(base, 3, axis=0)  # three identical vectors per direction
    ids = [f"id{c}" for c in "lkjihgfedcba"]
    for block in (1, 2, 64):
        index = WindowIndex(ids, ["en"] * 12, [0] * 12, v, block=block)
        got = index.search(base[:2], top_k=2, languages=["en"])
        assert [[h.id for h in row] for row in got] == [["idj", "idk"], ["idg", "idh"]]
        assert all(h.score == 1.0 for row in got for h in row)


@pytest.mark.parametrize("n, k", [(5, 5), (30, 7), (400, 21), (3000, 22)])
def test_top_rows_shortlist_keeps_the_whole_row_order_with_ties_and_dropped_columns(n, k):
    """The thresholded top-k gives exactly a full (score desc, rank asc) sort of each row: rounded scores make
    many ties at the k-th score, dropped columns never come back, a NaN row falls back to the whole-row path."""
    rng = np.random.default_rng(n + k)
    rank = rng.permutation(n).astype(np.int64)
    for decimals in (1, 2, 6):
        scores = np.round(rng.standard_normal((37, n)), decimals).astype(np.float32)
        dropped = np.zeros(n, dtype=bool)
        dropped[rng.choice(n, size=n // 10, replace=False)] = True
        kk = min(k, n - int(dropped.sum()))
        want_scores = scores.copy()
        want_scores[:, dropped] = -np.inf
        want = np.lexsort((np.broadcast_to(rank, scores.shape), -want_scores), axis=1)[:, :kk]
        cols, vals = _top_rows(scores.copy(), kk, rank, dropped)
        assert (cols == want).all()
        assert (vals == np.take_along_axis(want_scores, want, axis=1)).all()
        assert not dropped[cols].any()
        tied = scores.copy()
        tied[5] = 0.5  # a whole row tied at its floor: sorted on its own, not padded to the window
        tied[6, : n // 2] = 0.25
        want_tied = tied.copy()
        want_tied[:, dropped] = -np.inf
        want = np.lexsort((np.broadcast_to(rank, tied.shape), -want_tied), axis=1)[:, :kk]
        cols, vals = _top_rows(tied, kk, rank, dropped)
        assert (cols == want).all() and (vals == np.take_along_axis(want_tied, want, axis=1)).all()
        nan = scores.copy()
        nan[3, 0] = np.nan
        assert _top_rows(nan, kk, rank, np.zeros(n, dtype=bool))[0].shape == (37, kk)


def test_torch_product_gives_the_numpy_hits_and_a_missing_gpu_is_a_clear_error():
    torch = pytest.importorskip("torch")
    from babelrag.construct.exactsearch import _torch_matmul
    from babelrag.errors import StageError

    ids, langs, days, v = planted(200)
    a = WindowIndex(ids, langs, days, v)
    b = WindowIndex(ids, langs, days, v, block=3)
    b._matmul = _torch_matmul("cpu")  # the GPU code path, on the CPU
    want, got = a.search(v[:10], top_k=5, languages=["en"]), b.search(v[:10], top_k=5, languages=["en"])
    assert [[h.id for h in r] for r in got] == [[h.id for h in r] for r in want]
    assert np.allclose([h.score for r in got for h in r], [h.score for r in want for h in r], atol=1e-6)
    if not torch.cuda.is_available():
        with pytest.raises(StageError, match="no CUDA device"):
            WindowIndex(ids, langs, days, v, device="cuda")


def _pairs_bytes(build_dir: Path) -> bytes:
    folder = BuildStore(build_dir).stage_dir("pairs")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in {".jsonl", ".parquet", ".gz"})
    assert files, f"no pairs output in {folder}"
    return b"".join(p.read_bytes() for p in files)


def _both_searches(raw: dict) -> tuple[bytes, bytes, dict]:
    """The pairs stage's output with the exact search, then (pairs forced, same index) with Milvus Lite's."""
    raw.setdefault("dense", {})["search"] = "exact"
    cfg = config_from_dict(raw)
    Pipeline(cfg).run(until="pairs")
    exact, extra = _pairs_bytes(cfg.build_dir), BuildStore(cfg.build_dir).manifest("pairs").extra
    raw["dense"]["search"] = "milvus"
    Pipeline(config_from_dict(raw)).run(until="pairs", force=["pairs"])
    assert BuildStore(cfg.build_dir).manifest("pairs").extra["search"]["kind"] == "milvus"
    return exact, _pairs_bytes(cfg.build_dir), extra


def test_pairs_stage_writes_the_same_bytes_on_the_ntrex_events_set(tmp_path):
    langs = sorted({json.loads(x)["language"] for x in (NTREX_EVENTS / "articles.jsonl").read_text().splitlines()
                    if x.strip()})
    exact, milvus, extra = _both_searches({
        "project": {"build_dir": str(tmp_path / "b"), "languages": langs},
        "corpus": {"inputs": [{"path": str(NTREX_EVENTS / "articles.jsonl"), "format": "jsonl"}], "min_tokens": 10},
        "dense": {"queries": "articles", "min_pair_similarity": -1.0}, "pairs": {"graphml": False}})
    assert extra["search"]["kind"] == "exact" and extra["search"]["vectors"] == 55
    # the exact search read the index stage's own sorted copy of its vectors, not Milvus
    assert extra["search"]["source"] == "index vector file", extra["search"]
    assert extra["dense_pairs"] > 5 and sum(extra["hybrid_pairs"]["languages"].values()) > 0, extra
    assert exact == milvus
    # an index without that file (built before it existed): the vectors are read from Milvus, same bytes
    build = BuildStore(tmp_path / "b")
    (build.stage_dir("index") / build.manifest("index").extra["vector_file"]["file"]).unlink()
    cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "b"), "languages": langs},
                            "corpus": {"inputs": [{"path": str(NTREX_EVENTS / "articles.jsonl"), "format": "jsonl"}],
                                       "min_tokens": 10},
                            "dense": {"queries": "articles", "min_pair_similarity": -1.0, "search": "exact"},
                            "pairs": {"graphml": False}})
    Pipeline(cfg).run(until="pairs", force=["pairs"])
    assert build.manifest("pairs").extra["search"]["source"] == "vector store"
    assert _pairs_bytes(cfg.build_dir) == exact


SAMPLE_CORPUS = {"inputs": [{"path": str(SAMPLE / "articles.jsonl"), "format": "jsonl"}]}


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory) -> Path:
    """The sample corpus through ingest and index, once for both query modes: they differ from the pairs stage on
    (dense.queries, events_file and search are not index settings)."""
    build = tmp_path_factory.mktemp("sample") / "b"
    Pipeline(config_from_dict({"project": {"build_dir": str(build)}, "corpus": SAMPLE_CORPUS})).run(until="index")
    return build


@pytest.mark.skipif(not (SAMPLE / "events.jsonl").exists(), reason="sample corpus missing")
@pytest.mark.parametrize("queries", ["articles", "events"])
def test_pairs_stage_writes_the_same_bytes_on_the_sample_corpus(tmp_path, queries, sample_index):
    from babelrag.demo import SAMPLE_PAIR_SIMILARITY

    shutil.copytree(sample_index, tmp_path / "b")  # ingest and index reused: the pairs stage runs on them
    exact, milvus, extra = _both_searches({
        "project": {"build_dir": str(tmp_path / "b")},
        "corpus": SAMPLE_CORPUS,
        "dense": {"queries": queries, "events_file": str(SAMPLE / "events.jsonl"),
                  "min_pair_similarity": SAMPLE_PAIR_SIMILARITY}})
    assert extra["dense_pairs"] > 10 and sum(extra["hybrid_pairs"]["languages"].values()) > 10, extra
    assert exact == milvus
    # the exact search's batches on one thread and on three (executor.processes): the same bytes
    for processes in (1, 3):
        Pipeline(config_from_dict({"project": {"build_dir": str(tmp_path / "b")}, "corpus": SAMPLE_CORPUS,
                                   "executor": {"processes": processes},
                                   "dense": {"queries": queries, "events_file": str(SAMPLE / "events.jsonl"),
                                             "min_pair_similarity": SAMPLE_PAIR_SIMILARITY, "search": "exact"}}
                                  )).run(until="pairs", force=["pairs"])
        assert _pairs_bytes(tmp_path / "b") == exact, f"executor.processes {processes}"
    index = BuildStore(tmp_path / "b").manifest("index")
    assert index.started_at == BuildStore(sample_index).manifest("index").started_at  # reused, not re-run


CHILD = """
import sys
from pathlib import Path
from babelrag.construct.vectorstore import VectorStore
vs = VectorStore.lite(Path(sys.argv[1]), "articles", 4)
print(vs.count())
vs.close()
"""


def test_a_closed_lite_store_frees_its_file_for_the_next_stage_and_process(tmp_path):
    """milvus-lite keeps a per-file server (and the file's lock) after client.close() until the process exits;
    closing the last store of this process on the file stops it, while another open store keeps working."""
    folder = tmp_path / "milvus"
    first = VectorStore.lite(folder, "articles", 4)
    first.upsert(["a", "b"], np.eye(2, 4, dtype=np.float32), ["en", "en"], [1, 2], ["t", "t"], ["s", "s"])
    second = VectorStore.lite(folder, "articles", 4)  # a second stage of this process, while the first is open
    first.close()
    assert second.count() == 2  # the other store's server was not stopped under it
    second.close()
    second.close()  # closing twice releases nothing twice
    third = VectorStore.lite(folder, "articles", 4)  # the next stage, in turn
    assert third.count() == 2
    third.close()
    child = subprocess.run([sys.executable, "-c", CHILD, str(folder)], capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-600:]
    assert child.stdout.strip() == "2"
