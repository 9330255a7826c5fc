"""The report page a researcher reads: fits a 1,280 px window in headless Chromium, readable columns with
their description and n, ties share a rank, every aggregate and count on the page, warnings (self-judging,
weak judge, surrogate on few models) next to the numbers."""
import json
import re
import shutil
import subprocess

import pytest

from babelrag.evaluators.execution import run_evaluation
from babelrag.evaluators.report import ReportInputs, leaderboard_rows, run_info, write_report
from babelrag.evaluators.settings import EvalSettings
from babelrag.llm.client import LLMRunner
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.stats import Estimate
from babelrag.testing.scripted_server import ScriptedServer
from tests.test_eval_runner import _instances, brain


def test_ties_share_a_rank():
    e = lambda v: Estimate(v, v, v, 4)  # noqa: E731
    rows = leaderboard_rows({"a": {"accuracy": e(0.5)}, "b": {"accuracy": e(0.5)}, "c": {"accuracy": e(0.2)},
                             "d": {"accuracy": Estimate(float("nan"), float("nan"), float("nan"), 0)}}, "accuracy")
    assert [(r["model"], r["rank"]) for r in rows] == [("a", 1), ("b", 1), ("c", 3), ("d", 4)]
    assert rows[0]["accuracy_n"] == 4


def _wide_inputs():
    models = [f"organisation/very-long-model-name-{k}-instruct-2025" for k in range(6)]
    cols = ["accuracy", "citation_precision", "citation_recall", "citation_f1", "random_citation_precision",
            "random_citation_recall", "random_citation_f1", "eligibility", "factuality", "raf", "faithfulness",
            "answer_relevance", "context_relevance", "language_correct", "bt_rating"]
    scores = {m: {c: Estimate(0.5 + k / 100, 0.4, 0.6, 12) for c in cols} for k, m in enumerate(models)}
    scores[models[1]]["accuracy"] = scores[models[0]]["accuracy"]  # a tie
    groups = [f"{s}/{lang}" for s in ("mono", "multi", "mono+EQ", "mono+ES") for lang in ("de", "es", "zh", "ar")]
    breakdown = {m: {g: Estimate(0.25, 0.1, 0.4, 3) for g in groups} for m in models}
    garage = {"aggregate": {k: {"value": 0.0 if k == "deflection_tp" else 0.8, "ci_low": 0.7, "ci_high": 0.9, "n": 5}
                            for k in ("eligibility", "deflection_tp", "deflection_fp", "attribution_precision",
                                      "attribution_recall", "attribution_f1")},
              "counts": {"items": 5, "deflection_questions": 1}}
    extra = {"counts": {m: {"answers": 12, "generation_failed": 0} for m in models},
             "metrics": {m: {"garage": garage} for m in models},
             "judging": {"self_judged": {models[0]: [models[0]]}, "weak_judges": {}}}
    return ReportInputs(title="wide", info=run_info("bench", "1.0", split="test", configs=["mono-de", "multi-de"]),
                        scores=scores, sort_by="accuracy",
                        # each metric's own view: XRAG's breakdown and per-language accuracy, MIRAGE's
                        # surrogate section (with the few-models warning)
                        views={"xrag": {"breakdown": breakdown,
                                        "accuracy_by_language": {m: {"de": Estimate(0.0, 0.0, 0.0, 3)} for m in models}},
                               "mirage": {"surrogate": {"target": {m: 1.0 for m in models[:3]}, "kendall_tau": 1.0}}},
                        extra=extra, columns={c: f"{c} measured on every item" for c in cols})


