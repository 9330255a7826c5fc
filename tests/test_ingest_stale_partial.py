"""A stale ``.partial/ingest`` (what two concurrent ingests, before the build lock, left behind) never makes
every later run die: the damaged pass-1 checkpoint is discarded and the corpus read again."""
import json

import numpy as np

from babelrag.config import config_from_dict
from babelrag.construct.ingest import N_PERM
from babelrag.pipeline import Pipeline
from babelrag.records import Article
from babelrag.shards import SHARD_FORMAT
from babelrag.store import BuildStore
from babelrag.stage import get_stage

TEXT = ("The city council approved the new budget on Tuesday after a long debate about schools, roads and "
        "public transport. Officials said the plan would raise spending on buses and repair several bridges "
        "that have been closed for months. Critics argued that the council ignored the housing shortage. ")
OTHER = ("Scientists at the university published a study showing that coastal wetlands store far more carbon "
         "than previously thought. The researchers measured soil samples along the coast for three years and "
         "warned that draining the marshes would release large amounts of greenhouse gases. ")


def _config(tmp_path):  # noqa: ANN001, ANN202
    rows = [{"id": "a1", "title": "Berlin council approves budget", "maintext": TEXT, "language": "en",
             "date_publish": "2026-03-02 10:00:00", "url": "https://news.example/1"},
            {"id": "a2", "title": "Wetlands store carbon, Stanford study finds", "maintext": OTHER, "language": "en",
             "date_publish": "2026-03-03 10:00:00", "url": "https://news.example/2"}]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return config_from_dict({"project": {"build_dir": str(tmp_path / "build"), "languages": ["en", "de"]},
                             "corpus": {"inputs": [{"path": str(corpus), "format": "jsonl"}], "min_tokens": 20}})


def _damage(pipe: Pipeline) -> None:
    """Pass 1 marked done for one row, while the spool holds three lines: two runs appended to one spool."""
    folder = pipe.store.partial_dir("ingest")
    pass1 = folder / "pass1"
    pass1.mkdir(parents=True)
    fingerprint = pipe.fingerprint(get_stage("ingest"))[0]
    (folder / "partial.json").write_text(json.dumps({"fingerprint": fingerprint, "format": SHARD_FORMAT}))
    row = {"id": "a1", "title": "Berlin council approves budget", "text": TEXT, "language": "en",
           "published": "2026-03-02", "url": "https://news.example/1", "source": "corpus.jsonl", "n_tokens": 50}
    spool = (json.dumps(row) + "\n") * 3
    (pass1 / "spool.jsonl").write_text(spool, encoding="utf-8")
    (pass1 / "hashes.bin").write_bytes(np.zeros((1, 2), np.int64).tobytes())
    (pass1 / "signatures.bin").write_bytes(np.zeros((1, N_PERM), np.uint32).tobytes())
    state = {"inputs_done": 1, "consumed": 0, "rows": 1, "spool_bytes": len(spool.encode()), "count_in": 2,
             "skipped": {}, "first_skip": {}, "done": True}
    (pass1 / "state.json").write_text(json.dumps(state))


def test_a_damaged_pass1_checkpoint_is_read_again_not_fatal(tmp_path):
    cfg = _config(tmp_path)
    _damage(Pipeline(cfg))
    report = Pipeline(cfg).run(until="ingest")  # before: IndexError here, and on every later run
    assert report.stages[0].status == "ran"
    articles = BuildStore(cfg.build_dir).read("ingest", Article)
    assert sorted(a.id for a in articles) == ["a1", "a2"]


def test_an_unreadable_checkpoint_is_read_again(tmp_path):
    cfg = _config(tmp_path)
    pipe = Pipeline(cfg)
    _damage(pipe)
    (pipe.store.partial_dir("ingest") / "pass1" / "state.json").write_text('{"rows": 1, "spool_by')
    Pipeline(cfg).run(until="ingest")
    assert len(BuildStore(cfg.build_dir).read("ingest", Article)) == 2
