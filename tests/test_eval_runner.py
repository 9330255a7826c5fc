"""End to end: two models on the scripted endpoint, judged by a two-judge panel, leaderboard and report."""
import json
import re

import pytest

from babelrag.errors import InputError
from babelrag.evaluators.answers import document_order, read_answers
from babelrag.evaluators.execution import run_evaluation
from babelrag.evaluators.release_reader import load_instances
from babelrag.evaluators.settings import EvalSettings
from babelrag.llm.client import LLMRunner
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.records import Document, Instance
from babelrag.testing.scripted_server import ScriptedServer

GOLD = {"de": "Die Einigung wurde in Brüssel erzielt.", "zh": "协议在布鲁塞尔达成。"}
QUESTION = {"de": "Wo wurde die Einigung erzielt?", "zh": "协议是在哪里达成的？"}


def _instances():
    out = []
    for k in range(3):
        for lang in ("de", "zh"):
            docs = [Document(article_id=f"{lang}{k}-{n}", title=f"{'Evidence' if n < 2 else 'Other'} {n}",
                             text="Some news text.", language="en", published="2024-01-01",
                             role="supporting" if n < 2 else "distractor",
                             kind="relevant" if n < 2 else "irrelevant") for n in range(4)]
            out.append(Instance(id=f"i{k}{lang}", qa_id=f"qa{k}", setting="mono", language=lang,
                                question=f"{QUESTION[lang]} ({k})", answer=GOLD[lang], en_question="Where?",
                                en_answer="Brussels.", q_type="comparison", documents=docs))
    return out


def brain(body):
    user = body["messages"][-1]["content"]
    model = body["model"]
    if "Answer A:" in user:  # pairwise judge: prefer the answer that contains the reference
        ref = re.search(r"^Reference answer: (.*)$", user, re.M).group(1)
        a = ref in re.search(r"^Answer A: (.*)$", user, re.M).group(1)
        b = ref in re.search(r"^Answer B: (.*)$", user, re.M).group(1)
        return {"verdict": "tie" if a == b else ("A" if a else "B")}
    if model.startswith("judge") and not ("Gold answer:" in user and "Candidate answer:" in user):
        return _other_judges(user)
    if model.startswith("judge"):
        gold = re.search(r"^Gold answer: (.*)$", user, re.M).group(1)
        cand = re.search(r"^Candidate answer: (.*)$", user, re.M).group(1)
        return {"correct": gold in cand, "reason": "scripted"}
    support = [n for n, title in re.findall(r"^\[(\d+)\] (\w+)", user, re.M) if title == "Evidence"]
    lang = "zh" if "协议" in user else "de"
    if model == "served-good":
        return GOLD[lang] + "".join(f"[{n}]" for n in support)
    if model == "served-terse":
        return GOLD[lang]
    return "I am not sure, it may have been somewhere in Europe [1]."


def _line(user, name):
    m = re.search(rf"^{name}: (.*)$", user, re.M)
    return m.group(1) if m else ""


def _other_judges(user):
    """GaRAGe and Ragas judges: the answer is right iff it names Brussels."""
    right = ("Brüssel", "布鲁塞尔")
    if '{"deflected"' in user:
        return {"deflected": "not sure" in _line(user, "Response")}
    if "major_issues" in user:
        return {"eligible": _line(user, "Gold answer") in _line(user, "Response")}
    if "Sentences:" in user:
        evidence = [pid for pid, title in re.findall(r"^\[(\d+)\] (\w+)", user, re.M) if title == "Evidence"]
        sents = re.findall(r"^\d+\. (.*)$", user, re.M)
        return {"support": [evidence if any(w in s for w in right) else [] for s in sents]}
    if '"statements"' in user:
        ans = _line(user, "Answer")
        return {"statements": [{"text": ans, "supported": any(w in ans for w in right)}]}
    if '"questions"' in user:
        return {"questions": ["Wo wurde die Einigung erzielt?"], "noncommittal": "not sure" in _line(user, "Answer")}
    if "<integer 1-5>" in user:  # fluency / overlap: 5 when the answer names Brussels
        return {"score": 5 if any(w in _line(user, "Answer") + _line(user, "Candidate answer") for w in right) else 2}
    if "copied from the context" in user:
        return {"sentences": [s for s in re.split(r"(?<=\.) ", _line(user, "Context")) if s.startswith("Evidence")]}
    return "unexpected prompt"


