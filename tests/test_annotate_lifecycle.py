"""Human work reaches the benchmark (issue 37), against a real argilla-server: two annotators and an
adjudicator answer through the HTTP API the web UI uses; every step runs through the CLI users run.

a first (unreviewed) release -> review (qa_verification) -> pull + merge -> adjudicate the disputed
record -> pull + merge -> translation pushed from the reviewed questions -> post-edits -> merge -> the
instances stage -> a second release -> an evaluation -> its answers judged by the annotators -> the
evaluation again, with each judge's agreement with them.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from babelrag.annotate import argilla_api as api
from babelrag.annotate.settings import UserSettings
from babelrag.config import config_from_dict
from babelrag.pipeline import Pipeline
from babelrag.records import Article, DistractorSet, Instance, QAItem
from babelrag.store import BuildStore
from babelrag.testing.scripted_server import ScriptedServer
from tests.helpers.qa_fixtures import DE, corpus, dset, qa, seed_stage
from tests.test_annotate_argilla import Env, _answer, _queue
from tests.test_handoffs import _config, _invoke

pytestmark = pytest.mark.argilla
ADJUDICATOR = ("judge", "judge-password")


@pytest.fixture(scope="module")
def argilla(tmp_path_factory):
    """A server of this module's own, with an adjudicator beside the two annotators."""
    env = Env(tmp_path_factory.mktemp("lifecycle-argilla-home"))
    env.settings = env.settings.model_copy(update={"users": [
        *env.settings.users, UserSettings(username=ADJUDICATOR[0], password=ADJUDICATOR[1], role="adjudicator")]})
    env.start()
    try:
        yield env
    finally:
        env.server.stop()


def _answer_all(env: Env, project: str, answers: dict[str, dict[str, dict]], suffix: str = "") -> None:
    """Each annotator answers their whole queue: ``answers[user][record id]`` -> values."""
    ds_id = str(api.find_dataset(env.client, env.settings, project, suffix).id)
    for user, by_record in answers.items():
        headers = env.token(user, f"{user}-password")
        for rec in _queue(env, headers, ds_id):
            _answer(env, headers, rec["id"], by_record[rec["external_id"]])


def _merged_path(output: str) -> Path:
    return Path(re.search(r"merged into (\S+\.jsonl)", output.replace("\n", "")).group(1))


def _flat(output: str) -> str:
    """The CLI's output with the console's line wrapping undone."""
    return " ".join(output.split())


def _verdict(natural="yes", answerable="yes", correct="yes", corrected="") -> dict:
    values = {"natural": natural, "answerable": answerable, "answer_correct": correct}
    return {**values, "corrected_answer": corrected} if corrected else values


