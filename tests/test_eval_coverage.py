"""Rankings respect coverage, through the real CLI: an instance a system did not answer (missing from
`--answers`, or a failed generation) counts as wrong in every score, the leaderboard shows answered/total,
results.json warns naming the system, and a run whose answer calls failed exits 3 until a plain re-run
retries exactly those calls. Before: a system answering 2 of 20 ranked first (1.000) with `warnings: []`,
and failed generations were left out with exit 0."""
import json

import pytest

from babelrag.records import Document, Instance
from babelrag.testing.scripted_server import Fault, ScriptedServer
from tests.test_eval_run_contract import _cli, _config, _split_release, released, strict_load
from tests.test_eval_runner import GOLD, QUESTION, brain

N = 20


def _twenty():
    out = []
    for k in range(N):
        docs = [Document(article_id=f"t{k}-{n}", title=f"{'Evidence' if n < 2 else 'Other'} {n}",
                         text="Some news text.", language="en", published="2024-01-01",
                         role="supporting" if n < 2 else "distractor",
                         kind="relevant" if n < 2 else "irrelevant") for n in range(4)]
        out.append(Instance(id=f"t{k:02d}", qa_id=f"q{k:02d}", setting="mono", language="de",
                            question=f"{QUESTION['de']} ({k})", answer=GOLD["de"], en_question="Where?",
                            en_answer="Brussels.", q_type="comparison", documents=docs))
    return out


def _line(model, k, answer):
    return json.dumps({"instance_id": f"t{k:02d}", "model": model, "answer": answer})


def test_a_system_answering_2_of_20_ranks_below_one_answering_all(eval_server, tmp_path):
    release, cfg = released(tmp_path, eval_server, _twenty(), metrics=["xrag", "citations", "mirage"])
    answers = tmp_path / "answers.jsonl"
    right = GOLD["de"] + "[1][2]"  # the release order shows the two supporting articles first
    answers.write_text("\n".join([_line("sys-a", k, right) for k in range(2)]
                                 + [_line("sys-b", k, right if k < 15 else "Das weiß ich leider nicht.")
                                    for k in range(N)]) + "\n")
    res = _cli("evaluate", "run", release, "-c", cfg, "--answers", answers, "--judge", "judge-1",
               "--out", tmp_path / "o", "--rounds", "20")
    assert res.returncode == 0, res.stderr
    out = strict_load(tmp_path / "o" / "results.json")
    board = {r["model"]: r for r in out["leaderboard"]}
    assert [r["model"] for r in out["leaderboard"]] == ["sys-b", "sys-a"]
    assert board["sys-b"]["accuracy"] == 0.75 and board["sys-a"]["accuracy"] == pytest.approx(2 / N)
    assert board["sys-a"]["accuracy_n"] == N and board["sys-a"]["citation_recall_n"] == N
    assert board["sys-a"]["citation_recall"] == pytest.approx(2 / N)
    assert (board["sys-a"]["answered"], board["sys-a"]["instances"]) == (2, N)
    assert (board["sys-b"]["answered"], board["sys-b"]["instances"]) == (N, N)
    assert out["coverage"]["sys-a"] == {"answered": 2, "instances": N}
    assert out["warnings"] == ["model 'sys-a' answered 2 of 20 instances (10%): the 18 unanswered count as wrong "
                               "in every score"]
    assert out["counts"]["sys-a"]["unanswered"] == 18 and out["counts"]["sys-a"]["generation_failed"] == 0
    # Bradley-Terry: the answer beats the missing one without a judge (18 queries x 2 orders)
    assert out["battles"]["forfeits"] == 36
    assert board["sys-b"]["bt_rating"] > board["sys-a"]["bt_rating"]
    mirage = out["metrics"]["sys-a"]["mirage"]
    assert mirage["aggregate"]["rouge_l"]["n"] == N and mirage["counts"]["unanswered"] == 18
    assert "| 2/20 |" in (tmp_path / "o" / "leaderboard.md").read_text()
    assert "warning:" in res.stderr and "'sys-a' answered 2 of 20" in res.stderr
    page = (tmp_path / "o" / "report.html").read_text()
    assert "<th>coverage</th>" in page and "10% answered" in page
    # the per-answer view: question, gold, each system's answer or why there is none, verdicts, language
    assert "<h2>Answers</h2>" in page and page.count("<details>") == N
    assert "not answered: not in the answers file" in page and "Das weiß ich leider nicht." in page
    assert f"{QUESTION['de']} (19)" in page and "language de" in page and "incorrect" in page


