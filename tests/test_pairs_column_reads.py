"""The pairs stage reads its inputs as Arrow columns, no pydantic record per article (issue 34): the language slices
from ingest's id / language / title-entity / date columns, the index entries' ``DocTable`` from the index's columns,
the translation tier's passages from the rows of the ids it needs. Each is checked against the record reader it
replaced on a real build (ingest + index of dated news and articles whose dates ingest inferred or could not find),
and a build whose records lack a column (an older version's) is a StageError naming the folder and the fix."""
from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from babelrag.config import config_from_dict
from babelrag.construct.crosslingual import article_anchors, passage_anchors
from babelrag.construct.dense import PASSAGE_COLUMNS
from babelrag.construct.doctable import DocTable
from babelrag.construct.pairs import SLICE_COLUMNS, LanguageSlice, read_slices
from babelrag.errors import StageError
from babelrag.pipeline import Pipeline
from babelrag.records import DATE_SOURCES, DAY_COLUMNS, Article, IndexEntry, article_days
from babelrag.shards import RECORDS_FILE
from babelrag.stage import StageContext, get_stage
from babelrag.store import BuildStore
from tests.test_construct_ingest import EN as EN_TEXT, EN2 as EN2_TEXT, row
from tests.test_construct_pairs import DE, EN
from tests.helpers.mining_oracles import add_article


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """ingest + index of the pairs tests' en/de news (dated, entities in the titles) and three undated articles:
    one dated by its URL, one by its download date (inferred, so outside windows), one with no date at all."""
    root = tmp_path_factory.mktemp("colread")
    rows = [{"id": k, "title": t, "maintext": x * 2, "language": lang, "date_publish": d,
             "url": f"https://n.example/{k}"} for lang, src in (("en", EN), ("de", DE)) for k, (t, d, x) in src.items()]
    undated = [row(7, "Harbour council approves ferry budget", EN_TEXT, date="", url="https://n.example/2026/02/27/f"),
               row(8, "Wetlands store more carbon than thought", EN2_TEXT, date="",
                   date_download="2026-03-01 07:00:00"),
               row(9, "Council budget debate continues", EN_TEXT + EN2_TEXT, date="", url="https://n.example/council")]
    for r in undated:
        r["date_publish"] = None
    (root / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*rows, *undated]), encoding="utf-8")
    cfg = config_from_dict({"project": {"build_dir": str(root / "b"), "languages": ["en", "de"]},
                            "corpus": {"inputs": [{"path": str(root / "c.jsonl"), "format": "jsonl"}],
                                       "min_tokens": 20, "undated": "infer"},
                            "dense": {"queries": "articles"}})
    Pipeline(cfg).run(until="index")
    return cfg


def stage_context(cfg, tmp_path: Path) -> StageContext:
    return StageContext(get_stage("pairs"), cfg, BuildStore(cfg.build_dir), "test", tmp_path)


def test_the_build_has_every_kind_of_date(build):
    arts = BuildStore(build.build_dir).read("ingest", Article)
    assert {a.date_source for a in arts} == {"published", "url", "fetched", "none"}
    assert sum(a.title_entities == [] for a in arts) >= 1 and sum(len(a.title_entities) > 1 for a in arts) >= 2


def test_slices_from_columns_equal_slices_from_records(build, tmp_path):
    ctx = stage_context(build, tmp_path)
    got = read_slices(ctx)
    want: dict[str, LanguageSlice] = {}  # the record path this replaced
    bare = 0
    for art in BuildStore(build.build_dir).iter_read("ingest", Article):
        add_article(want.setdefault(art.language, LanguageSlice()), art)
        bare += not art.title_entities
    assert list(got) == list(want)  # languages in order of first appearance
    for lang, sl in want.items():
        mine = got[lang]
        assert mine.ids == sl.ids and mine.days == sl.days and mine.indptr == sl.indptr
        assert mine.indices == sl.indices and list(mine.vocab.items()) == list(sl.vocab.items())
    assert ctx.count_in == sum(len(s.ids) for s in want.values()) == 9
    assert ctx.noted == {"no-title-entities": bare} and bare > 0


