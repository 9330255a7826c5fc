"""Exports (RAGE/BEIR, XRAG) and loaders for external formats (XRAG, GaRAGe, BEIR), with malformed fixtures."""
import json
import shutil
from pathlib import Path

import pytest

from babelrag.errors import InputError
from babelrag.release.build import build_release
from babelrag.release.export import export_release
from babelrag.release.loaders.beir import load_beir
from babelrag.release.loaders.garage import load_garage
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
    written = export_release(release, tmp_path / "beir", "beir")
    assert {p.name for p in written} == {"mono-de", "mono-zh", "en-baseline", "no-retrieval-de", "multi-de"}
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
    assert all(list(r) == list(XRAG_FIELDS) for r in rows)
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


def test_to_xrag_orders_supporting_first_and_spells_multihop():
    _, _, insts = make_records()
    inst = insts[0].model_copy(deep=True)
    inst.q_type = "multi-hop"
    inst.documents = list(reversed(inst.documents))
    row = to_xrag(inst)
    assert row["q_type"] == "multihop"
    assert row["dates"][:2] == sorted(inst.dates, reverse=True)  # supporting (reversed order kept), then distractors
    assert row["articles"][0].startswith(inst.documents[6].title)


def test_xrag_loader_reads_the_released_fields():
    items = load_xrag(FIX / "xrag.jsonl")
    assert [i.id for i in items] == ["xrag-de-1", "xrag-de-2"]
    first = items[0]
    assert first.language == "de"  # detected
    assert first.q_type == "multi-hop" and first.a_type == "corrected" and first.crossdoc_type == 2
    assert [d.role for d in first.documents] == ["supporting"] * 2 + ["distractor"] * 6
    assert first.documents[0].title == "Nordwind and Elbtal plan merger"
    assert first.documents[0].language == "en"
    assert first.dates == ["2024-07-12", "2024-07-14"]


def test_xrag_loader_names_every_bad_line():
    with pytest.raises(InputError) as err:
        load_xrag(FIX / "xrag_bad.jsonl")
    msg = str(err.value)
    assert "6 invalid record(s)" in msg
    assert "xrag_bad.jsonl:2: record 'bad-missing': missing field(s) a_type" in msg
    assert "xrag_bad.jsonl:3: record 'bad-qtype': q_type 'yesno' not one of" in msg
    assert "xrag_bad.jsonl:4: record 'bad-dates': 8 articles but 7 dates" in msg
    assert "xrag_bad.jsonl:5: record 'bad-crossdoc': crossdoc_type must be 0, 1 or 2" in msg
    assert "xrag_bad.jsonl:6: not valid JSON" in msg
    assert "xrag_bad.jsonl:7: expected a JSON object, got list" in msg


def test_garage_loader_aligns_cite_labels():
    recs = {r.id: r for r in load_garage(FIX / "garage.jsonl")}
    g1 = recs["g-1"]
    assert [p.cite_id for p in g1.passages] == ["cite_1", "cite_2", "cite_3"]
    assert [(p.relevant, p.label, p.cited) for p in g1.passages] == [
        (True, "ANSWER-THE-QUESTION", True), (False, "RELATED-INFORMATION", False), (False, "OUTDATED", False)]
    assert g1.passages[0].date == "2024-07-02" and g1.passages[2].provider == "ent"
    assert g1.relevant_ids == ["cite_1"] and not g1.requires_deflection
    assert g1.to_instance() is None  # "Simple" is not one of our four question types
    g2 = recs["g-2"]
    assert [p.text for p in g2.passages] == ["Bremen handled 4.2 million containers in 2023.",
                                            "Hamburg handled 7.7 million containers in 2023."]
    inst = g2.to_instance()
    assert inst.q_type == "comparison" and [d.role for d in inst.documents] == ["supporting", "supporting"]
    assert recs["g-3"].requires_deflection


def test_garage_loader_names_every_bad_record():
    with pytest.raises(InputError) as err:
        load_garage(FIX / "garage_bad.jsonl")
    msg = str(err.value)
    assert "4 invalid record(s)" in msg
    assert "garage_bad.jsonl:2: record 'g-bad-align': evidence_relevant has 2 labels for 3 passages" in msg
    assert "garage_bad.jsonl:3: record 'g-bad-label': cite_2: label 'MAYBE' not allowed" in msg
    assert "garage_bad.jsonl:4: record 'g-bad-key': grounding key 'passage_1' is not cite_N" in msg
    assert "garage_bad.jsonl:5: record 'g-missing': missing field(s) evidence_correct" in msg


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
