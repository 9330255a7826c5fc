"""Exports (RAGE/BEIR, XRAG) and the BEIR loader, with malformed fixtures (GaRAGe/XRAG loaders: test_release_external)."""
import json
import shutil
from pathlib import Path

import pytest

from babelrag.errors import InputError
from babelrag.release.build import build_release
from babelrag.release.export import export_release
from babelrag.release.loaders.beir import load_beir
from babelrag.release.loaders.xrag import load_xrag
from babelrag.release.schema import XRAG_FIELDS, to_xrag
from tests.helpers.release_fixtures import make_build, make_config, make_records

FIX = Path(__file__).parent / "fixtures" / "release"


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exp")
    make_build(tmp / "build")
    return build_release(make_config(tmp)).folder


def test_beir_export_roundtrips_through_the_beir_loader(release, tmp_path):
    result = export_release(release, tmp_path / "beir", "beir")
    assert {p.name for p in result.written} == {"mono-de", "mono-zh", "en-baseline", "multi-de"}
    # no-retrieval has no documents: skipped with a named reason, no empty folder for beir to crash on
    assert list(result.skipped) == ["no-retrieval-de"] and "no supporting document" in result.skipped["no-retrieval-de"]
    assert not (tmp_path / "beir" / "no-retrieval-de").exists()
    from beir.datasets.data_loader import GenericDataLoader  # the reader researchers use

    for folder in result.written:
        for split in sorted(p.stem for p in (folder / "qrels").glob("*.tsv")):
            corpus, queries, qrels = GenericDataLoader(data_folder=str(folder)).load(split=split)
            assert set(qrels) <= set(queries) and all(c in corpus for docs in qrels.values() for c in docs)
    mono = tmp_path / "beir" / "mono-de"
    splits = sorted(p.stem for p in (mono / "qrels").glob("*.tsv"))
    merged = {}
    for split in splits:
        b = load_beir(mono, split)
        merged.update(b.qrels)
    _, _, insts = make_records()
    expected = [i for i in insts if i.setting == "mono" and i.language == "de"]
    assert set(merged) == {i.id for i in expected}
    for inst in expected:
        assert merged[inst.id] == {d.article_id: 1 for d in inst.documents if d.role == "supporting"}
    b = load_beir(mono, splits[-1])
    qid = next(iter(b.qrels))
    inst = next(i for i in expected if i.id == qid)
    # fixture: distractors 0-3 are "related", 4-5 "irrelevant"
    assert b.mappings["irrelevant"][qid] == sorted(d.article_id for d in inst.documents if d.kind == "irrelevant")
    assert b.mappings["related"][qid] == sorted(d.article_id for d in inst.documents if d.kind == "related")
    docs = b.documents_for(qid)
    assert [d.role for d in docs].count("supporting") == 2 and len(docs) == 8
    multi = load_beir(tmp_path / "beir" / "multi-de", "test")
    qid = next(iter(multi.qrels))
    assert len(multi.mappings["seemingly_relevant"][qid]) == 3
    assert json.loads((mono / "queries.jsonl").read_text().splitlines()[0])["language"] == "de"


def test_xrag_export_has_xrag_fields_and_loads_back(release, tmp_path):
    export_release(release, tmp_path / "x", "xrag")
    path = next((tmp_path / "x" / "mono-de").glob("xrag.*.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(list(r) == [*XRAG_FIELDS, "is_support"] for r in rows)
    assert all(r["is_support"] == [True, True] + [False] * 6 for r in rows)
    assert all(len(r["articles"]) == 8 and len(r["dates"]) == 8 for r in rows)
    back = load_xrag(path, language="de")
    _, _, insts = make_records()
    orig = {i.id: i for i in insts}
    for inst in back:
        o = orig[inst.id]
        assert (inst.question, inst.answer, inst.q_type) == (o.question, o.answer, o.q_type)
        assert sorted(d.article_id.split("#")[0] for d in inst.documents) == [inst.id] * 8
        assert [d.text for d in inst.documents if d.role == "supporting"] == \
            [d.text for d in o.documents if d.role == "supporting"]
        assert inst.dates == o.dates


def test_to_xrag_keeps_the_instance_order_and_spells_multihop():
    _, _, insts = make_records()
    inst = insts[0].model_copy(deep=True)
    inst.q_type = "multi-hop"
    inst.documents = list(reversed(inst.documents))
    row = to_xrag(inst)
    assert row["q_type"] == "multihop"
    assert row["dates"] == [d.published for d in inst.documents]  # supports last here, as released rows may have
    assert row["is_support"] == [d.role == "supporting" for d in inst.documents] and row["is_support"][-2:] == [True, True]
    assert row["articles"][0].startswith(inst.documents[0].title)


def test_beir_loader_reads_fixture_with_mappings():
    b = load_beir(FIX / "beir", "test")
    assert b.qrels == {"q1": {"d1": 1, "d2": 1}, "q2": {"d2": 1, "d3": 0}}
    docs = b.documents_for("q1")
    assert [(d.article_id, d.role, d.kind) for d in docs] == [
        ("d1", "supporting", "relevant"), ("d2", "supporting", "relevant"), ("d3", "distractor", "irrelevant"),
        ("d4", "distractor", "seemingly_relevant")]
    assert [d.article_id for d in b.documents_for("q2")] == ["d2", "d4"]  # score 0 is not relevant


def test_beir_loader_names_bad_lines(tmp_path):
    with pytest.raises(InputError) as err:
        load_beir(FIX / "beir_bad", "test")
    msg = str(err.value)
    assert "corpus.jsonl:5: corpus 'd1': duplicate _id" in msg
    assert "corpus.jsonl:6: corpus record needs a string _id" in msg
    fixed = tmp_path / "b"
    shutil.copytree(FIX / "beir_bad", fixed)
    lines = (fixed / "corpus.jsonl").read_text().splitlines()[:4]
    (fixed / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        load_beir(fixed, "test")
    msg = str(err.value)
    assert "test.tsv:3: corpus-id 'd9' not in corpus.jsonl" in msg
    assert "test.tsv:4: query-id 'q7' not in queries.jsonl" in msg
    assert "test.tsv:5: score 'yes' is not an integer" in msg
    assert "test.tsv:6: expected 3 tab-separated columns, got 1" in msg
    with pytest.raises(InputError, match=r"dev.tsv: file not found \(splits here: test\)"):
        load_beir(fixed, "dev")
