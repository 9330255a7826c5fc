"""GaRAGe and XRAG loaders on fixtures written to the published schemas (sources: tests/fixtures/external/README.md)."""
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from babelrag.errors import InputError
from babelrag.evaluators.citations import split_cited_sentences
from babelrag.evaluators.garage import GarageItem, score_garage
from babelrag.evaluators.release_reader import load_instances, release_revision
from babelrag.release.export import export_release
from babelrag.release.external import convert_external
from babelrag.release.loaders.garage import PUBLISHED_FIELDS, load_garage
from babelrag.release.loaders.xrag import load_xrag, load_xrag_records

FIX = Path(__file__).parent / "fixtures" / "external"
BEIR = Path(__file__).parent / "fixtures" / "release" / "beir"
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def garage():
    return {r.sample_id: r for r in load_garage(FIX / "garage.jsonl")}


def test_garage_loads_every_published_record_and_field(garage):
    assert len(garage) == 6
    raw = {r["sample_id"]: r for r in _lines(FIX / "garage.jsonl")}
    for sid, rec in garage.items():
        assert set(rec.to_published()) == set(PUBLISHED_FIELDS)
        assert rec.to_published() == raw[sid]  # nothing dropped, nothing changed
        assert list(rec.to_published()) == list(raw[sid])  # same key order
    savings = garage["9a7c3e55-1b2d-4c8e-8f90-6e5d4c3b2a10"]
    # the empty label "" occurs in the released label arrays and loads
    assert [(p.relevant, p.correct) for p in savings.passages] == [
        ("YES", "ANSWER-THE-QUESTION"), ("NO", "UNKNOWN"), ("", ""), ("YES", "OUTDATED")]
    assert (savings.question_sensitive, savings.question_type, savings.question_tag, savings.topic_tag) == \
        ("YES", "FAST-CHANGING", "sec", "sec")
    assert [p.provider for p in savings.passages] == ["ent", "ent", "web", "ent"]
    sets = garage["0f9e8d7c-6b5a-4c3d-8e2f-1a0b9c8d7e77"]
    assert sets.comments == "dates checked against the port websites" and sets.answer_validate == "YES"
    assert sets.answer_related_info.endswith("[cite_4].")


def test_garage_gold_sets(garage):
    ports = garage["5b0e2c1a-8f3d-4e7a-9c61-2d4f7a1b9e01"]
    assert ports.attribution_ids == ["cite_1", "cite_2"]  # ANSWER-THE-QUESTION
    assert ports.relevant_ids == ["cite_1", "cite_2", "cite_3"]  # evidence_relevant == YES, kept apart
    assert ports.gold_citations == ["cite_2", "cite_1"]  # from the answer's [cite_N] markers
    assert [p.cited for p in ports.passages] == ["YES", "YES", "NO"]
    assert garage["e2f3a4b5-c6d7-4e8f-9a0b-1c2d3e4f5a66"].requires_deflection
    assert not ports.requires_deflection
    # markers after the full stop belong to the sentence before them
    assert [c for _, c in split_cited_sentences(ports.answer_generate)] == [(2,), (1,), (1, 2)]


def test_garage_to_instance_has_real_dates_and_roles(garage):
    simple = garage["9a7c3e55-1b2d-4c8e-8f90-6e5d4c3b2a10"].to_instance()  # "Simple": GaRAGe's own category
    assert simple.q_type == "Simple" and simple.verified
    assert garage["7d6c5b4a-3e2f-4a1b-9c8d-7e6f5a4b3c88"].to_instance().q_type == "Post-processing heavy"
    inst = garage["c41d8f2e-77a0-4b5b-a3c9-0f1e2d3c4b55"].to_instance()
    assert inst.q_type == "multi-hop"
    assert [d.role for d in inst.documents] == ["supporting", "supporting", "distractor"]
    assert [d.kind for d in inst.documents] == ["relevant", "relevant", "related"]
    assert inst.dates == ["2019-11-05", "2023-05-17"]  # "Published 2019-11-05", "Published May 17, 2023"
    ports = garage["5b0e2c1a-8f3d-4e7a-9c61-2d4f7a1b9e01"].to_instance()
    assert ports.dates == ["2024-02-12", "2024-03-04"]
    for rec in garage.values():
        assert all(ISO.match(d.published) for d in rec.to_instance().documents)


