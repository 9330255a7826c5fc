"""Hand-offs between packages: each producer runs for real and its output file is fed, unchanged, to the
next package's reader through the command users run (``babelrag/records.py`` is the contract).

construct contrastive -> annotate push forced_choice; evaluate run's answers.jsonl -> annotate push
answer_judgement; annotate pull --merge-into -> the instances stage. (release -> evaluate is
``tests/test_eval_release_e2e.py``.) Annotation goes to a real argilla-server of its own (the annotate tests'
server keeps exact dataset counts), answered through the HTTP API the web UI uses.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from babelrag.annotate import argilla_api as api
from babelrag.cli import app
from babelrag.config import config_from_dict
from babelrag.pipeline import Pipeline
from babelrag.records import AnswerRecord, Article, ContrastivePair, DistractorSet, Instance, QAItem, SimpleQA
from babelrag.store import BuildStore
from babelrag.testing.scripted_server import ScriptedServer
from tests.helpers.qa_fixtures import corpus, dset, qa, seed_stage
from tests.test_annotate_argilla import Env, _answer, _dataset_id, _queue

pytestmark = pytest.mark.argilla


@pytest.fixture(scope="module")
def argilla(tmp_path_factory):
    """A server of this module's own (the annotate tests' server keeps exact dataset counts)."""
    env = Env(tmp_path_factory.mktemp("handoff-argilla-home"))
    env.start()
    try:
        yield env
    finally:
        env.server.stop()


def _config(env: Env, tmp_path: Path, **sections) -> Path:
    """A babelrag.yaml whose annotate section is the running server's (users, workspaces, home)."""
    annotate = env.settings.model_dump(mode="json")
    annotate["highlight"] = {"method": "lexical"}  # no encoder model needed for qa_verification
    path = tmp_path / "babelrag.yaml"
    path.write_text(json.dumps({"annotate": annotate, **sections}))
    return path


def _invoke(*args: str) -> str:
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res.output


def _push(env: Env, project: str, path: Path, cfg: Path, ids: set[str]) -> dict:
    """``babelrag annotate push PROJECT -i PATH``; the records the server then holds, by id (all of ``ids``)."""
    out = _invoke("annotate", "push", project, "-i", path, "-c", cfg)
    assert f"{len(ids)} records: {len(ids)} new" in out
    ds = api.find_dataset(env.client, env.settings, project)
    shown = {r.id: r for r in ds.records(with_suggestions=True)}
    assert set(shown) == ids
    return shown


def _contrastive_model(body):
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if text.startswith("Context:"):
        return {"answer": "Lumen Bank opened an office in Porto."}
    return {"answer": "I believe it opened in Lisbon."}


def test_construct_contrastive_output_is_pushed_as_forced_choice(argilla, tmp_path):
    build = tmp_path / "build"
    arts = corpus()
    seed_stage(build, "ingest", list(arts.values()), Article)
    item = QAItem(id="q1", pair_id="p", article_ids=["a1", "a2"], q_type="multi-hop", question="Q?", answer="A",
                  selected=[SimpleQA(article_id="a1", question="Where did Lumen Bank open an office?",
                                     answer="Porto")])
    seed_stage(build, "filters", [item], QAItem)
    with ScriptedServer(_contrastive_model) as srv:
        cfg = _config(argilla, tmp_path, project={"build_dir": str(build)},
                      llm={"endpoints": {"g": {"base_url": srv.base_url, "model": "scripted", "max_retries": 0}},
                           "progress": False, "cache": False})
        pairs_file = tmp_path / "pairs.jsonl"
        _invoke("construct", "contrastive", "-c", cfg, "-o", pairs_file, "--kinds", "faithfulness,context_relevance")
    pairs = [ContrastivePair.model_validate_json(line) for line in pairs_file.read_text().splitlines()]
    assert {p.kind for p in pairs} == {"faithfulness", "context_relevance"}

    shown = _push(argilla, "forced_choice", pairs_file, cfg, {p.id for p in pairs})
    for p in pairs:
        rec = shown[p.id]
        better, worse = (p.option_a, p.option_b) if p.better == "a" else (p.option_b, p.option_a)
        pos = rec.metadata["better_position"]
        assert rec.fields["response_a" if pos == "A" else "response_b"] == better
        assert rec.fields["response_b" if pos == "A" else "response_a"] == worse
        assert rec.metadata["criterion"] == p.kind and rec.fields["question"] == p.question