def _flaky(fail, calls):
    """``brain``, except that ``served-weak`` answers 404 to the questions ``fail`` holds; every model call
    is recorded in ``calls``."""
    def handler(body):
        user = body["messages"][-1]["content"]
        if body["model"].startswith("served"):
            calls.append((body["model"], user))
            if body["model"] == "served-weak" and any(q in user for q in fail):
                return Fault("404", message="model not found")
        return brain(body)
    return handler


def test_failed_answer_calls_count_as_unanswered_exit_3_and_a_plain_rerun_retries_them(tmp_path):
    release, test, _ = _split_release(tmp_path)
    fail = {test[0].question, test[1].question}
    calls = []
    with ScriptedServer(_flaky(fail, calls)) as srv:
        cfg = _config(tmp_path, srv, models=("good", "weak"))
        res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "o", "--rounds", "20")
        assert res.returncode == 3, res.stdout + res.stderr
        assert "incomplete: 2 answer call(s) failed (weak: 2 of 4)" in res.stderr
        assert "A plain re-run retries exactly the failed calls" in res.stderr and "Traceback" not in res.stderr
        out = strict_load(tmp_path / "o" / "results.json")
        board = {r["model"]: r for r in out["leaderboard"]}
        assert (board["weak"]["answered"], board["weak"]["instances"]) == (2, 4)
        assert (board["good"]["answered"], board["good"]["instances"]) == (4, 4)
        assert board["weak"]["accuracy_n"] == 4 and board["weak"]["language_correct"] == 0.0
        assert out["warnings"][0].startswith("model 'weak'") and "2 of 4 answers failed" in out["warnings"][0]
        assert out["counts"]["weak"]["generation_failed"] == 2 and out["counts"]["weak"]["unanswered"] == 2
        # four instances: every cell says its n, and the page says why that matters
        md = (tmp_path / "o" / "leaderboard.md").read_text()
        assert "| 2/4 |" in md and "1.000 [1.000, 1.000] n=4" in md and "Few instances" in md
        assert "Few instances" in (tmp_path / "o" / "report.html").read_text()

        fail.clear()  # the endpoint recovered: a plain re-run sends exactly the two failed calls again
        before = len(calls)
        res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "o", "--rounds", "20")
        assert res.returncode == 0, res.stdout + res.stderr
        assert sorted(m for m, _ in calls[before:]) == ["served-weak", "served-weak"]
        assert {u for _, u in calls[before:]} == {next(u for m, u in calls[:before] if q in u) for q in
                                                  (test[0].question, test[1].question)}
    out = strict_load(tmp_path / "o" / "results.json")
    assert out["warnings"] == [] and out["coverage"]["weak"] == {"answered": 4, "instances": 4}


def test_garage_and_ragas_count_an_unanswered_instance_as_wrong_without_a_judge(eval_server, tmp_path):
    from babelrag.evaluators.answers_file import answer_record
    from babelrag.evaluators.execution import run_evaluation
    from babelrag.evaluators.settings import EvalSettings
    from tests.test_eval_runner import _instances, _runner

    instances = _instances()  # 6 answerable instances, the supporting articles first in the release order
    answers = [answer_record(inst, model, GOLD[inst.language] + "[1][2]", "citations", "")
               for model in ("full", "part") for inst in instances if model == "full" or inst.id in ("i0de", "i0zh")]
    before = eval_server.count("chat")
    paths = run_evaluation(_runner(eval_server, tmp_path), instances, [], ["judge-1"], tmp_path / "eval",
                           EvalSettings(rounds=20, metrics=("xrag", "garage", "ragas")), answers=answers)
    data = json.loads(paths["json"].read_text())
    row = {r["model"]: r for r in data["leaderboard"]}
    assert [r["model"] for r in data["leaderboard"]] == ["full", "part"]
    assert (row["full"]["eligibility"], row["full"]["raf"], row["full"]["faithfulness"]) == (1.0, 1.0, 1.0)
    for key in ("accuracy", "eligibility", "factuality", "raf", "faithfulness"):
        assert row["part"][key] == pytest.approx(2 / 6) and row["part"][f"{key}_n"] == 6, key
    assert row["part"]["context_relevance"] == pytest.approx(row["full"]["context_relevance"] * 2 / 6)
    garage = data["metrics"]["part"]["garage"]
    assert garage["aggregate"]["deflection_fp"]["value"] == pytest.approx(4 / 6)  # declined answerable questions
    assert garage["counts"]["unanswered"] == 4 and data["metrics"]["part"]["ragas"]["counts"]["unanswered"] == 4
    # 7 judge prompts per distinct answer: part's 2 answers are full's (from the cache), its 4 missing ones are
    # never sent to a judge
    assert eval_server.count("chat") - before == 6 * 7