def test_human_answers_score_near_full_attribution(garage):
    res = score_garage(list(garage.values()), rounds=50)
    rows = {r["query_id"]: r for r in res.items}
    # hand-computed: five answerable questions; one human answer cites 1 of its 2 answering passages
    assert res.aggregate["attribution_precision"].value == pytest.approx(1.0)
    assert res.aggregate["attribution_recall"].value == pytest.approx((1 + 1 + 1 + 1 + 0.5) / 5)
    assert rows["7d6c5b4a-3e2f-4a1b-9c8d-7e6f5a4b3c88"]["attribution_f1"] == pytest.approx(2 / 3)
    assert res.counts["attribution_recall_undefined"] == 1  # the deflection question
    assert res.counts["deflection_unjudged"] == 6  # no deflection judge ran on the human answers
    # per complexity, as GaRAGe's paper reports: each category's own items
    assert {k: v for k, v in res.counts.items() if k.startswith("items [")} == {
        f"items [{c}]": 1 for c in ("Post-processing heavy", "Simple", "aggregation", "comparison", "multi-hop", "set")}
    assert res.aggregate["attribution_recall [Post-processing heavy]"].value == pytest.approx(0.5)
    assert res.aggregate["attribution_recall [comparison]"].value == pytest.approx(1.0)
    # the wider evidence_relevant set would wrongly penalise the human answers
    ports = garage["5b0e2c1a-8f3d-4e7a-9c61-2d4f7a1b9e01"]
    assert len(set(ports.gold_citations) & set(ports.relevant_ids)) / len(ports.relevant_ids) == pytest.approx(2 / 3)


def test_garage_model_response_against_a_loaded_record(garage):
    rec = garage["5b0e2c1a-8f3d-4e7a-9c61-2d4f7a1b9e01"]
    item = GarageItem.from_record(rec, "Hamburg handled more.[cite_2] The Elbe was dredged.[cite_3] See [cite_7].")
    assert item.relevant == ("cite_1", "cite_2") and item.cited == ("cite_2", "cite_3", "cite_7")
    row = score_garage([item], rounds=10).items[0]
    assert row["attribution_precision"] == pytest.approx(1 / 3)  # the out-of-range cite_7 counts as wrong
    assert row["attribution_recall"] == pytest.approx(1 / 2)


def test_garage_bad_lines_name_record_field_and_defect():
    with pytest.raises(InputError) as err:
        load_garage(FIX / "garage_bad.jsonl")
    msg = str(err.value)
    assert "8 invalid record(s)" in msg
    assert ":2: record 'b2-align': evidence_relevant has 2 labels for 3 passages" in msg
    assert ":3: record 'b3-label': evidence_correct[1] label 'MAYBE' not allowed" in msg
    assert ":4: record 'b4-invented-shape': grounding must be a list of passages, got dict" in msg
    assert ":5: record 'b5-missing': missing field(s) evidence_correct" in msg
    assert ":6: record 'b6-cite-beyond': answer_generate cites cite_5 but the grounding has 3 passage(s)" in msg
    assert ":7: record 'b7-type': question_type must be set exactly when question_sensitive is YES" in msg
    assert ":8: record 'b8-key': grounding[1] must have exactly the keys cite_2, age, date, provider; " \
           "unexpected cite_3; missing cite_2" in msg
    assert ":9: record 'b1-good': duplicate sample_id" in msg
    assert "Traceback" not in msg


# ------------------------------------------------------------------------------------------------ XRAG


@pytest.fixture(scope="module")
def xrag():
    return {r.id: r for r in load_xrag_records(FIX / "xrag.jsonl")}


def test_xrag_keeps_every_field_and_round_trips(xrag):
    raw = {r["id"]: r for r in _lines(FIX / "xrag.jsonl")}
    for rid, rec in xrag.items():
        assert rec.to_published() == raw[rid] and list(rec.to_published()) == list(raw[rid])
    zh = xrag["xrag-zh-1"]
    assert zh.crossdoc_type == "0" and zh.crossdoc == 0  # a string crossdoc_type loads and stays a string
    assert len(zh.urls) == 8 and zh.article_order == list(range(8))


def test_xrag_supports_come_from_is_support_not_position(xrag):
    assert xrag["xrag-es-1"].supports == [2, 5] and xrag["xrag-de-multi-1"].supports == [3, 6]
    insts = {i.id: i for i in load_xrag(FIX / "xrag.jsonl")}
    es = insts["xrag-es-1"]
    assert [d.title for d in es.documents if d.role == "supporting"] == [
        "Nordwind and Elbtal plan merger", "Merger keeps port jobs"]
    assert es.dates == ["2024-07-12", "2024-07-14"]  # the supports' dates, not the first two dates
    assert es.language == "es" and insts["xrag-zh-1"].language == "zh"
    multi = insts["xrag-de-multi-1"]
    assert [d.language for d in multi.documents if d.role == "supporting"] == ["de", "de"]
    assert multi.q_type == "aggregation" and insts["xrag-de-1"].q_type == "multi-hop"
    assert insts["xrag-zh-1"].crossdoc_type == 0