def test_evaluate_answers_file_is_pushed_as_answer_judgement(argilla, tmp_path):
    from babelrag.release.build import build_release
    from babelrag.evaluators.release_reader import load_instances
    from tests.helpers.release_fixtures import make_build, make_config
    from tests.test_eval_release_e2e import eval_config, release_brain

    make_build(tmp_path / "rel" / "build")
    folder = Path(build_release(make_config(tmp_path / "rel")).folder)
    instances = {i.id: i for i in load_instances(folder)}
    with ScriptedServer(release_brain(list(instances.values()))) as srv:
        cfg = eval_config(tmp_path, srv.base_url, metrics=("xrag",))
        _invoke("evaluate", "run", folder, "-c", cfg, "--out", tmp_path / "eval", "--rounds", "10")
    answers_file = tmp_path / "eval" / "answers.jsonl"
    answers = [AnswerRecord.model_validate_json(line) for line in answers_file.read_text().splitlines()]
    answered = {a.instance_id for a in answers}  # the split evaluate run scored (test by default)
    assert answered <= set(instances) and len(answers) == 2 * len(answered) > 0

    push_cfg = _config(argilla, tmp_path / "eval")
    shown = _push(argilla, "answer_judgement", answers_file, push_cfg, {a.id for a in answers})
    for a in answers:
        inst = instances[a.instance_id]
        rec = shown[a.id]
        assert (rec.fields["question"], rec.fields["gold_answer"]) == (inst.question, inst.answer)
        assert rec.fields["model_answer"] == a.answer and rec.metadata["model"] == a.model


def test_annotate_merge_output_feeds_the_instances_stage(argilla, tmp_path):
    build = tmp_path / "build"
    items = [qa("q1", "a1", "a2"), qa("q2", "a1", "a2")]
    seed_stage(build, "ingest", list(corpus().values()), Article)
    seed_stage(build, "filters", items, QAItem)
    seed_stage(build, "distractors", [dset(q.id, [(f"e{i}", "en") for i in range(6)]) for q in items], DistractorSet)
    filters_file = BuildStore(build).stage_dir("filters") / "records.parquet"
    cfg = _config(argilla, tmp_path, project={"build_dir": str(build), "languages": ["en"]})
    _invoke("annotate", "push", "qa_verification", "-i", filters_file, "-c", cfg)

    ds_id = _dataset_id(argilla, "qa_verification")
    for user in ("ann1", "ann2"):
        headers = argilla.token(user, f"{user}-password")
        for rec in _queue(argilla, headers, ds_id):
            values = {"natural": "yes", "answerable": "yes", "answer_correct": "yes"}
            if rec["external_id"] == "q2":
                values.update(answer_correct="no", corrected_answer="Three hundred staff.")
            _answer(argilla, headers, rec["id"], values)
    out = _invoke("annotate", "pull", "qa_verification", "-c", cfg, "--out", tmp_path / "pulled",
                  "--merge-into", filters_file)
    merged = Path(re.search(r"merged into (\S+\.jsonl)", out.replace("\n", "")).group(1))
    assert merged.exists()

    config = config_from_dict({"project": {"build_dir": str(build), "languages": ["en"]},
                               "instances": {"settings": ["en-baseline"], "reviewed_qa": str(merged)}})
    report = Pipeline(config).run(only=["instances"])
    assert report.stages[0].status == "ran"
    got = {i.qa_id: i for i in BuildStore(build).read("instances", Instance)}
    assert got["q1"].verified and got["q1"].answer == "300 staff."
    assert got["q2"].verified and got["q2"].answer == "Three hundred staff."
