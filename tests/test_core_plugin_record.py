"""A plug-in stage brings its own record type (``StageSpec.model = "package.module:Class"``), as
docs/architecture.md says: one module outside babelrag declares the section, the record type, the run
function and the StageSpec; the real Pipeline writes its records, they read back as that type, and a
re-run skips the stage."""
import sys
import textwrap

import pyarrow.parquet as pq
import pytest

from babelrag.config import config_from_dict
from babelrag.errors import StageError
from babelrag.pipeline import Pipeline
from babelrag.records import Article
from babelrag.stage import StageSpec, add_stage, remove_stage
from babelrag.store import BuildStore
from tests.helpers.qa_fixtures import seed_stage

PLUGIN = textwrap.dedent('''
    """A toy plug-in stage: per article, its title's words (a record type babelrag does not know)."""
    from pydantic import BaseModel

    from babelrag.config import Section
    from babelrag.records import Article
    from babelrag.stage import StageContext, StageSpec


    class TitleWords(BaseModel):
        id: str
        language: str
        words: list[str]


    class TitleWordsConfig(Section):
        min_length: int = 1


    def run(ctx: StageContext) -> None:
        out = ctx.output()
        for art in ctx.iter_read("ingest", Article):
            ctx.count_in += 1
            words = [w for w in art.title.split() if len(w) >= ctx.config.title_words.min_length]
            out.add(TitleWords(id=art.id, language=art.language, words=words))


    STAGE = StageSpec("title_words", "toy_words_plugin:run", "toy_words_plugin:TitleWords", ("ingest",),
                      ("title_words",), owns={"title_words": TitleWordsConfig}, order=15)
''')


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "toy_words_plugin.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    import toy_words_plugin

    add_stage(toy_words_plugin.STAGE)
    yield toy_words_plugin
    remove_stage(toy_words_plugin.STAGE.name)
    sys.modules.pop("toy_words_plugin", None)


def test_a_plugin_stage_writes_its_own_record_type(tmp_path, plugin):
    build = tmp_path / "build"
    cfg = config_from_dict({"project": {"build_dir": str(build)}, "title_words": {"min_length": 3}})
    seed_stage(build, "ingest", [Article(id="a1", title="Port of Hamburg reopens", text="x", language="en",
                                         published="2026-08-01"),
                                 Article(id="a2", title="Der Hafen ist zu", text="y", language="de",
                                         published="2026-08-02")], Article)
    assert plugin.STAGE.record_type() is plugin.TitleWords

    report = Pipeline(cfg).run(only=["title_words"])
    assert [(s.stage, s.status, s.count_in, s.count_out) for s in report.stages] == [("title_words", "ran", 2, 2)]
    store = BuildStore(build)
    back = store.read("title_words", plugin.TitleWords)
    assert [(r.id, r.language, r.words) for r in back] == [("a1", "en", ["Port", "Hamburg", "reopens"]),
                                                           ("a2", "de", ["Der", "Hafen", "ist"])]
    # the parquet file carries the plug-in's schema, for any reader
    assert pq.read_schema(store.stage_dir("title_words") / "records.parquet").names == ["id", "language", "words"]

    again = Pipeline(cfg).run(only=["title_words"])
    assert [s.status for s in again.stages] == ["cached"]
    changed = config_from_dict({"project": {"build_dir": str(build)}, "title_words": {"min_length": 4}})
    assert [s.status for s in Pipeline(changed).run(only=["title_words"]).stages] == ["ran"]
    assert [r.words for r in store.read("title_words", plugin.TitleWords)] == [["Port", "Hamburg", "reopens"],
                                                                              ["Hafen"]]


@pytest.mark.parametrize("model, says", [
    ("toy_words_missing:Nope", "record type 'toy_words_missing:Nope' is not available"),
    ("babelrag.records:NoSuchRecord", "record type 'babelrag.records:NoSuchRecord' is not available"),
    ("NoSuchRecord", "record type 'NoSuchRecord' is not available"),
    ("babelrag.records:DATE_SOURCES", "is not a pydantic model"),
])
def test_a_record_type_that_cannot_be_found_names_the_stage(model, says):
    spec = StageSpec("broken", "tests.helpers.tiny_stage:run", model)
    with pytest.raises(StageError, match=f"stage 'broken': .*{says}"):
        spec.record_type()


def test_a_bare_name_still_means_a_class_in_babelrag_records():
    assert StageSpec("s", "m:run", "Article").record_type() is Article
    assert StageSpec("s", "m:run", "babelrag.records:Article").record_type() is Article