def test_xrag_bad_lines_name_record_field_and_defect():
    with pytest.raises(InputError) as err:
        load_xrag_records(FIX / "xrag_bad.jsonl")
    msg = str(err.value)
    assert "9 invalid record(s)" in msg
    assert ":2: record 'bad-missing': missing field(s) a_type" in msg
    assert ":3: record 'bad-qtype': q_type 'yesno' not one of" in msg
    assert ":4: record 'bad-dates': 8 articles but 7 dates" in msg
    assert ":5: record 'bad-crossdoc': crossdoc_type must be 0, 1 or 2" in msg
    assert ":6: record 'bad-three-supports': is_support marks 3 supporting article(s); XRAG has exactly 2" in msg
    assert ":7: record 'bad-no-support': is_support marks 0 supporting article(s)" in msg
    assert ":8: record 'bad-urls': 8 articles but 1 urls" in msg
    assert ":9: not valid JSON" in msg
    assert ":10: expected a JSON object, got list" in msg


# ------------------------------------------------------------------------------------ convert / export

BIN = Path(sys.executable).parent / "babelrag"


def _cli(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300)


def _same_records(path_a, path_b):
    return _lines(path_a) == _lines(path_b)


def test_cli_converts_garage_for_evaluate_and_exports_it_back(tmp_path):
    res = _cli("release", "convert", FIX / "garage.jsonl", "--format", "garage", "--out", tmp_path / "rel")
    assert res.returncode == 0, res.stderr
    assert "6 garage record(s) -> 6 instance(s)" in res.stdout  # every record, whatever its complexity
    assert "not an instance" not in res.stdout
    insts = {i.id: i for i in load_instances(tmp_path / "rel")}  # what `evaluate run` reads
    assert len(insts) == 6 and {i.setting for i in insts.values()} == {"garage"}
    assert sorted(i.q_type for i in insts.values()) == ["Post-processing heavy", "Simple", "aggregation",
                                                        "comparison", "multi-hop", "set"]
    assert insts["c41d8f2e-77a0-4b5b-a3c9-0f1e2d3c4b55"].dates == ["2019-11-05", "2023-05-17"]
    name, revision = release_revision(tmp_path / "rel")
    assert name == "garage" and revision.startswith("external+")
    back = _cli("release", "export", tmp_path / "rel", "--format", "garage", "--out", tmp_path / "back")
    assert back.returncode == 0, back.stderr
    assert _same_records(FIX / "garage.jsonl", tmp_path / "back" / "garage.jsonl")  # all 6, every field


def test_cli_convert_names_the_bad_record_in_one_line_error(tmp_path):
    res = _cli("release", "convert", FIX / "garage_bad.jsonl", "--format", "garage", "--out", tmp_path / "rel")
    assert res.returncode != 0
    assert "record 'b6-cite-beyond': answer_generate cites cite_5" in res.stderr + res.stdout
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "rel").exists()  # nothing half-written


def test_xrag_convert_export_round_trip(tmp_path):
    src = tmp_path / "xrag.test.jsonl"
    shutil.copy(FIX / "xrag.jsonl", src)
    res = convert_external(src, "xrag", tmp_path / "rel")
    assert res.configs == {"mono-de": {"test": 1}, "mono-es": {"test": 1}, "mono-zh": {"test": 1},
                           "multi-de": {"test": 1}}
    es = {i.id: i for i in load_instances(tmp_path / "rel")}["xrag-es-1"]
    assert es.dates == ["2024-07-12", "2024-07-14"]
    export_release(tmp_path / "rel", tmp_path / "back", "xrag")
    assert _same_records(src, tmp_path / "back" / "xrag.test.jsonl")