def _runner(srv, tmp_path):
    ep = dict(base_url=srv.base_url, timeout_s=2, max_retries=1, retry_backoff_s=0.01)
    settings = LLMSettings(endpoints={
        "good": EndpointConfig(model="served-good", **ep), "weak": EndpointConfig(model="served-weak", **ep),
        "terse": EndpointConfig(model="served-terse", **ep),
        "judge-1": EndpointConfig(model="judge-a", **ep), "judge-2": EndpointConfig(model="judge-b", **ep),
    }, progress=False)
    return LLMRunner(settings, tmp_path / "cache")


def test_document_order_is_seeded_per_instance():
    inst = _instances()[0]
    a = [d.article_id for d in document_order(inst, 1)]
    assert a == [d.article_id for d in document_order(inst, 1)]
    assert sorted(a) == sorted(d.article_id for d in inst.documents)
    assert len({tuple(d.article_id for d in document_order(inst, s)) for s in range(10)}) > 1


def test_two_models_end_to_end(eval_server, tmp_path):
    instances = _instances()
    runner = _runner(eval_server, tmp_path)
    paths = run_evaluation(runner, instances, ["weak", "good"], ["judge-1", "judge-2"], tmp_path / "eval",
                           EvalSettings(dataset="demo", dataset_revision="rev1", rounds=100, seed=3))
    data = json.loads(paths["json"].read_text())
    board = data["leaderboard"]
    assert [r["model"] for r in board] == ["good", "weak"]
    assert board[0]["accuracy"] == 1.0 and board[1]["accuracy"] == 0.0
    assert board[0]["citation_f1"] == 1.0
    assert data["run"]["dataset_revision"] == "rev1" and data["run"]["settings"]["models"]["good"] == "served-good"
    assert data["counts"]["weak"]["wrong_language"] == 6  # English answers to de/zh questions
    assert data["breakdown"]["good"]["mono/zh"]["value"] == 1.0 and data["breakdown"]["weak"]["mono/de"]["n"] == 3
    # per setting/language: 3 instances each, so every cell says its n
    assert "| good | 1.000 [1.000, 1.000] n=3 | 1.000 [1.000, 1.000] n=3 |" in paths["markdown"].read_text()
    answers = read_answers(paths["answers"])
    assert len(answers) == 12 and all(a.ok for a in answers)
    weak = [a for a in answers if a.model == "weak"]  # cites [1]: right half the time it is supporting
    assert board[1]["citation_recall"] == pytest.approx(sum(0.5 * (1 in a.relevant) for a in weak) / len(weak))
    good = next(a for a in answers if a.model == "good" and a.instance_id == "i0de")
    assert good.served_model == "served-good" and good.prompt_id == "eval.answer.citations"
    assert [good.doc_order[p - 1] for p in good.relevant] == sorted(["de0-0", "de0-1"], key=good.doc_order.index)
    assert json.loads(good.sampling_json)["temperature"] == 0.0
    assert paths["html"].read_text().count("data:image/png;base64,") == 3  # no BT plot without mirage
    # a re-run resumes from the LLM cache: no new requests
    before = eval_server.count("chat")
    run_evaluation(runner, instances, ["weak", "good"], ["judge-1", "judge-2"], tmp_path / "eval2", EvalSettings(rounds=50, seed=3))
    assert eval_server.count("chat") == before


