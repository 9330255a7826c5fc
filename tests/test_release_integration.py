"""Contract with the real `instances` stage: its output releases cleanly and every config loads.

Upstream stages (ingest, filters, distractors) are written from the release fixtures; `instances` runs for
real through the Pipeline, then `release build` and `release export` run through the CLI.
"""
import json

from babelrag.config import config_from_dict
from babelrag.pipeline import Pipeline
from babelrag.stage import get_stage
from babelrag.records import Article, Distractor, DistractorSet, QAItem, Translation
from babelrag.store import BuildStore
from tests.helpers.release_fixtures import make_records, write_stage


def test_real_instances_stage_to_release_and_exports(tmp_path):
    import datasets
    import yaml
    from typer.testing import CliRunner

    from babelrag.cli import app
    from babelrag.release.loaders.beir import load_beir

    articles, qas, fixture_instances = make_records(verified=False)
    translations: dict = {}
    for inst in fixture_instances:
        if inst.language != "en":
            translations.setdefault(inst.qa_id, {})[inst.language] = {
                "question": inst.question, "answer": inst.answer, "machine_translated": True}
    for qa in qas:
        qa.translations = [Translation(language=lang, **tr) for lang, tr in sorted(translations.get(qa.id, {}).items())]
    dsets = []
    for k, qa in enumerate(qas):
        dsets.append(DistractorSet(id=f"ds-{qa.id}", qa_id=qa.id, distractors=[
            Distractor(article_id=a.id, language=a.language, kind="related") for a in articles
            if a.id.startswith((f"art-{k}-d", f"art-{k}-x"))]))
    store = BuildStore(tmp_path / "build")
    write_stage(store, "ingest", Article, articles)
    write_stage(store, "filters", QAItem, qas)
    write_stage(store, "distractors", DistractorSet, dsets)
    raw = {"project": {"build_dir": "build", "languages": ["en", "de", "zh"]},
           "instances": {"settings": ["mono", "multi", "en-baseline", "no-retrieval", "oracle", "multi+EQ"]},
           "release": {"out_dir": "rel", "name": "integ", "allow_unverified": True, "dev_fraction": 0.4}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(raw))
    cfg = config_from_dict(raw, base_dir=tmp_path)
    Pipeline(cfg).run_stage(get_stage("instances"), force=True)
    produced = store.manifest("instances").counts["out"]
    assert produced == 42

    runner = CliRunner()
    res = runner.invoke(app, ["release", "build", "-c", str(tmp_path / "cfg.yaml")])
    assert res.exit_code == 0, res.output
    folder = tmp_path / "rel" / "integ-0.1.0"
    info = json.loads((folder / "release.json").read_text())
    assert sum(sum(s.values()) for s in info["configs"].values()) == produced
    # multi+EQ's config name spells its variant out (it was multi-eq-en; release/naming.py reads both)
    assert {"mono-de", "mono-zh", "multi-de", "multi-en-en_question", "en-baseline", "oracle-en"} <= set(info["configs"])
    for cfg_name, splits in info["configs"].items():
        dd = datasets.load_dataset(str(folder), cfg_name, cache_dir=str(tmp_path / "cache"))
        assert {s: len(dd[s]) for s in dd} == splits
    res = runner.invoke(app, ["release", "export", str(folder), "--out", str(tmp_path / "beir")])
    assert res.exit_code == 0, res.output
    beir = load_beir(tmp_path / "beir" / "multi-de", "test")
    (qid, rel), = beir.qrels.items()
    assert sorted(rel) == ["art-4-s1", "art-4-s2"]
    assert len(beir.mappings["related"][qid]) == 6  # 3 English + 3 German distractors
