"""A judge call that got no answer is not a verdict, through the real CLI and the scripted server's faults:
the report says how many (results.json ``judge_failures``, per-model ``judge_calls_failed``, XRAG's
``judge_failed``, a warning), the run exits 3 naming the count, and a plain re-run sends exactly the failed
calls again (every verdict that came is answered from the LLM cache). A judge that answered without a usable
verdict stays ``no_verdict``: final, exit 0, counted, and not paid for again by a re-run. Before: both were
``no_verdict`` and the run exited 0."""
import pytest

from babelrag.testing.scripted_server import Fault, ScriptedServer
from tests.test_eval_run_contract import _cli, released, strict_load
from tests.test_eval_runner import QUESTION, _instances, brain


def _faulty(faults):
    """``brain``, except that a judge prompt matching a (marker, question) pair of ``faults`` gets that pair's
    reply (a ``Fault``, or an unusable text)."""
    def handler(body):
        user = body["messages"][-1]["content"]
        if body["model"].startswith("judge"):
            for (marker, question), reply in faults.items():
                if marker in user and question in user:
                    return reply
        return brain(body)
    return handler


def _run_twice(srv, release, cfg, out):
    """``evaluate run`` twice, each exiting 0: per run, the requests ``srv`` had received by its end and the
    results.json it wrote."""
    runs = []
    for _ in range(2):
        res = _cli("evaluate", "run", release, "-c", cfg, "--out", out, "--rounds", "20")
        assert res.returncode == 0, res.stdout + res.stderr
        runs.append((len(srv.log), strict_load(out / "results.json")))
    return runs


CANDIDATE = "Candidate answer:"  # the XRAG judge and MIRAGE's answer-overlap prompts
DEFLECTION = '{"deflected"'  # GaRAGe's deflection judge prompt


def test_judge_calls_without_answer_exit_3_with_the_count_and_a_rerun_retries_only_them(tmp_path):
    faults = {(CANDIDATE, f"{QUESTION['de']} (0)"): Fault("500"), (DEFLECTION, f"{QUESTION['zh']} (1)"): Fault("429")}
    with ScriptedServer(_faulty(faults)) as srv:
        release, cfg = released(tmp_path, srv, _instances()[:4], metrics=["xrag", "garage", "mirage"])
        res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "o", "--rounds", "20")
        assert res.returncode == 3, res.stdout + res.stderr
        said = " ".join(res.stderr.split())  # the console wraps long lines
        assert ("incomplete: 3 judge call(s) got no answer (eval.garage.deflection: 1 rate_limit; "
                "eval.mirage_overlap: 1 server_error; eval.xrag.judge.judge-1: 1 server_error)") in said
        assert "A plain re-run retries exactly the failed calls" in res.stderr and "Traceback" not in res.stderr
        out = strict_load(tmp_path / "o" / "results.json")
        assert out["judge_failures"]["failed"] == 3
        assert out["judge_failures"]["by_call"]["eval.xrag.judge.judge-1"]["judge"] == "judge-1"
        assert out["counts"]["good"]["judge_calls_failed"] == 3
        xrag = out["metrics"]["good"]["xrag"]
        assert xrag["counts"]["judge_failed"] == 1 and xrag["counts"]["no_verdict"] == 0  # not a verdict at all
        assert xrag["aggregate"]["accuracy"]["n"] == 3
        assert any("3 judge call(s) got no answer" in w for w in out["warnings"])
        assert "3 judge call(s) got no answer" in (tmp_path / "o" / "report.html").read_text()

        faults.clear()  # the judge recovered: a plain re-run sends exactly the three failed calls again
        first = list(srv.log)
        res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "o", "--rounds", "20")
        assert res.returncode == 0, res.stdout + res.stderr
        again = srv.log[len(first):]
        answered = {e["key"] for e in first if e["status"] == 200}
        assert len(again) == 3 and not answered & {e["key"] for e in again}
        assert {e["key"] for e in again} == {e["key"] for e in first if e["status"] in (429, 500)}
    out = strict_load(tmp_path / "o" / "results.json")
    assert out["judge_failures"] == {"failed": 0, "by_call": {}} and out["counts"]["good"]["judge_calls_failed"] == 0
    assert out["metrics"]["good"]["xrag"]["aggregate"]["accuracy"]["n"] == 4 and not out["warnings"]


