"""The record contract's storage: nested fields and dates are typed in parquet, as ``datasets`` shows them,
and records written before they were typed still read."""
import datetime as dt
import json

from babelrag.store import BuildStore


def test_typed_nested_fields_read_back_with_datasets_and_older_json_columns_still_read(tmp_path):
    """QAItem translations / filter verdicts / human review are Arrow structs that ``datasets`` shows
    typed; a record written before (``translations_json``, ``filters_json``) validates into them."""
    import datasets

    from babelrag.records import FilterVerdict, QAItem, Translation
    from tests.helpers.qa_fixtures import DE, qa, seed_stage

    item = qa("q1", "a1", "a2", translations=DE).model_copy(update={"filters": [
        FilterVerdict(filter="well_formed", status="pass", score=0.9), FilterVerdict(filter="verbatim", status="not_run")]})
    seed_stage(tmp_path / "build", "filters", [item], QAItem)
    path = BuildStore(tmp_path / "build").stage_dir("filters") / "records.parquet"
    ds = datasets.load_dataset("parquet", data_files=str(path), split="train")
    tr_feature = ds.features["translations"].feature
    assert tr_feature["question"].dtype == "string" and tr_feature["machine_translated"].dtype == "bool"
    assert ds.features["filters"].feature["score"].dtype == "float64"
    row = ds[0]
    assert row["translations"][0]["language"] == "de" and row["translations"][0]["question"].startswith("Wie viele")
    assert [v["status"] for v in row["filters"]] == ["pass", "not_run"]
    assert QAItem.model_validate(row) == item
    legacy = item.model_dump(exclude={"translations", "filters"})
    legacy["translations_json"] = json.dumps({"de": {**DE["de"], "entities": {"Lumen Bank": "Lumen Bank"}}})
    legacy["filters_json"] = json.dumps({"well_formed": {"status": "pass", "detail": "", "score": 0.9},
                                         "human_verification": {"passed": True, "detail": {
                                             "votes": {"natural": "yes", "answerable": "yes", "answer_correct": "yes"},
                                             "annotators": [{"annotator": "ann1", "updated_at": "t"}]}}})
    old = QAItem.model_validate(legacy)
    assert old.translation("de") == Translation(language="de", question=DE["de"]["question"], answer="300.",
                                                entities=[{"source": "Lumen Bank", "target": "Lumen Bank"}])
    assert old.verdict("well_formed").passed and old.human_review.passed
    assert old.human_review.annotators[0].annotator == "ann1"


def test_published_is_an_arrow_date_that_datasets_shows_typed(tmp_path):
    import datasets

    from babelrag.records import Article
    from tests.helpers.qa_fixtures import art, seed_stage

    arts = [art("a1", "en", "2026-08-20"), art("a2", "de", "2026-08-02")]
    assert arts[0].published == dt.date(2026, 8, 20) and arts[0].day - arts[1].day == 18
    seed_stage(tmp_path / "build", "ingest", arts, Article)
    store = BuildStore(tmp_path / "build")
    ds = datasets.load_dataset("parquet", data_files=str(store.stage_dir("ingest") / "records.parquet"), split="train")
    assert ds.features["published"].dtype == "date32"
    assert ds[0]["published"] == dt.date(2026, 8, 20)
    assert store.read("ingest", Article) == arts
    assert json.loads(arts[0].model_dump_json())["published"] == "2026-08-20"  # JSON stays ISO text


def test_released_dates_are_iso_text_in_python_and_json_and_date32_in_parquet():
    from babelrag.records import Document, Instance
    from babelrag.release.schema import arrow_rows, instance_features

    doc = Document(article_id="a", title="t", text="x", language="en", published=dt.date(2026, 8, 2),
                   role="supporting", kind="relevant")
    assert doc.published == "2026-08-02"  # a date read back from parquet is ISO text again
    assert doc.model_dump()["published"] == dt.date(2026, 8, 2) and json.loads(doc.model_dump_json())["published"] == "2026-08-02"
    undated = doc.model_copy(update={"published": ""})
    assert undated.model_dump()["published"] is None  # an external format without a date: a null date32
    features = instance_features()
    assert features["documents"].feature["published"].dtype == "date32" and features["dates"].feature.dtype == "date32"
    inst = Instance(id="i", qa_id="q", setting="mono", language="en", question="Q?", answer="A", en_question="Q?",
                    en_answer="A", q_type="set", documents=[doc, undated], dates=["2026-08-02"])
    row = arrow_rows([inst.model_dump(mode="json")])[0]
    assert row["dates"] == [dt.date(2026, 8, 2)] and row["documents"][1]["published"] is None
    assert Instance.model_validate(row) == inst


def _answer(**extra):
    return {"id": "m:i1", "instance_id": "i1", "qa_id": "q1", "setting": "mono", "language": "de", "model": "m",
            "question": "Wie viele?", "gold_answer": "Zwei.", **extra}


def test_answer_sampling_is_a_typed_struct_and_older_answers_files_still_read(tmp_path):
    """``AnswerRecord.sampling`` is a nested model (an Arrow struct with typed columns), written as a JSON
    object; an answers.jsonl line written before (``sampling_json``: a JSON string) reads into it."""
    import datasets

    from babelrag.arrow_features import features_for
    from babelrag.records import AnswerRecord, Sampling

    new = AnswerRecord.model_validate(_answer(sampling={"temperature": 0.0, "max_tokens": 512, "seed": 0}))
    assert new.sampling == Sampling(temperature=0.0, max_tokens=512, seed=0)
    line = json.loads(new.model_dump_json())
    assert line["sampling"]["temperature"] == 0.0 and "sampling_json" not in line
    struct = features_for(AnswerRecord)["sampling"]
    assert struct["temperature"].dtype == "float64" and struct["max_tokens"].dtype == "int64"
    assert struct["stop"].feature.dtype == "string"
    ds = datasets.Dataset.from_list([new.model_dump()], features=features_for(AnswerRecord))
    assert ds.features["sampling"]["seed"].dtype == "int64"
    assert AnswerRecord.model_validate(ds[0]) == new

    old_line = json.dumps(_answer(sampling_json=json.dumps({"max_tokens": 512, "seed": 0, "temperature": 0.7},
                                                           sort_keys=True)))
    old = AnswerRecord.model_validate_json(old_line)
    assert old.sampling.temperature == 0.7 and old.sampling.max_tokens == 512
    assert old.sampling_json == '{"max_tokens": 512, "seed": 0, "temperature": 0.7}'  # what the file held
    assert AnswerRecord.model_validate_json(old.model_dump_json()) == old
    # a parameter outside the typed ones (a prompt file may set any) is kept as given, not dropped
    odd = AnswerRecord.model_validate(_answer(sampling_json='{"logit_bias": {"50256": -100}, "stop": "END"}'))
    assert odd.sampling.params() == {"logit_bias": {"50256": -100}, "stop": ["END"]}


def test_an_answer_whose_old_sampling_text_is_not_json_is_refused():
    import pytest
    from pydantic import ValidationError

    from babelrag.records import AnswerRecord

    with pytest.raises(ValidationError):
        AnswerRecord.model_validate(_answer(sampling_json="{temperature: 0}"))