def test_slices_read_batch_by_batch_number_entities_as_one_stream(build, tmp_path, monkeypatch):
    """Entity ids are numbered in order of first appearance across batches, not per batch."""
    import babelrag.store as store_module

    whole = read_slices(stage_context(build, tmp_path))
    real = store_module.iter_batches
    monkeypatch.setattr(store_module, "iter_batches", lambda path, columns, ids=None: (
        b for batch in real(path, columns, ids) for b in pa.Table.from_batches([batch]).to_batches(max_chunksize=2)))
    ctx = stage_context(build, tmp_path)
    split = read_slices(ctx)
    assert ctx.count_in == 9
    for lang, sl in whole.items():
        assert (split[lang].ids, split[lang].indices, split[lang].vocab) == (sl.ids, sl.indices, sl.vocab)


def test_article_days_on_columns_is_article_day():
    combos = [(published, source, windowed) for published in (None, dt.date(2026, 3, 2), dt.date(1969, 12, 30))
              for source in DATE_SOURCES for windowed in (True, False)]
    arts = [Article(id=f"a{n}", title="t", text="x", language="en", published=p, date_source=s, windowed=w)
            for n, (p, s, w) in enumerate(combos)]
    table = pa.table({"published": pa.array([a.published for a in arts], pa.date32()),
                      "date_source": [a.date_source for a in arts], "windowed": [a.windowed for a in arts]})
    assert article_days(table).tolist() == [a.day for a in arts]
    assert len(set(article_days(table).tolist())) == 3  # dated, dated before 1970, undated


def test_doctable_from_columns_equals_doctable_from_entries(build, tmp_path):
    store = BuildStore(build.build_dir)
    want = DocTable(store.iter_read("index", IndexEntry))
    got = DocTable.from_columns(stage_context(build, tmp_path).read_columns("index", DocTable.COLUMNS))
    assert len(got) == 9 and got.ids == want.ids and got.days == want.days and got.fresh == want.fresh
    assert got.language_column() == want.language_column() and dict(got.items()) == dict(want.items())
    assert sum(got.fresh) == 6  # only the published dates are fresh


def test_passages_of_the_wanted_ids_only(build, tmp_path):
    store = BuildStore(build.build_dir)
    ctx = stage_context(build, tmp_path)
    wanted = {"e1", "d2", "a8", "nobody"}
    rows = {}
    for batch in ctx.read_columns("ingest", PASSAGE_COLUMNS, ids=wanted):
        assert batch.schema.names == list(PASSAGE_COLUMNS)
        rows.update({r["id"]: r for r in batch.to_pylist()})
    records = store.read_ids("ingest", Article, wanted)
    assert set(rows) == set(records) == {"e1", "d2", "a8"}
    for aid, art in records.items():
        assert (rows[aid]["title"], rows[aid]["text"], rows[aid]["language"]) == (art.title, art.text, art.language)
        assert passage_anchors(rows[aid]["title"], rows[aid]["text"], rows[aid]["language"], 300) == \
            article_anchors(art, 300)
    assert list(ctx.read_columns("ingest", PASSAGE_COLUMNS, ids=())) == []


def test_a_build_without_a_column_says_which_stage_to_re_run(build, tmp_path):
    """A build written by an older version (its ingest records lack ``windowed``): a StageError naming the ingest
    folder and ``--force``, raised before the stage reads anything, not a pyarrow error."""
    old = tmp_path / "old"
    shutil.copytree(build.build_dir, old)
    path = old / "ingest" / RECORDS_FILE
    pq.write_table(pq.read_table(path).drop_columns(["windowed"]), path)
    cfg = build.model_copy(update={"project": build.project.model_copy(update={"build_dir": str(old)})})
    ctx = stage_context(cfg, tmp_path)
    with pytest.raises(StageError) as err:
        read_slices(ctx)
    message = str(err.value)
    assert str(old / "ingest") in message and "windowed" in message and "babelrag construct ingest --force" in message
    assert ctx.count_in == 0
    assert set(SLICE_COLUMNS) >= set(DAY_COLUMNS)