def _chromium_layout(report, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium not installed: run scripts/install_system_deps.sh")
    probe = ("<script>window.addEventListener('load', () => document.body.setAttribute('data-probe', JSON.stringify("
             "{viewport: window.innerWidth, doc: document.documentElement.scrollWidth, "
             "boxes: [...document.querySelectorAll('.table-wrap')].map(b => b.getBoundingClientRect().right)})));"
             "</script>")
    page = tmp_path / "probe.html"
    page.write_text(report.read_text().replace("</body>", probe + "</body>"))
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
                           f"--user-data-dir={tmp_path / 'profile'}", "--host-resolver-rules=MAP * ~NOTFOUND",
                           "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=180)
    m = re.search(r'data-probe="([^"]*)"', proc.stdout)
    assert m, proc.stderr[-2000:]
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_wide_report_fits_1280_px_with_readable_columns_and_every_aggregate(tmp_path):
    paths = write_report(tmp_path, _wide_inputs())
    html = paths["html"].read_text()
    layout = _chromium_layout(paths["html"], tmp_path)
    assert layout["viewport"] == 1280 and layout["doc"] <= layout["viewport"], layout
    assert layout["boxes"] and max(layout["boxes"]) <= layout["viewport"], layout
    assert "<th>Citation F1</th>" in html and "citation_f1</th>" not in html
    assert "<td>Citation F1</td><td>citation_f1 measured on every item</td><td>12</td>" in html  # legend with n
    assert "<td>garage</td><td>Attribution precision</td>" in html and "<td>garage</td><td>Deflection TP</td>" in html
    assert "garage: Deflection questions" in html and "Generation failed" in html  # counts on the page
    assert "Kendall τ rests on 3 models (fewer than 5)" in html
    assert "self-judged</span>" in html and "was judged by itself" in html
    assert "split: test" in html and "configs: mono-de, multi-de" in html
    ranks = [r["rank"] for r in json.loads(paths["json"].read_text())["leaderboard"]]
    assert ranks == [1, 2, 3, 4, 5, 5]  # the two models at 0.50 share rank 5


def test_self_judging_and_weak_judge_are_flagged_in_results_and_first_lines(tmp_path):
    def weak_judge(body):  # the embedded model's name, judging like the scripted judge
        if body["model"] == "qwen2.5-coder-0.5b-instruct":
            body = {**body, "model": "judge-a"}
        return brain(body)

    with ScriptedServer(weak_judge) as srv:
        ep = dict(base_url=srv.base_url, timeout_s=2, max_retries=0)
        runner = LLMRunner(LLMSettings(endpoints={
            "good": EndpointConfig(model="served-good", **ep),
            "tiny": EndpointConfig(model="qwen2.5-coder-0.5b-instruct", **ep)}, progress=False), tmp_path / "c")
        paths = run_evaluation(runner, _instances(), ["good"], ["tiny", "good"], tmp_path / "eval",
                               EvalSettings(rounds=20, notice="Demo: not model quality."))
    data = json.loads(paths["json"].read_text())
    assert data["judging"] == {"self_judged": {"good": ["good"]}, "weak_judges": {"tiny": "the embedded 0.5B model"}}
    assert data["notice"] == "Demo: not model quality." and data["run"]["settings"]["notice"] == data["notice"]
    md = paths["markdown"].read_text().splitlines()
    assert md[2] == "> **Warning:** Demo: not model quality."
    assert md[4].startswith("> **Warning:** The judge(s) tiny (the embedded 0.5B model) are known to be weak: "
                            "these figures show that the pipeline runs, not model quality.")
    assert "| good (self-judged) (weak judge) |" in paths["markdown"].read_text()
    html = paths["html"].read_text()
    assert html.index("not model quality") < html.index("<h2>Leaderboard</h2>")


def test_a_report_view_is_one_module_in_the_registry(tmp_path):
    from babelrag.evaluators.report_views import VIEWS

    import tests.helpers.tiny_view  # noqa: F401 - registers "model_list" the documented way

    try:
        paths = write_report(tmp_path, _wide_inputs())
        assert '<p id="model-list">models: organisation/very-long-model-name-5' in paths["html"].read_text()
        assert VIEWS.names()[-1] == "model_list"
    finally:
        VIEWS.forget("model_list")
    assert "model-list" not in write_report(tmp_path / "again", _wide_inputs())["html"].read_text()


def test_zero_bars_are_labelled_so_a_zero_is_seen(monkeypatch):
    from babelrag.evaluators import report

    figs = []
    monkeypatch.setattr(report, "_figure_png", lambda fig: figs.append(fig) or b"")
    report.plot_language_accuracy({"a": {"de": Estimate(0.0, 0.0, 0.0, 3), "zh": Estimate(0.5, 0.2, 0.8, 3)},
                                   "b": {"de": Estimate(1.0, 1.0, 1.0, 3)}})
    labels = sorted(t.get_text() for t in figs[0].axes[0].texts)
    assert labels == ["", "0.00", "0.50", "1.00"]  # b has no zh bar: no label
    import matplotlib.pyplot as plt

    plt.close(figs[0])


def test_the_per_answer_view_fits_1280_px_and_shows_each_answer_with_its_verdicts(tmp_path):
    from babelrag.records import AnswerRecord

    inputs = _wide_inputs()
    model = sorted(inputs.scores)[0]
    long = "Brüssel " + "x" * 400 + " [1]"  # one unbroken word wider than the window
    inputs.answers = [
        AnswerRecord(id=f"{model}:i1", instance_id="i1", qa_id="q1", setting="mono", language="de", model=model,
                     question="Wo wurde die Einigung erzielt?", gold_answer="In Brüssel.", answer=long),
        AnswerRecord(id=f"{model}:i2", instance_id="i2", qa_id="q2", setting="mono", language="de", model=model,
                     question="Wer verhandelte?", gold_answer="Die EU.", ok=False, error="not_found: 404")]
    inputs.extra["metrics"][model]["xrag"] = {"items": [
        {"query_id": "i1", "correct": True, "language": "de", "detected_language": "de", "language_correct": True,
         "votes_correct": 2, "votes_incorrect": 1, "answered": True},
        {"query_id": "i2", "correct": False, "language": "de", "detected_language": None, "language_correct": False,
         "answered": False}]}
    paths = write_report(tmp_path, inputs)
    html = paths["html"].read_text()
    layout = _chromium_layout(paths["html"], tmp_path)
    assert layout["doc"] <= layout["viewport"] == 1280, layout
    assert "<h2>Answers</h2>" in html and html.count("<details>") == 2
    assert "Wo wurde die Einigung erzielt?" in html and "In Brüssel." in html and "x" * 400 in html
    assert "(2 of 3 judges said correct)" in html and "language de" in html
    assert "not answered: not_found: 404" in html and "(no answer; no judge asked)" in html