def test_beir_convert_export_round_trip_and_our_exports_come_back_as_instances(tmp_path):
    convert_external(BEIR, "beir", tmp_path / "rel")
    export_release(tmp_path / "rel", tmp_path / "back", "beir")
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert _same_records(BEIR / name, tmp_path / "back" / name)
    rows = lambda p: sorted(p.read_text().splitlines()[1:])  # noqa: E731 - qrels lines, header apart
    assert rows(BEIR / "qrels" / "test.tsv") == rows(tmp_path / "back" / "qrels" / "test.tsv")
    for name in ("irrelevant.json", "seemingly_relevant.json"):
        assert json.loads((BEIR / name).read_text()) == json.loads((tmp_path / "back" / name).read_text())
    info = json.loads((tmp_path / "rel" / "release.json").read_text())
    assert info["not_converted"] == {"queries without babelrag metadata (q_type, answer, setting): "
                                     "retrieval data only": 2}
    # a BEIR export of babelrag instances carries their metadata and converts back to the same instances
    insts = [i for i in load_xrag(FIX / "xrag.jsonl")]
    from babelrag.release.export import beir_files, write_files

    write_files(tmp_path / "ours", beir_files({"test": insts}))
    convert_external(tmp_path / "ours", "beir", tmp_path / "ours-rel")
    again = {i.id: i for i in load_instances(tmp_path / "ours-rel")}
    for inst in insts:
        got = again[inst.id]
        assert (got.question, got.answer, got.q_type, got.setting, got.dates) == \
            (inst.question, inst.answer, inst.q_type, inst.setting, inst.dates)
        assert sorted(d.article_id for d in got.documents if d.role == "supporting") == \
            sorted(d.article_id for d in inst.documents if d.role == "supporting")


def test_beir_corpus_dates_in_datetime_and_text_forms_are_read_as_dates(tmp_path):
    """BEIR has no date field of its own: a corpus that carries ``published`` may write it as a datetime or in
    words; both are the same day in the converted release (it used to fail deep inside the parquet writer)."""
    from babelrag.release.export import beir_files, write_files

    insts = [i for i in load_xrag(FIX / "xrag.jsonl")]
    write_files(tmp_path / "ours", beir_files({"test": insts}))
    corpus = tmp_path / "ours" / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    forms = [lambda d: d + "T10:00:00Z", lambda d: dt.date.fromisoformat(d).strftime("%B %d, %Y")]
    for k, row in enumerate(rows):
        if row.get("published"):
            row["published"] = forms[k % 2](row["published"])
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    convert_external(tmp_path / "ours", "beir", tmp_path / "rel")
    again = {i.id: i for i in load_instances(tmp_path / "rel")}
    assert {i.id: i.dates for i in insts} == {k: again[k].dates for k in (i.id for i in insts)}


def test_evaluate_runs_on_a_converted_garage_folder(tmp_path):
    """The converted folder goes through the real evaluation loop (scripted endpoint, no network)."""
    from babelrag.evaluators.execution import run_evaluation
    from babelrag.evaluators.settings import EvalSettings
    from babelrag.llm.client import LLMRunner
    from babelrag.llm.settings import EndpointConfig, LLMSettings
    from babelrag.testing.scripted_server import ScriptedServer

    def brain(body):
        if body["model"] == "judge-a":
            text = " ".join(m["content"] for m in body["messages"])
            if '"deflected"' in text:
                return {"deflected": False}
            if '"eligible"' in text:
                return {"eligible": True, "major_issues": []}
            if '"support"' in text:
                return {"support": [[]]}
            return {"correct": True, "reason": "scripted"}
        return "The sources answer it [1]."

    convert_external(FIX / "garage.jsonl", "garage", tmp_path / "rel")
    with ScriptedServer(brain) as srv:
        ep = dict(base_url=srv.base_url, timeout_s=2, max_retries=1, retry_backoff_s=0.01)
        runner = LLMRunner(LLMSettings(endpoints={"m": EndpointConfig(model="served-m", **ep),
                                                  "judge-1": EndpointConfig(model="judge-a", **ep)},
                                       progress=False), tmp_path / "cache")
        name, revision = release_revision(tmp_path / "rel")
        paths = run_evaluation(runner, load_instances(tmp_path / "rel"), ["m"], ["judge-1"], tmp_path / "eval",
                               EvalSettings(dataset=name, dataset_revision=revision, rounds=20, seed=1,
                                            metrics=("xrag", "citations", "garage")))
    data = json.loads(paths["json"].read_text())
    assert data["run"]["dataset_revision"] == revision and revision.startswith("external+")
    # every record is evaluated, "Simple" and "Post-processing heavy" ones too
    assert data["counts"]["m"]["answers"] == 6 and data["leaderboard"][0]["accuracy"] == 1.0
    cit = data["metrics"]["m"]["citations"]["counts"]
    # the deflection question (no ANSWER-THE-QUESTION passage) has no relevant document: recall undefined
    assert cit["items"] == 6 and cit["recall_undefined"] == 1 and cit["f1_undefined"] == 1
    garage = data["metrics"]["m"]["garage"]
    assert garage["counts"]["items [Simple]"] == 1 and "eligibility [Post-processing heavy]" in garage["aggregate"]