def test_mirage_battles_bt_and_surrogate(eval_server, tmp_path):
    runner = _runner(eval_server, tmp_path)
    paths = run_evaluation(runner, _instances(), ["weak", "good", "terse"], ["judge-1"], tmp_path / "eval",
                           EvalSettings(rounds=100, seed=3, metrics=("xrag", "citations", "mirage")))
    data = json.loads(paths["json"].read_text())
    bt = {r["model"]: r for r in data["bradley_terry"]}
    # good and terse tie on every query (both contain the reference); weak loses every battle
    assert bt["good"]["rating"] == pytest.approx(bt["terse"]["rating"], abs=1e-6)
    assert bt["weak"]["rating"] < bt["good"]["rating"] - 100
    assert data["battles"]["n"] == 2 * 3 * 6 and data["battles"]["inconsistent_pairs"] == 0
    assert data["battles"]["l2"] > 0  # weak never wins: the unregularised MLE does not exist
    assert -1.0 <= data["surrogate"]["kendall_tau"] <= 1.0
    heur = data["metrics"]["good"]["mirage"]["aggregate"]
    assert heur["citation_recall@k"]["value"] == 1.0 and heur["rouge_l"]["value"] == 1.0
    assert heur["fluency"]["value"] == 5.0 and heur["answer_overlap"]["value"] == 5.0
    assert data["metrics"]["weak"]["mirage"]["aggregate"]["answer_overlap"]["value"] == 2.0
    assert "fluency" in data["surrogate"]["feature_importance"]
    assert heur["support"]["value"] == 1.0
    assert data["metrics"]["weak"]["mirage"]["aggregate"]["support"]["value"] == 0.0
    assert paths["html"].read_text().count("data:image/png;base64,") == 4
    row = {r["model"]: r for r in data["leaderboard"]}
    assert row["weak"]["bt_rating"] < row["good"]["bt_rating"]
    with pytest.raises(Exception, match="unknown"):
        run_evaluation(runner, _instances(), ["good"], ["judge-1"], tmp_path / "x", EvalSettings(metrics=("xrag", "bleu")))


def test_garage_and_ragas_through_the_runner(eval_server, tmp_path):
    runner = _runner(eval_server, tmp_path)
    paths = run_evaluation(runner, _instances(), ["weak", "good"], ["judge-1"], tmp_path / "eval",
                           EvalSettings(rounds=50, seed=3, metrics=("xrag", "garage", "ragas")))
    data = json.loads(paths["json"].read_text())
    row = {r["model"]: r for r in data["leaderboard"]}
    assert (row["good"]["eligibility"], row["good"]["factuality"], row["good"]["raf"]) == (1.0, 1.0, 1.0)
    assert (row["weak"]["eligibility"], row["weak"]["raf"]) == (0.0, 0.0)
    weak_garage = data["metrics"]["weak"]["garage"]["aggregate"]
    assert weak_garage["deflection_fp"]["value"] == 1.0  # deflected on answerable questions
    good_garage = data["metrics"]["good"]["garage"]["aggregate"]
    assert good_garage["attribution_f1"]["value"] == 1.0  # cites exactly the supporting documents
    assert row["good"]["faithfulness"] == 1.0 and row["weak"]["faithfulness"] == 0.0
    assert row["weak"]["answer_relevance"] == 0.0 and row["good"]["answer_relevance"] > 0.5
    assert row["good"]["context_relevance"] == pytest.approx(0.5)  # 2 evidence of 4 documents
    assert "citation_f1" not in row["good"]  # citations not requested


def test_load_instances_jsonl_and_errors(tmp_path):
    p = tmp_path / "instances.jsonl"
    p.write_text("".join(i.model_dump_json() + "\n" for i in _instances()))
    assert [i.id for i in load_instances(p)] == [i.id for i in _instances()]
    with pytest.raises(InputError, match="does not exist"):
        load_instances(tmp_path / "nope")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(InputError, match="bad.jsonl:1"):
        load_instances(bad)
    with pytest.raises(InputError, match="no parquet"):
        load_instances(tmp_path)


