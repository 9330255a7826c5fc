"""The fingerprint is a pure function of (stage spec, config, upstream manifests, the files the config
names): the runner's skip decision and the manifest it writes come from its one return value, not from
state a previous call left on the Pipeline."""
from babelrag.config import config_from_dict
from babelrag.fingerprint import stage_fingerprint
from babelrag.pipeline import Pipeline
from babelrag.records import Article
from babelrag.stage import StageSpec
from babelrag.store import BuildStore, Manifest
from tests.helpers.qa_fixtures import seed_stage

# the counting stage, reading ingest's output and with a file-valued field in its fingerprint
SPEC = StageSpec("count", "tests.helpers.counting_stage:run", "Article", ("ingest",), ("project", "ner"),
                 files=("ner.gazetteer",))


def config(tmp_path, gazetteer="gaz.jsonl"):
    return config_from_dict({"project": {"build_dir": "build"}, "ner": {"gazetteer": gazetteer}},
                            base_dir=tmp_path)


def upstream(output_fingerprint):
    return {"ingest": Manifest(stage="ingest", fingerprint="f", config_hash="", inputs={},
                               output_fingerprint=output_fingerprint)}


def test_same_arguments_same_fingerprint_and_nothing_written(tmp_path):
    (tmp_path / "gaz.jsonl").write_text('{"name": "Acme"}\n')
    cfg = config(tmp_path)
    first = stage_fingerprint(SPEC, cfg, upstream("out-1"))
    assert stage_fingerprint(SPEC, cfg, upstream("out-1")) == first
    assert first.inputs == {"ingest": "out-1"}
    assert set(first.files) == {"ner.gazetteer"} and first.files["ner.gazetteer"].startswith("sha256:")
    assert not (tmp_path / "build").exists()  # it only reads
    # each argument moves it: the upstream output, a missing input, the named file's content, the config
    assert stage_fingerprint(SPEC, cfg, upstream("out-2")).value != first.value
    missing = stage_fingerprint(SPEC, cfg, {})
    assert missing.inputs == {"ingest": "missing"} and missing.value != first.value
    (tmp_path / "gaz.jsonl").write_text('{"name": "Acmf"}\n')
    assert stage_fingerprint(SPEC, cfg, upstream("out-1")).files != first.files
    (tmp_path / "other.jsonl").write_text('{"name": "Acme"}\n')
    other = stage_fingerprint(SPEC, config(tmp_path, "other.jsonl"), upstream("out-1"))
    assert other.config_hash != first.config_hash and other.value != first.value


def test_the_runner_records_what_the_function_returns(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTING_STAGE_N", "3")
    (tmp_path / "gaz.jsonl").write_text('{"name": "Acme"}\n')
    cfg = config(tmp_path)
    seed_stage(tmp_path / "build", "ingest", [Article(id="a1", title="t", text="x", language="en",
                                                      published="2026-08-01")], Article)
    pipe = Pipeline(cfg, stages=(SPEC,))
    assert [s.status for s in pipe.run().stages] == ["ran"]
    store = BuildStore(tmp_path / "build")
    expected = stage_fingerprint(SPEC, cfg, {"ingest": store.manifest("ingest")})
    manifest = store.manifest("count")
    assert (manifest.fingerprint, manifest.config_hash, manifest.inputs, manifest.files) == tuple(expected)
    assert pipe.fingerprint(SPEC) == expected
    assert [s.status for s in Pipeline(cfg, stages=(SPEC,)).run().stages] == ["cached"]