def test_review_adjudication_translation_reach_the_instances(argilla, tmp_path):
    build = tmp_path / "build"
    items = [qa(f"q{i}", "a1", "a2", translations=DE) for i in range(1, 5)]
    seed_stage(build, "ingest", list(corpus().values()), Article)
    seed_stage(build, "filters", items, QAItem)
    seed_stage(build, "distractors", [dset(q.id, [(f"e{i}", "en") for i in range(6)]) for q in items], DistractorSet)
    filters_file = BuildStore(build).stage_dir("filters") / "records.parquet"
    cfg = _config(argilla, tmp_path, project={"build_dir": str(build), "languages": ["en", "de"]})
    pulled = build / "annotate"  # the default: where the release card reads the annotation from
    first = _release(build, tmp_path, "0.1.0", None)  # machine data, before any review
    rows = {r["qa_id"]: r for r in _rows(first, "mono-de")}
    assert rows["q2"]["answer"] == "300." and not rows["q2"]["verified"] and rows["q2"]["a_type"] == "original"
    _invoke("annotate", "push", "qa_verification", "-i", filters_file, "-c", cfg)

    fixed = "Three hundred staff, in Porto."
    _answer_all(argilla, "qa_verification", {
        "ann1": {"q1": _verdict(), "q2": _verdict(correct="no", corrected=fixed),
                 "q3": _verdict(natural="no", answerable="yes"), "q4": _verdict(correct="no", corrected="300 staff in 2026.")},
        "ann2": {"q1": _verdict(), "q2": _verdict(correct="no", corrected=fixed),
                 "q3": _verdict(natural="no", answerable="no"), "q4": _verdict(correct="no", corrected="About 300 staff.")},
    })
    out = _invoke("annotate", "pull", "qa_verification", "-c", cfg, "--out", pulled, "--merge-into", filters_file)
    # q3: both said "not natural" (a tie on answerable): rejected; q4: conflicting corrections: disputed
    assert "'merged': 3" in _flat(out) and "'rejected': 1" in _flat(out) and "'unresolved': ['q4']" in _flat(out)
    _invoke("annotate", "agreement", "qa_verification", "-c", cfg, "--out", pulled,
            "--disagreements", tmp_path / "dis.jsonl")
    dis = [json.loads(line) for line in (tmp_path / "dis.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {"q4", "corrected_answer"} <= {v for d in dis for v in (d["record_id"], d["question"])}
    assert next(d for d in dis if d["record_id"] == "q4" and d["question"] == "corrected_answer")["labels"] == {
        "ann1": "300 staff in 2026.", "ann2": "About 300 staff."}

    # adjudication: the disputed record, both corrections shown, to the adjudicator only
    out = _invoke("annotate", "adjudicate", "qa_verification", "-c", cfg, "--out", pulled)
    assert "1 disputed record(s)" in _flat(out) and "adjudicators: judge" in _flat(out)
    adj = api.adjudication_datasets(argilla.client, argilla.settings, "qa_verification")
    assert [d.name for d in adj] == ["babelrag-adjudication-qa-verification"]
    judge = argilla.token(*ADJUDICATOR)
    queue = _queue(argilla, judge, str(adj[0].id))
    assert [r["external_id"] for r in queue] == ["q4"]
    assert "| corrected_answer | 300 staff in 2026. | About 300 staff. |" in queue[0]["fields"]["annotations"]
    ann1 = argilla.token("ann1", "ann1-password")
    r = argilla_get(argilla, f"/api/v1/me/datasets/{adj[0].id}/records", ann1)
    assert r.status_code in (403, 404)  # annotators never see the adjudication workspace
    assert "1 records, 0 new" in _flat(_invoke("annotate", "adjudicate", "qa_verification", "-c", cfg, "--out", pulled))
    status = _flat(_invoke("annotate", "status", "qa_verification", "-c", cfg))
    assert "babelrag-adjudication-qa-verification" in status and "judge" in status  # the adjudicator's queue
    _answer(argilla, judge, queue[0]["id"], _verdict(correct="no", corrected="About 300 staff."))
    out = _invoke("annotate", "pull", "qa_verification", "-c", cfg, "--out", pulled, "--merge-into", filters_file)
    assert "'merged': 4" in _flat(out) and "'adjudicated': 1" in _flat(out) and "'unresolved': []" in _flat(out)
    reviewed = _merged_path(out)
    by_id = {q.id: q for q in (QAItem.model_validate_json(line) for line in reviewed.read_text().splitlines())}
    assert by_id["q4"].answer == "About 300 staff." and by_id["q4"].human_review.adjudicator.annotator == "judge"
    assert by_id["q2"].answer == fixed and not by_id["q3"].accepted

    # translation from the reviewed questions: the rejected q3 is not sent; the corrected English is shown
    out = _invoke("annotate", "push", "translation", "-i", reviewed, "-l", "de", "-c", cfg)
    assert "skipped 1 input record(s): rejected" in _flat(out) and "3 records: 3 new" in _flat(out)
    tr_ds = api.find_dataset(argilla.client, argilla.settings, "translation", "de")
    assert fixed in next(r for r in tr_ds.records if r.id == "q2").fields["source_and_mt"]
    post = {"q1": ("Wie viele Mitarbeiter stellt die Lumen Bank ein?", "300 Mitarbeiter."),
            "q2": ("Wie viele Mitarbeiter stellt die Lumen Bank in Porto ein?", "Dreihundert Mitarbeiter, in Porto."),
            "q4": ("Wie viele Leute will die Lumen Bank nach der Eröffnung einstellen?", "Etwa 300 Mitarbeiter.")}
    values = {rid: {"question_translation": q, "answer_translation": a} for rid, (q, a) in post.items()}
    _answer_all(argilla, "translation", {"ann1": values, "ann2": values}, "de")
    out = _invoke("annotate", "pull", "translation", "-c", cfg, "--out", pulled, "--merge-into", reviewed, "-l", "de")
    assert "'merged': 3" in _flat(out) and "'outdated': []" in _flat(out)
    final = _merged_path(out)

    # the instances stage: every German gold answer is the post-edit of the reviewed English, nothing
    # re-translated (the post-edits are current); the rejected question is gone
    second = _release(build, tmp_path, "0.2.0", final)
    got = {i.qa_id: i for i in BuildStore(build).read("instances", Instance)}
    assert set(got) == {"q1", "q2", "q4"}
    for rid, (_, answer) in post.items():
        assert got[rid].answer == answer and got[rid].verified and not got[rid].machine_translated
    assert got["q2"].en_answer == fixed and got["q4"].en_answer == "About 300 staff."
    assert [got[q].a_type for q in ("q1", "q2", "q4")] == ["human_translated", "human_corrected", "human_corrected"]

    # the second release: the reviewed rows, their provenance, and a card that tells how they were decided
    rows = {r["qa_id"]: r for r in _rows(second, "mono-de")}
    assert set(rows) == {"q1", "q2", "q4"} and all(r["verified"] for r in rows.values())
    assert rows["q4"]["answer"] == "Etwa 300 Mitarbeiter." and rows["q4"]["en_answer"] == "About 300 staff."
    card = (second / "README.md").read_text(encoding="utf-8")
    assert "0 `original`, 2 `human_corrected`, 1 `human_translated`" in card
    assert "- by_adjudicator: 1" in card and "| babelrag-qa-verification | natural | 4 | 2 |" in card
    _invoke("release", "export", second, "--format", "xrag", "--out", tmp_path / "xrag")
    exported = {json.loads(line)["id"]: json.loads(line)["a_type"]
                for p in (tmp_path / "xrag" / "mono-de").glob("xrag.*.jsonl") for line in p.read_text().splitlines()}
    assert sorted(exported.values()) == ["corrected", "corrected", "original"]

    # an evaluation of the second release; its answers judged by the annotators; the judges measured
    _evaluate_and_judge(argilla, second, tmp_path, cfg)


def _release(build: Path, tmp_path: Path, version: str, reviewed: Path | None) -> Path:
    """The instances stage (from the reviewed questions when given; no re-translation needed: any LLM call
    fails the test) and a release of them."""
    from babelrag.release.build import build_release

    with ScriptedServer(lambda body: {"question": "?", "answer": "!"}) as srv:
        config = config_from_dict({
            "project": {"build_dir": str(build), "languages": ["en", "de"], "seed": 3},
            "instances": {"settings": ["mono"], **({"reviewed_qa": str(reviewed)} if reviewed else {})},
            "llm": {"endpoints": {"g": {"base_url": srv.base_url, "model": "scripted", "max_retries": 0}},
                    "progress": False},
            "release": {"out_dir": str(tmp_path / "release"), "name": "life", "version": version,
                        "dev_fraction": 0.0, "allow_unverified": reviewed is None}})
        Pipeline(config).run(only=["instances"])
        assert srv.count("chat") == 0
    return Path(build_release(config).folder)


def _rows(folder: Path, config: str) -> list[dict]:
    import datasets

    return [r for split in datasets.load_dataset(str(folder), config).values() for r in split]


def _evaluate_and_judge(env: Env, release: Path, tmp_path: Path, cfg: Path) -> None:
    from babelrag.evaluators.answers import read_answers
    from babelrag.evaluators.release_reader import load_instances
    from tests.test_eval_release_e2e import eval_config, release_brain

    instances = load_instances(release)
    with ScriptedServer(release_brain(instances)) as srv:
        (tmp_path / "e").mkdir()
        ecfg = eval_config(tmp_path / "e", srv.base_url, metrics=("xrag",))
        _invoke("evaluate", "run", release, "-c", ecfg, "--out", tmp_path / "eval", "--rounds", "20")
        answers = read_answers(tmp_path / "eval" / "answers.jsonl")
        assert all(a.judge_verdict for a in answers)  # the panel's verdict: the annotators' hint
        out = _flat(_invoke("annotate", "push", "answer_judgement", "-i", tmp_path / "eval" / "answers.jsonl",
                            "-c", cfg))
        assert f"{len(answers)} records: {len(answers)} new" in out
        ds = api.find_dataset(env.client, env.settings, "answer_judgement")
        shown = {r.id: r for r in ds.records(with_suggestions=True)}
        assert all(not r.suggestions for r in shown.values())  # mode show: nothing pre-selected
        assert all("(judge-panel)" in r.fields["hints"] for r in shown.values())
        truth = {a.id: "correct" if a.model == "good" else "incorrect" for a in answers}
        _answer_all(env, "answer_judgement", {u: {rid: {"verdict": v} for rid, v in truth.items()}
                                              for u in ("ann1", "ann2")})
        _invoke("annotate", "pull", "answer_judgement", "-c", cfg, "--out", tmp_path / "pulled")
        _invoke("annotate", "agreement", "answer_judgement", "-c", cfg, "--out", tmp_path / "pulled")
        vs = json.loads((tmp_path / "pulled" / "answer_judgement.agreement.json").read_text())["suggestions"]
        # the panel-versus-human row (before: no judge_verdict in answers.jsonl, so no row)
        assert [(r["mode"], r["agent"], r["items"], r["raw_agreement"]) for r in vs] == [
            ("show", "judge-panel", len(answers), 1.0)]
        made = tmp_path / "made.jsonl"
        made.write_text("".join(json.dumps({"instance_id": a.instance_id, "model": a.model, "answer": a.answer,
                                            "doc_order": a.doc_order}) + "\n" for a in answers))
        _invoke("evaluate", "run", release, "-c", ecfg, "--out", tmp_path / "eval2", "--rounds", "20", "--answers",
                made, "--human", tmp_path / "pulled" / "answer_judgement.decisions.jsonl")
    data = json.loads((tmp_path / "eval2" / "results.json").read_text())
    assert data["judge_vs_human"]["human_labels"] == len(answers)
    assert {j: v["kappa"]["value"] for j, v in data["judge_vs_human"]["judges"].items()} == {
        "judge-1": 1.0, "judge-2": 1.0, "(panel)": 1.0}


def argilla_get(env: Env, path: str, headers: dict):
    import httpx

    return httpx.get(f"{env.server.url}{path}", headers=headers)


def test_push_update_marks_responses_to_changed_content_stale(argilla, tmp_path):
    """Issue 37, defect 8: before, `push --update` kept the old responses on a record whose answer changed,
    without a flag, so merge and agreement counted verdicts on text nobody had judged."""
    from babelrag.annotate import samples

    cfg = _config(argilla, tmp_path, project={"build_dir": str(tmp_path / "build")})
    data = json.loads(cfg.read_text())
    data["annotate"]["dataset_prefix"] = "stale"
    cfg.write_text(json.dumps(data))
    answers = samples.model_answers(2)
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in answers))
    _invoke("annotate", "push", "answer_judgement", "-i", path, "-c", cfg)
    ds = api.get_dataset(argilla.client, "stale-answer-judgement", argilla.settings.workspace)
    for user in ("ann1", "ann2"):
        headers = argilla.token(user, f"{user}-password")
        for rec in _queue(argilla, headers, str(ds.id)):
            _answer(argilla, headers, rec["id"], {"verdict": "correct"})

    answers[0]["answer"] = "Porto, says the corrected run."  # what annotators judged changed
    answers[1]["judge_verdict"] = "correct"  # only the hint changed: the verdicts still hold
    path.write_text("".join(json.dumps(a) + "\n" for a in answers))
    out = _flat(_invoke("annotate", "push", "answer_judgement", "-i", path, "-c", cfg, "--update"))
    assert "2 records: 0 new, 2 updated" in out
    audit = tmp_path / "build" / "annotate" / "stale-answer-judgement.stale-responses.jsonl"
    assert f"2 response(s) to records whose content changed marked stale: kept in {audit}" in out
    kept = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert sorted((r["record_id"], r["annotator"], r["status"], r["was"]) for r in kept) == [
        ("ans1", "ann1", "stale", "submitted"), ("ans1", "ann2", "stale", "submitted")]
    assert {r["judged_fields"]["model_answer"] for r in kept} == {"Lisbon"} and all(r["stale_since"] for r in kept)

    held = {r["external_id"]: r for r in pl_records(argilla, str(ds.id))}
    assert held["ans1"]["responses"] == [] and held["ans1"]["status"] == "pending"
    assert len(held["ans2"]["responses"]) == 2 and held["ans2"]["status"] == "completed"
    queue = _queue(argilla, argilla.token("ann1", "ann1-password"), str(ds.id))
    assert [r["external_id"] for r in queue] == ["ans1"]  # back in the annotator's queue, new content shown
    assert queue[0]["fields"]["model_answer"] == "Porto, says the corrected run."
    out = _flat(_invoke("annotate", "pull", "answer_judgement", "-c", cfg, "--out", tmp_path / "pulled"))
    decisions = [json.loads(line) for line in (tmp_path / "pulled" / "answer_judgement.decisions.jsonl").read_text().splitlines()]
    assert [d["id"] for d in decisions] == ["ans2"]  # the stale verdicts count nowhere


def pl_records(env: Env, dataset_id: str) -> list[dict]:
    return list(api.iter_records(env.client, dataset_id))