def _write_release(folder, instances):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for lang in ("de", "zh"):
        rows = [i.model_dump() for i in instances if i.language == lang]
        (folder / "data" / f"mono-{lang}").mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), folder / "data" / f"mono-{lang}" / "test.parquet")
    (folder / "release.json").write_text(json.dumps({"name": "demo-bench", "version": "0.2.0", "data_hash": "f" * 64}))


def test_cli_evaluate_run_on_release_folder(eval_server, tmp_path):
    import yaml
    from typer.testing import CliRunner

    from babelrag.cli import app

    release = tmp_path / "release"
    _write_release(release, _instances())
    ep = {"base_url": eval_server.base_url, "timeout_s": 2, "max_retries": 1}
    cfg = {
        "project": {"name": "t", "build_dir": str(tmp_path / "build"), "seed": 5},
        "llm": {"endpoints": {"good": {**ep, "model": "served-good"}, "weak": {**ep, "model": "served-weak"},
                              "judge-1": {**ep, "model": "judge-a"}}, "default_endpoint": "good", "progress": False},
        "evaluate": {"models": ["good", "weak"], "judges": ["judge-1"], "configs": ["mono-de"], "out_dir": "eval"},
    }
    (tmp_path / "babelrag.yaml").write_text(yaml.safe_dump(cfg))
    res = CliRunner().invoke(app, ["evaluate", "run", str(release), "-c", str(tmp_path / "babelrag.yaml"),
                                   "--out", str(tmp_path / "out"), "--rounds", "50"])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["run"]["dataset"] == "demo-bench" and data["run"]["dataset_revision"] == "0.2.0+ffffffffffff"
    assert [r["model"] for r in data["leaderboard"]] == ["good", "weak"]
    assert {a.language for a in read_answers(tmp_path / "out" / "answers.jsonl")} == {"de"}  # config filter
    bad = CliRunner().invoke(app, ["evaluate", "run", str(release), "-c", str(tmp_path / "babelrag.yaml"),
                                   "--model", "nope", "--out", str(tmp_path / "o2")])
    from babelrag.errors import ConfigError

    # main() prints BabelragErrors as one line; CliRunner shows the exception itself
    assert isinstance(bad.exception, ConfigError) and "nope" in str(bad.exception)
    assert not (tmp_path / "o2").exists()


def test_max_document_chars_cuts_what_models_and_judges_see(tmp_path):
    from babelrag.evaluators.answers import generate_answers, passages_shown

    long_text = "Evidence says the deal was made in Brussels after long talks. " * 20  # 1,240 characters
    instances = [inst.model_copy(update={"documents": [d.model_copy(update={"text": long_text})
                                                       for d in inst.documents]}) for inst in _instances()[:2]]
    prompts = []

    def recording(body):
        prompts.append(body["messages"][-1]["content"])
        return brain(body)

    with ScriptedServer(recording) as srv:
        runner = _runner(srv, tmp_path)
        answers = generate_answers(runner, instances, ["good"], max_doc_chars=100)
        whole = generate_answers(runner, instances[:1], ["good"])
    assert all(a.doc_chars == 100 for a in answers) and whole[0].doc_chars == 0
    shown = re.findall(r"^\[\d+\] \w+ \d\n(.*)$", prompts[0], re.M)
    assert len(shown) == 4 and all(len(t) <= 102 and t.endswith(" …") for t in shown)
    assert len(re.findall(r"^\[\d+\] \w+ \d\n(.*)$", prompts[-1], re.M)[0]) == len(long_text.strip())
    passages = passages_shown(instances[0], answers[0])  # the judges get the same cut text
    assert all(len(p.split(": ", 1)[1]) <= 102 for p in passages.values())
    assert all(len(p.split(": ", 1)[1]) == len(long_text) for p in passages_shown(instances[0], whole[0]).values())
