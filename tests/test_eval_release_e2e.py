"""End to end on a real release folder: `babelrag release build` output (the release tests' `demo-bench`
build) -> `babelrag evaluate run` with two models served by the scripted endpoint -> leaderboard order,
Bradley-Terry order, and an HTML report that opens offline in a browser.

The release is written by the real release builder from the release fixtures (the sample-corpus demo
build needs the whole LLM pipeline, so it is not used here).
"""
import json
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from babelrag.evaluators.answers import read_answers
from babelrag.evaluators.release_reader import load_instances
from babelrag.testing.scripted_server import ScriptedServer
from tests.helpers.release_fixtures import make_build, make_config

UNSURE = "I am not sure, it may have been somewhere in Europe [1]."


def _line(user, name):
    m = re.search(rf"^{name}: (.*)$", user, re.M)
    return m.group(1) if m else ""


def release_brain(instances):
    """Scripted models and judge for a release: ``served-good`` answers each question with its gold answer
    and cites the supporting documents; ``served-weak`` hedges in English; judges compare with the gold."""
    gold = {i.question: i.answer for i in instances}
    supporting: dict[str, set[str]] = defaultdict(set)
    for i in instances:
        supporting[i.question] |= {d.title for d in i.documents if d.role == "supporting"}
    golds = set(gold.values())

    def brain(body):
        user = body["messages"][-1]["content"]
        model = body["model"]
        if model.startswith("judge"):
            if "Answer A:" in user:  # pairwise: prefer the answer that contains the reference
                ref = _line(user, "Reference answer")
                a, b = ref in _line(user, "Answer A"), ref in _line(user, "Answer B")
                return {"verdict": "tie" if a == b else ("A" if a else "B"), "reason": "scripted"}
            if "Gold answer:" in user:  # XRAG panel
                return {"correct": _line(user, "Gold answer") in _line(user, "Candidate answer"), "reason": "x"}
            if "<integer 1-5>" in user:  # fluency / overlap
                text = _line(user, "Candidate answer") or _line(user, "Answer")
                return {"score": 5 if any(g in text for g in golds) else 2}
            if "Sentences:" in user:  # support
                sents = re.findall(r"^\d+\. (.*)$", user, re.M)
                return {"support": [["1"] if any(s in g for g in golds) else [] for s in sents]}
            return "unexpected prompt"
        question = _line(user, "Question")
        if model == "served-good":
            cites = [n for n, title in re.findall(r"^\[(\d+)\] (.*)$", user, re.M) if title in supporting[question]]
            return gold[question] + "".join(f"[{n}]" for n in cites)
        return UNSURE

    return brain


@pytest.fixture(scope="module")
def release_folder(tmp_path_factory):
    from babelrag.release.build import build_release

    tmp = tmp_path_factory.mktemp("release")
    make_build(tmp / "build")
    return Path(build_release(make_config(tmp)).folder)


def eval_config(tmp_path, llm_url, judges=("judge-1", "judge-2"), metrics=("xrag", "citations", "mirage"),
                **evaluate):
    """A config with scripted endpoints good / weak / judge-1 / judge-2 on ``llm_url``."""
    import yaml

    ep = {"base_url": llm_url, "timeout_s": 5, "max_retries": 1}
    cfg = {
        "project": {"name": "t", "build_dir": str(tmp_path / "build"), "seed": 5},
        "llm": {"endpoints": {"good": {**ep, "model": "served-good"}, "weak": {**ep, "model": "served-weak"},
                              "judge-1": {**ep, "model": "judge-a"}, "judge-2": {**ep, "model": "judge-b"}},
                "default_endpoint": "good", "progress": False, "cache_dir": str(tmp_path / "llm-cache")},
        "evaluate": {"models": ["weak", "good"], "judges": list(judges), "metrics": list(metrics), **evaluate},
    }
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def assert_good_beats_weak(data, instances, dataset):
    """results.json of the scripted ``good`` and ``weak`` models (release_brain) on ``instances``."""
    board = data["leaderboard"]
    assert [r["model"] for r in board] == ["good", "weak"]
    assert board[0]["accuracy"] == 1.0 and board[1]["accuracy"] == 0.0
    assert board[0]["citation_f1"] == 1.0 and board[0]["language_correct"] == 1.0
    # the weak model answers (hedges) in English: right language only on the English questions
    n_en = sum(i.language == "en" for i in instances)
    assert board[1]["language_correct"] == pytest.approx(n_en / len(instances))
    assert board[0]["bt_rating"] > board[1]["bt_rating"]
    assert [r["model"] for r in data["bradley_terry"]] == ["good", "weak"]
    assert data["battles"]["n"] == 2 * len(instances) and data["battles"]["inconsistent_pairs"] == 0
    assert data["run"]["dataset"] == dataset and data["run"]["dataset_revision"].startswith("0.1.0+")
    assert set(data["breakdown"]["good"]) == {f"{i.setting}/{i.language}" for i in instances}


