"""Ingest's driver (issue 26 item 7): with workers, title NER runs in them (TitleNER) and the driver only
decides duplicates and writes. The output is the byte-identical output of NER in the driver."""
from pathlib import Path

from babelrag.config import config_from_dict
from babelrag.pipeline import Pipeline
from babelrag.store import BuildStore

SAMPLE = Path(__file__).resolve().parents[1] / "babelrag" / "data" / "sample" / "articles.jsonl"


def _ingest(tmp_path, name, processes):
    cfg = config_from_dict({
        "project": {"build_dir": str(tmp_path / name), "languages": ["en", "de", "es", "zh", "ar"]},
        "corpus": {"inputs": [{"path": str(SAMPLE), "format": "jsonl"}], "min_tokens": 20},
        "executor": {"processes": processes, "chunk_size": 8}})
    report = Pipeline(cfg).run(until="ingest")
    store = BuildStore(cfg.build_dir)
    manifest = store.manifest("ingest")
    return ((store.stage_dir("ingest") / "records.parquet").read_bytes(), manifest.output_fingerprint,
            manifest.counts, manifest.extra, report)


def test_title_ner_in_two_workers_gives_the_drivers_output_and_counts(tmp_path):
    one = _ingest(tmp_path, "driver", 1)
    two = _ingest(tmp_path, "workers", 2)
    assert one[3]["ner_in_workers"] is False and two[3]["ner_in_workers"] is True
    assert two[3]["extract_processes"] == 2
    assert two[0] == one[0] and two[1] == one[1]  # same records, same fingerprint
    assert two[2] == one[2]  # same counts, no-ner-model-<lang> included (de, es, ar have no spaCy model here)
    assert "'no-ner-model-de': 32" in str(one[2])  # counted for the kept articles only, in both


def test_llm_ner_and_a_single_process_keep_ner_in_the_driver():
    from types import SimpleNamespace

    from babelrag.construct.ingest import TitleNER, worker_ner
    from babelrag.executor import LocalExecutor

    cfg = config_from_dict({"ner": {"backend": "spacy", "gazetteer": "gaz.jsonl"}})
    assert worker_ner(cfg, LocalExecutor(processes=1)) is None
    task = worker_ner(cfg, LocalExecutor(processes=4))
    assert isinstance(task, TitleNER) and Path(task.ner.gazetteer).is_absolute()
    assert worker_ner(config_from_dict({"ner": {"backend": "llm"}}), SimpleNamespace(processes=8)) is None
