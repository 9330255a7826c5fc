"""Release build: Hub-layout folder that load_dataset reads per config, save_to_disk, byte determinism,
card sections, version bump rule, atomic writes and the CLI."""
import json
import shutil

import pytest

from babelrag.release.build import build_release
from babelrag.release.card import SECTIONS
from babelrag.release.versioning import VersionError
from babelrag.release.validate import ReleaseValidationError
from tests.helpers.release_fixtures import make_build, make_config, make_records


USAGE = {"filters": {"endpoints": ["local"], "calls": 12, "cached": 2, "prompt_tokens": 3000,
                     "completion_tokens": 500, "cost": 0.0125}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rel")
    make_build(tmp / "build", usage=USAGE)
    cfg = make_config(tmp)
    return tmp, cfg, build_release(cfg)


def test_every_config_loads_with_load_dataset_like_from_the_hub(built):
    import datasets

    tmp, _, result = built
    folder = result.folder
    assert folder.name == "demo-bench-0.1.0"
    cache = str(tmp / "hf-cache")  # datasets caches local folders by folder + config name only
    _, _, instances = make_records()
    assert set(result.configs) == {"mono-de", "mono-zh", "en-baseline", "no-retrieval-de", "multi-de"}
    seen = []
    for cfg, splits in result.configs.items():
        dd = datasets.load_dataset(str(folder), cfg, cache_dir=cache)
        assert set(dd) == set(splits)
        for split, n in splits.items():
            ds = dd[split]
            assert len(ds) == n
            assert ds.features["documents"].feature["published"].dtype == "date32"  # typed dates
            assert ds.features["dates"].feature.dtype == "date32"
            assert ds["id"] == sorted(ds["id"])
            seen += ds["id"]
        # save_to_disk copy holds the same rows
        disk = datasets.load_from_disk(str(folder / "disk" / cfg))
        assert {s: disk[s]["id"] for s in disk} == {s: dd[s]["id"] for s in dd}
    assert sorted(seen) == sorted(i.id for i in instances)
    mono = datasets.load_dataset(str(folder), "mono-de", cache_dir=cache)
    row = next(r for s in mono for r in mono[s] if r["qa_id"] == "qa-000")
    assert row["question"].startswith("Welche beiden Unternehmen")
    assert [d["role"] for d in row["documents"]].count("distractor") == 6


def test_all_settings_of_a_question_share_a_split(built):
    import pyarrow.parquet as pq

    _, _, result = built
    split_of = {}
    for path in (result.folder / "data").glob("*/*.parquet"):
        for qa in pq.read_table(path, columns=["qa_id"]).column("qa_id").to_pylist():
            assert split_of.setdefault(qa, path.stem) == path.stem
    assert set(split_of.values()) == {"dev", "test"}


def test_same_input_and_seed_give_identical_bytes_other_seed_differs(built, tmp_path):
    _, cfg, result = built
    other = make_config(tmp_path)
    make_build(tmp_path / "build", usage=USAGE)
    again = build_release(other)
    files = sorted(p.relative_to(result.folder) for p in (result.folder / "data").rglob("*.parquet"))
    assert files == sorted(p.relative_to(again.folder) for p in (again.folder / "data").rglob("*.parquet"))
    for rel in files:
        assert (result.folder / rel).read_bytes() == (again.folder / rel).read_bytes(), rel
    assert (result.folder / "README.md").read_text() == (again.folder / "README.md").read_text()
    # another seed moves questions between splits (seed 13 vs 99 differ on this fixture)
    cfg99 = make_config(tmp_path)
    cfg99.project.seed = 99
    cfg99.release.out_dir = str(tmp_path / "release99")
    r99 = build_release(cfg99)
    assert r99.configs != result.configs or r99.data_hash != result.data_hash


def test_each_split_is_converted_to_arrow_once_and_the_files_are_those_of_the_two_conversion_build(tmp_path,
                                                                                                     monkeypatch):
    """The parquet file and the save_to_disk copy of a split share one Arrow table; the folder's data/ and disk/
    bytes (the saved fingerprint included) are those the former path wrote: rows converted for the parquet
    file, then again by ``Dataset.from_list``."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    from babelrag.release import build as build_mod, schema

    calls = []
    real = schema.arrow_rows
    monkeypatch.setattr(schema, "arrow_rows", lambda rows: calls.append(len(rows)) or real(rows))
    make_build(tmp_path / "build")
    result = build_release(make_config(tmp_path))
    n_splits = sum(len(splits) for splits in result.configs.values())
    assert len(calls) == n_splits and sum(calls) == sum(n for sp in result.configs.values() for n in sp.values())

    old = tmp_path / "old"  # the former path, split by split from the build's rows
    features = schema.instance_features()
    instances, split_of_qa, _, _ = build_mod.plan(make_config(tmp_path))
    for cfg, insts in build_mod.group_instances(instances, split_of_qa).items():
        by_split = {s: [i.model_dump(mode="json") for i in split_insts] for s, split_insts in insts.items()}
        for s, rows in by_split.items():
            path = build_mod.layout.split_file(old, cfg, s)
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(real(rows), schema=features.arrow_schema), path, compression="zstd")
        datasets.DatasetDict({s: datasets.Dataset.from_list(real(r), features=features)
                              for s, r in sorted(by_split.items())}).save_to_disk(str(old / "disk" / cfg))
    written = sorted(p.relative_to(old) for p in old.rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(result.folder) for sub in ("data", "disk")
                             for p in (result.folder / sub).rglob("*") if p.is_file())
    assert any(p.name == "state.json" for p in written) and any(p.suffix == ".arrow" for p in written)
    for rel in written:
        assert (old / rel).read_bytes() == (result.folder / rel).read_bytes(), rel


def test_card_has_every_section_and_numbers_from_the_build(built):
    import yaml

    _, _, result = built
    text = (result.folder / "README.md").read_text()
    assert text.startswith("---\n")
    head = yaml.safe_load(text.split("---\n")[1])
    assert head["license"] == "cc-by-4.0" and head["version"] == "0.1.0"
    assert head["language_details"] == ["de", "en", "zh-Hans"]  # canonical BCP-47, as the Hub asks
    assert head["size_categories"] == ["n<1K"]
    assert "question-answering" in head["task_categories"]
    assert {c["config_name"] for c in head["configs"]} == set(result.configs)
    for section in SECTIONS:
        assert f"\n## {section}\n" in text, section
    assert "| qwen2.5-0.5b-instruct | xdoc_question | 2 | 5 |" in text
    # per-stage tokens and cost: 3000 + 500 = 3500 tokens, $0.0125
    assert "| filters | local | 12 | 2 | 3000 | 500 | 3500 | 0.0125 |" in text
    assert "Not annotated" in text and "verified by an annotator" not in text  # never both
    assert head["annotations_creators"] == ["machine-generated"] and head["source_datasets"] == ["original"]
    assert "```bibtex\n@misc{demo_bench_0_1_0," in text and "eprint = {2505.10089}" in text
    assert "43 news articles (de: 4, en: 39)" in text
    assert (result.folder / "CHANGELOG.md").read_text().count("## 0.1.0") == 1
    schema = json.loads((result.folder / "schema" / "instance.schema.json").read_text())
    assert "documents" in schema["properties"]


def test_annotation_summary_is_rendered(tmp_path):
    make_build(tmp_path / "build")
    (tmp_path / "build" / "annotate").mkdir()
    (tmp_path / "build" / "annotate" / "summary.json").write_text(json.dumps({
        "annotators": 3, "records": 17,
        "agreement": [{"dataset": "qa_verification", "question": "answerable", "items": 17,
                       "raw_agreement": 0.9, "cohen_kappa": None, "fleiss_kappa": 0.71}]}))
    result = build_release(make_config(tmp_path))
    text = (result.folder / "README.md").read_text()
    assert "- annotators: 3" in text
    assert "| qa_verification | answerable | 17 | 0.900 | None | 0.710 |" in text
    assert "Not annotated" not in text


def test_version_rule_refuses_changed_data_under_the_same_version(tmp_path):
    make_build(tmp_path / "build")
    cfg = make_config(tmp_path)
    first = build_release(cfg)
    assert build_release(cfg).data_hash == first.data_hash  # identical rebuild is fine
    _, _, instances = make_records()
    instances[0].answer = instances[0].answer.replace("1200", "1300")
    shutil.rmtree(tmp_path / "build")
    make_build(tmp_path / "build", instances=instances)
    with pytest.raises(VersionError, match="already exists .* with different data .*bump release.version"):
        build_release(cfg)
    cfg.release.version = "0.2.0"
    second = build_release(cfg)
    log = (second.folder / "CHANGELOG.md").read_text()
    assert log.index("## 0.2.0") < log.index("## 0.1.0")
    # instances[0] is qa-000's mono-de instance: only that config changed
    assert "- changed: mono-de\n" in log
    cfg.release.version = "0.1.5"
    with pytest.raises(VersionError, match="lower than the existing release 0.2.0"):
        build_release(cfg)
    # dropping a config needs a major bump
    shutil.rmtree(tmp_path / "build")
    make_build(tmp_path / "build", instances=[i for i in instances if i.setting != "multi"])
    cfg.release.version = "0.3.0"
    with pytest.raises(VersionError, match=r"removed .* bump the MAJOR version .* 1\.0\.0"):
        build_release(cfg)


def test_failed_validation_writes_nothing(tmp_path):
    _, _, instances = make_records()
    instances[0].question = "  "
    make_build(tmp_path / "build", instances=instances)
    with pytest.raises(ReleaseValidationError, match=r"inst-qa-000-mono-de: \[empty_text\] empty question"):
        build_release(make_config(tmp_path))
    assert not (tmp_path / "release").exists() or not any((tmp_path / "release").iterdir())


def test_cli_build_validate_and_errors(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from babelrag.cli import app

    make_build(tmp_path / "build")
    cfg = {"project": {"build_dir": "build", "languages": ["en", "de", "zh"]},
           "release": {"out_dir": "rel", "version": "1.0.0"}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    runner = CliRunner()
    res = runner.invoke(app, ["release", "validate", "-c", str(tmp_path / "cfg.yaml")])
    assert res.exit_code == 0, res.output
    assert "ok: 17 instances" in res.output
    res = runner.invoke(app, ["release", "build", "-c", str(tmp_path / "cfg.yaml")])
    assert res.exit_code == 0, res.output
    assert "release 1.0.0: 17 instances in 5 configs" in res.output
    res = runner.invoke(app, ["release", "validate", "--folder", str(tmp_path / "rel" / "babelrag-benchmark-1.0.0")])
    assert res.exit_code == 0, res.output
    # a tampered release folder fails validation with instance + rule
    import pyarrow.parquet as pq

    path = tmp_path / "rel" / "babelrag-benchmark-1.0.0" / "data" / "mono-de" / "test.parquet"
    table = pq.read_table(path)
    pq.write_table(table, tmp_path / "rel" / "babelrag-benchmark-1.0.0" / "data" / "mono-de" / "dev.parquet")  # same rows twice
    res = runner.invoke(app, ["release", "validate", "--folder", str(tmp_path / "rel" / "babelrag-benchmark-1.0.0")])
    assert res.exit_code == 1
    assert "[split_leak]" in res.output


def test_unverified_build_needs_the_flag_and_is_flagged(tmp_path):
    import io
    import os

    import datasets
    from rich.console import Console

    make_build(tmp_path / "build", verified=False)
    with pytest.raises(ReleaseValidationError, match=r"17 release rule violation\(s\).*unverified=17"):
        build_release(make_config(tmp_path))
    buf = io.StringIO()
    result = build_release(make_config(tmp_path, allow_unverified=True), console=Console(file=buf))
    assert os.fspath(result) == str(result.folder)  # the demo passes the result on as a path
    assert "release 0.1.0: 17 instances, 5 configs" in buf.getvalue()
    assert result.report.unverified_released == 17
    text = (result.folder / "README.md").read_text()
    assert "**17 instances are released unverified**" in text
    ds = datasets.load_dataset(str(result.folder), "mono-zh", cache_dir=str(tmp_path / "hf-cache"))
    assert not any(v for s in ds for v in ds[s]["verified"])


def test_card_computes_agreement_from_the_pulled_responses(tmp_path):
    """No hand-written summary: the card computes agreement from `<build>/annotate/<project>.responses.jsonl`
    as `babelrag annotate pull` writes it (the final responses; issue 37: not an `.agreement.json` snapshot)."""
    make_build(tmp_path / "build")
    labels = {"r1": ("yes", "yes"), "r2": ("yes", "no"), "r3": ("no", "no"), "r4": ("yes", "yes")}
    responses = [{"record_id": rid, "annotator": who, "status": "submitted", "dataset": "qa_verification",
                  "values": {"natural": "yes", "answerable": pair[i], "answer_correct": "yes"}}
                 for rid, pair in labels.items() for i, who in enumerate(("ana", "jonas"))]
    folder = tmp_path / "build" / "annotate"
    folder.mkdir()
    (folder / "qa_verification.responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in responses))
    text = (build_release(make_config(tmp_path)).folder / "README.md").read_text()
    assert "qa_verification: agreement between annotators" in text
    # answerable: 3 of 4 agree; Cohen's kappa = (0.75 - 0.5) / (1 - 0.5) = 0.5 (p_yes 3/4 and 2/4)
    line = next(l for l in text.splitlines() if l.startswith("| qa_verification | answerable |"))
    assert "| 4 | 2 | 0.750 | 0.500 |" in line
    assert "Not annotated" not in text


def test_demo_releases_changed_data_as_the_next_patch_version(tmp_path):
    """A demo re-run with other data (e.g. another --max-pairs) must not dead-end on the bump rule:
    the demo owns its release folder and releases the next patch version beside the old one."""
    from babelrag.demo import _release

    make_build(tmp_path / "build")
    cfg = make_config(tmp_path)
    first = _release(cfg, None)
    _, _, instances = make_records()
    instances[0].answer = instances[0].answer.replace("1200", "1300")
    shutil.rmtree(tmp_path / "build")
    make_build(tmp_path / "build", instances=instances)
    second = _release(cfg, None)
    assert first.name.endswith("-0.1.0") and second.name.endswith("-0.1.1") and first.exists()
    assert "- changed: mono-de\n" in (second / "CHANGELOG.md").read_text()
    assert _release(cfg, None) == second  # same data again: the same (latest) version, no 0.1.2