def test_two_scripted_models_on_the_release(tmp_path, release_folder):
    from typer.testing import CliRunner

    from babelrag.cli import app

    instances = load_instances(release_folder)
    assert len(instances) == 17 and {i.setting for i in instances} == {"mono", "multi", "en-baseline",
                                                                       "no-retrieval"}
    with ScriptedServer(release_brain(instances)) as srv:
        res = CliRunner().invoke(app, ["evaluate", "run", str(release_folder), "-c", str(eval_config(tmp_path, srv.base_url)),
                                       "--out", str(tmp_path / "eval"), "--rounds", "100"])
        assert res.exit_code == 0, res.output
    out = tmp_path / "eval"
    data = json.loads((out / "results.json").read_text())
    scored = load_instances(release_folder, split="test")  # the default split; dev rows are never mixed in
    assert data["run"]["split"] == "test" and 0 < len(scored) < len(instances)
    assert_good_beats_weak(data, scored, "demo-bench")
    answers = read_answers(out / "answers.jsonl")
    assert len(answers) == 2 * len(scored) and all(a.dataset_version.startswith("0.1.0+") for a in answers)
    md = (out / "leaderboard.md").read_text()
    assert md.index("| good |") < md.index("| weak |")
    _html_opens_offline(out / "report.html", tmp_path, expected_images=4)


def _html_opens_offline(report: Path, tmp_path: Path, expected_images: int) -> None:
    """Static check (no external reference) + headless Chromium with all network blocked: every image decodes."""
    page = report.read_text()
    assert page.count("data:image/png;base64,") == expected_images
    refs = re.findall(r"\b(?:src|href)\s*=\s*[\"']?([^\"'\s>]+)", page)
    assert len(refs) == expected_images and all(r.startswith(("data:", "#")) for r in refs)
    assert not re.search(r"url\(|@import|<link|<script|<iframe", page, re.I)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium not installed: run scripts/install_system_deps.sh (static checks passed)")
    alone = tmp_path / "alone"
    alone.mkdir()
    probe = ("<script>window.addEventListener('load', () => document.body.setAttribute('data-probe', JSON.stringify("
             "{imgs: [...document.images].map(i => [i.complete, i.naturalWidth, i.naturalHeight]), "
             "fetched: performance.getEntriesByType('resource').map(e => e.name)})));</script>")
    (alone / "report.html").write_text(page.replace("</body>", probe + "</body>"))  # a copy, no plots/ beside it
    profile = tmp_path / "chromium-profile"
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", "--no-first-run",
                           f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND",
                           "--proxy-server=http://127.0.0.1:9", "--virtual-time-budget=5000",
                           "--dump-dom", (alone / "report.html").as_uri()],
                          capture_output=True, text=True, timeout=180)
    m = re.search(r'data-probe="([^"]*)"', proc.stdout)
    assert m, proc.stderr[-2000:]
    probe_data = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert len(probe_data["imgs"]) == expected_images
    assert all(ok and w > 100 and h > 100 for ok, w, h in probe_data["imgs"]), probe_data
    assert probe_data["fetched"] == []  # nothing was requested from anywhere


def test_a_metric_with_its_own_view_plugs_in_by_one_module(tmp_path, release_folder):
    """A toy metric defined and registered in one module (tests/helpers/tiny_metric.py) runs in ``evaluate
    run`` on a release: its scores land in results.json and the leaderboard, its view in results.json
    (``views``), report.html and leaderboard.md."""
    from typer.testing import CliRunner

    import tests.helpers.tiny_metric  # noqa: F401  (registers answer_words)
    from babelrag.cli import app
    from babelrag.evaluators import registry

    instances = load_instances(release_folder)
    try:
        with ScriptedServer(release_brain(instances)) as srv:
            res = CliRunner().invoke(app, ["evaluate", "run", str(release_folder), "-c",
                                           str(eval_config(tmp_path, srv.base_url, metrics=("answer_words",))),
                                           "--out", str(tmp_path / "eval"), "--rounds", "20"])
            assert res.exit_code == 0, res.output
    finally:
        registry.METRICS.forget("answer_words")
    out = tmp_path / "eval"
    data = json.loads((out / "results.json").read_text())
    answers = read_answers(out / "answers.jsonl")
    for model in ("good", "weak"):
        words = [len(a.answer.split()) for a in answers if a.model == model]
        row = next(r for r in data["leaderboard"] if r["model"] == model)
        assert row["answer_words"] == pytest.approx(sum(words) / len(words))
        assert data["metrics"][model]["answer_words"]["aggregate"]["words"]["value"] == row["answer_words"]
        assert data["views"]["answer_words"]["longest"][model]["words"] == max(words)
    page = (out / "report.html").read_text()
    assert '<h2 id="answer-words">Longest answers</h2>' in page
    assert page.index("<h2>Leaderboard</h2>") < page.index('id="answer-words"')
    assert f"- weak: {len(UNSURE.split())} words" in (out / "leaderboard.md").read_text()
    # its own per-answer column, next to XRAG's (whose verdict still marks each answer and is judge_verdict)
    assert "<th>answer length</th>" in page and "<th>judge panel and language</th>" in page
    for a in answers:
        assert f'<span class="tiny-words">{len(a.answer.split())} words</span>' in page
    assert "judged correct in the right language" in page and "short enough" not in page
    assert {a.judge_verdict for a in answers} <= {"correct", "incorrect"} and any(a.judge_verdict for a in answers)