def test_a_judge_answering_without_a_usable_verdict_is_final_counted_and_not_paid_for_again(tmp_path):
    """A judge reply with no usable verdict (even after the repair re-ask) stays ``no_verdict``: final, exit 0,
    counted in results.json's ``judge_unusable`` and a warning. A plain re-run reports the same and sends no
    request (before: it sent that judge call and its repair again, for the same reply); ``--retry-unreadable``
    sends exactly that call again."""
    unusable = (CANDIDATE, f"{QUESTION['de']} (0)")
    faults = {unusable: "I would rather not say."}
    with ScriptedServer(_faulty(faults)) as srv:
        release, cfg = released(tmp_path, srv, _instances()[:4], metrics=["xrag"])
        (sent, out), (resent, again) = _run_twice(srv, release, cfg, tmp_path / "o")
        assert resent == sent  # the plain re-run paid for nothing
        for run, cached in ((out, 0), (again, 1)):
            xrag = run["metrics"]["good"]["xrag"]
            assert xrag["counts"]["no_verdict"] == 1 and xrag["counts"]["judge_failed"] == 0
            assert run["judge_failures"]["failed"] == 0
            assert run["judge_unusable"]["calls"] == 1 and run["judge_unusable"]["cached"] == cached
            row = run["judge_unusable"]["by_call"]["eval.xrag.judge.judge-1"]
            assert row["calls"] == 1 and set(row["reasons"]) <= {"invalid_json", "schema"}
            assert any("1 judge call(s) gave no usable verdict" in w and "--retry-unreadable" in w
                       for w in run["warnings"])

        faults.clear()  # the judge would now answer usably: asked again only with --retry-unreadable
        res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "o", "--rounds", "20",
                   "--retry-unreadable")
        assert res.returncode == 0, res.stdout + res.stderr
        retried = srv.log[resent:]
        assert len(retried) == 1 and CANDIDATE in retried[0]["last_user"]
        assert f"{QUESTION['de']} (0)" in retried[0]["last_user"]
    out = strict_load(tmp_path / "o" / "results.json")
    assert out["metrics"]["good"]["xrag"]["counts"]["no_verdict"] == 0
    assert out["judge_unusable"] == {"calls": 0, "cached": 0, "by_call": {}} and not out["warnings"]


def _unusable_in(faults, asked):
    """``brain``, except that a judge conversation whose messages hold every marker of a key of ``faults`` gets
    that key's reply on its first ask and on the repair re-ask (the repair prompt alone names no marker); each
    first ask is appended to ``asked``."""
    def handler(body):
        said = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        if body["model"].startswith("judge"):
            for markers, reply in faults.items():
                if all(m in said for m in markers):
                    if all(m in body["messages"][-1]["content"] for m in markers):
                        asked.append(markers)
                    return reply
        return brain(body)
    return handler


ZH = f"{QUESTION['zh']} (0)"
SUPPORT_ZH = ("Sentences:", "布鲁塞尔")  # the support judge on the zh answer (no question in that prompt)


@pytest.mark.parametrize("metric, markers, reply, stage, reason, key", [
    # a support reply with no list for the answer's one sentence: misaligned, not "no sentence supported"
    ("garage", SUPPORT_ZH, '{"support": []}', "eval.garage.support", "misaligned", "unadjusted_factuality"),
    ("mirage", SUPPORT_ZH, '{"support": [[], []]}', "eval.mirage.support", "misaligned", "support"),
    ("mirage", ("Reference answer:", ZH), "Fünf von fünf.", "eval.mirage_overlap", "invalid_json", "answer_overlap"),
    # no essential sentence read from the reply: not "no context sentence is relevant" (0)
    ("ragas", ("copied from the context", ZH), "I cannot tell.", "eval.ragas.context", "invalid_json",
     "context_relevance"),
    ("ragas", ('"statements"', ZH), '{"statements": "all of them"}', "eval.ragas.statements", "schema",
     "faithfulness"),
])
def test_an_unusable_judge_reply_is_reported_left_out_of_the_metric_and_not_asked_again(
        tmp_path, metric, markers, reply, stage, reason, key):
    """Every metric, not only XRAG: a judge reply still unusable after the repair re-ask is counted in
    results.json ``judge_unusable`` (its stage and reason), the metric's value for that answer is undefined
    (left out of the mean, counted as ``<key>_undefined``: neither 0 nor 1), and a second ``evaluate run`` sends
    no request for it. Before: GaRAGe scored a misaligned support reply as "no sentence supported" (0), MIRAGE
    took it as a verdict (not counted), and Ragas scored an unreadable context reply as context relevance 0."""
    asked = []
    with ScriptedServer(_unusable_in({markers: reply}, asked)) as srv:
        release, cfg = released(tmp_path, srv, _instances()[:2], metrics=[metric])  # i0de, i0zh
        (sent, first), (resent, again) = _run_twice(srv, release, cfg, tmp_path / "o")
    assert len(asked) == 1  # asked once, by the first run (its repair re-ask names no marker)
    assert resent == sent  # the second run asked nothing: the unusable reply is the call's final outcome
    for out, cached in ((first, 0), (again, 1)):
        assert out["judge_unusable"]["calls"] == 1 and out["judge_unusable"]["cached"] == cached
        assert out["judge_unusable"]["by_call"][stage]["reasons"] == {reason: 1}
        assert out["judge_failures"]["failed"] == 0
        scored = out["metrics"]["good"][metric]
        assert scored["aggregate"][key]["n"] == 1  # the de answer only
        assert scored["counts"][f"{key}_undefined"] == 1
        assert any("1 judge call(s) gave no usable verdict" in w for w in out["warnings"])
