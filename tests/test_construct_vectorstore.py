"""Milvus vector store: Milvus Lite (embedded) and a real Milvus server on loopback (PyPI ``milvus``)."""
import os
import tempfile

import numpy as np
import pytest

from babelrag.construct.vectorstore import VectorStore, build_filter
from babelrag.errors import ConfigError

LANGS = ["en", "de", "en", "de", "en", "zh"]
DAYS = [10, 20, 30, 40, 50, 30]


def vectors(n=6, dim=8, seed=0):
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def fill(vs, v):
    ids = [f"a{i}" for i in range(len(v))]
    ids[5] = 'quote"d\\id'  # ids with quotes and backslashes survive filters
    vs.upsert(ids, v, LANGS, DAYS, [f"title {i}" for i in range(len(v))], ["src"] * len(v))
    return ids


def check_store(vs):
    v = vectors()
    ids = fill(vs, v)
    fill(vs, v)  # idempotent: same ids replace rows
    assert vs.count() == 6
    # sealed: flushed and the vector index built over every row before anything searches it (an HNSW index on a
    # server builds in the background; the index stage waits here)
    built = vs.seal()
    assert built["state"] == "Finished" and built["pending_index_rows"] == 0
    assert built["indexed_rows"] >= 6 and built["indexed_rows"] >= built["total_rows"]
    # nearest neighbours by inner product, computed by hand with numpy
    scores = v @ v[0]
    en = [i for i in range(6) if LANGS[i] == "en" and DAYS[i] >= 20]
    expected = sorted(en, key=lambda i: -scores[i])
    hits = vs.search(v[0], top_k=5, languages=["en"], published_from=20)[0]
    assert [h.id for h in hits] == [ids[i] for i in expected]
    assert hits[0].score == pytest.approx(float(scores[expected[0]]), abs=1e-4)
    assert all(h.language == "en" and h.published >= 20 for h in hits)
    hits = vs.search(v[5], top_k=1, languages=["zh"], published_to=30)[0]
    assert [h.id for h in hits] == [ids[5]] and hits[0].title == "title 5"
    assert vs.search(v[0], top_k=3, published_from=60)[0] == []
    assert vs.existing_ids([ids[5], "nope"]) == {ids[5]}
    expr = build_filter(exclude_ids=[ids[1]], languages=["de"])
    assert [h.id for h in vs.search(v[1], top_k=5, filter_expr=expr)[0]] == [ids[3]]


def test_milvus_lite_store(tmp_path):
    vs = VectorStore.lite(tmp_path / "milvus", "articles", 8)
    try:
        check_store(vs)
    finally:
        vs.close()
    # reopening the same file keeps the rows; a different encoder dimension is a clear error
    vs = VectorStore.lite(tmp_path / "milvus", "articles", 8)
    assert vs.count() == 6
    vs.close()
    with pytest.raises(ConfigError, match="holds 8-d vectors but the encoder makes 16-d"):
        VectorStore.lite(tmp_path / "milvus", "articles", 16)


@pytest.mark.parametrize("index", ["HNSW", "IVF_FLAT"])
def test_milvus_lite_indexes(tmp_path, index):
    vs = VectorStore.lite(tmp_path / index, "articles", 8, index_type=index)
    try:
        v = vectors()
        fill(vs, v)
        assert vs.search(v[2], top_k=1)[0][0].id == "a2"
    finally:
        vs.close()


@pytest.fixture(scope="module")
def milvus_server():
    import fcntl

    milvus = pytest.importorskip("milvus", reason="install the milvus-server extra (PyPI milvus==2.3.5)")
    # The embedded etcd always binds its peer port 2380, so two Milvus servers cannot run on one machine at
    # once: test runs started side by side (developers, CI jobs) take turns through this lock.
    with open(os.path.join(tempfile.gettempdir(), "babelrag-milvus-server.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        srv = milvus.MilvusServer()
        srv.set_base_dir(tempfile.mkdtemp(prefix="babelrag-milvus-"))
        srv.start()
        try:
            yield f"http://127.0.0.1:{srv.config.configurable_items['proxy_port'][1]}"
        finally:
            srv.stop()
            srv.cleanup()


def test_milvus_server_store(milvus_server):
    vs = VectorStore(milvus_server, "articles_test", 8, index_type="HNSW")
    try:
        check_store(vs)
    finally:
        vs.drop()
        vs.close()


def test_pairs_stage_against_a_milvus_server(milvus_server, tmp_path):
    import json

    from babelrag.config import config_from_dict
    from babelrag.pipeline import Pipeline
    from babelrag.records import ArticlePair
    from babelrag.store import BuildStore

    from tests.test_construct_pairs import DE, EN

    rows = [{"id": k, "title": t, "maintext": x * 2, "language": lang, "date_publish": d}
            for lang, src in (("en", EN), ("de", DE)) for k, (t, d, x) in src.items()]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = config_from_dict({
        "project": {"build_dir": str(tmp_path / "b"), "languages": ["en", "de"]},
        "corpus": {"inputs": [{"path": str(tmp_path / "c.jsonl"), "format": "jsonl"}], "min_tokens": 20},
        "pairs": {"graphml": False},
        "dense": {"queries": "articles", "milvus": {"uri": milvus_server, "collection": "stage_test",
                                                     "index_type": "HNSW"}},
    })
    Pipeline(cfg).run(until="pairs")
    dense = {(p.article_a, p.article_b) for p in BuildStore(cfg.build_dir).read("pairs", ArticlePair)
             if p.method == "dense"}
    assert dense == {("d1", "e1"), ("d2", "e3")}
    # the index stage waited for the server's HNSW build over all six rows before pairs searched them
    built = BuildStore(cfg.build_dir).manifest("index").extra["vector_index"]
    assert built["index_type"] == "HNSW" and built["state"] == "Finished" and built["indexed_rows"] >= 6
    vs = VectorStore(milvus_server, "stage_test", 512)
    try:
        assert vs.count() == 6
    finally:
        vs.drop()
        vs.close()
    assert not (tmp_path / "b" / "_shared" / "milvus" / "milvus.db").exists()  # nothing went to Lite
