"""`babelrag demo --monolingual de`: the MIRAGE-style X–X setting end to end (build, release, the demo's evaluation).

Every LLM call is answered over real HTTP by the demo's scripted brain taught to write German
(tests/test_monolingual_setting.py's ``GermanBrain``); a prompt it does not know fails the test. The release's
``monolingual-de`` config is loaded with ``datasets.load_dataset``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.test_demo_e2e import run_scripted_demo
from tests.test_monolingual_setting import GermanBrain

pytestmark = pytest.mark.slow  # the whole demo pipeline, release and evaluation


@pytest.fixture(scope="module")
def mono_demo(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo-mono")
    brain = GermanBrain()
    return tmp, brain, run_scripted_demo(tmp, brain, "--monolingual", "de")  # --max-pairs 4, as the demo test


def test_the_monolingual_demo_builds_releases_and_evaluates_german_only(mono_demo, tmp_path):
    import datasets

    from babelrag.records import Instance, QAItem
    from babelrag.store import BuildStore

    tmp, brain, res = mono_demo
    # the German chain wrote every question (no English step, nothing translated)
    assert {"summary_de", "simple_qa_de", "crossdoc_de", "answer_de"} <= set(brain.calls), brain.calls
    assert not {"summary", "simple_qa", "crossdoc", "answer", "translate_qa", "translate_article"} & set(brain.calls)
    store = BuildStore(tmp / "build-monolingual-de")
    qas = store.read("filters", QAItem)
    assert qas and all(q.language == "de" and not q.translations for q in qas)
    accepted = [q for q in qas if q.accepted]
    assert accepted, {q.id: q.rejected_by for q in qas}
    # read by German's backend here (the sample's gazetteer: no German spaCy model), never by the English model
    for q in accepted:
        ne = next(v for v in q.filters if v.filter == "named_entity")
        assert ne.status == "pass" and ne.detail.endswith("(no NER model for de + gazetteer)"), ne
    insts = store.read("instances", Instance)
    assert {i.setting for i in insts} == {"monolingual", "no-retrieval", "oracle"}
    assert all(i.language == "de" and {d.language for d in i.documents} <= {"de"} for i in insts)

    release = tmp / "release" / "babelrag-demo-monolingual-de-0.1.0"
    meta = json.loads((release / "release.json").read_text())
    assert "monolingual-de" in meta["configs"]
    card = (release / "README.md").read_text()
    assert "config_name: monolingual-de" in card
    assert yaml.safe_load(card.split("---\n")[1])["language"] == ["de"]
    dd = datasets.load_dataset(str(release), "monolingual-de", cache_dir=str(tmp_path / "hf-cache"))
    rows = [r for split in dd.values() for r in split]
    assert len(rows) == sum(meta["configs"]["monolingual-de"].values()) > 0
    assert all(r["setting"] == "monolingual" and r["language"] == "de" for r in rows)
    assert all({d["language"] for d in r["documents"]} == {"de"} and r["en_question"] == r["question"] for r in rows)
    # the demo's own evaluation, in its own folder beside the cross-lingual demo's
    report = tmp / "eval-monolingual-de" / "report.html"
    assert report.exists() and brain.calls["eval_answer"] > 0


def test_the_default_demo_is_unchanged_and_a_language_the_corpus_lacks_is_refused(tmp_path):
    from babelrag.demo import demo_config

    default = demo_config(tmp_path, "http://127.0.0.1:9", None, 4)
    assert default.project.languages == ["en", "fr", "es", "zh"] and default.questions.monolingual == []
    assert default.project.build_dir.endswith("/build") and default.release.name == "babelrag-demo"
    res = subprocess.run([str(Path(sys.executable).parent / "babelrag"), "demo", "--build-dir", str(tmp_path / "d"),
                          "--endpoint", "http://127.0.0.1:9", "--corpus", "wikinews", "--monolingual", "fr"],
                         capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
    assert res.returncode == 2, res.stderr
    assert "the wikinews corpus has no two articles of one event in one language" in res.stderr
    assert not (tmp_path / "d").exists()  # refused up front: nothing written
