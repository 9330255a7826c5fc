"""A local Argilla server on a shared host, and pushes that never lose data (issue 24: S1-S3, B2-B4).

One real argilla-server 2.8.0 whose home sits in a world-readable folder (as a shared lab server's
``~/.local/share`` may). A second local user is played by ``nobody`` (``setpriv``; the tests run as
root): it must not read the database, talk to Redis, or find a secret in any process's command line.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from babelrag.annotate import argilla_api as api
from babelrag.annotate import projects, push as ps, samples
from babelrag.annotate.settings import AnnotateSettings, ServerSettings
from babelrag.annotate.server.process import ArgillaServer
from babelrag.errors import InputError

pytestmark = pytest.mark.argilla
NOBODY = 65534

# Runs as nobody with the system python; the secrets come on stdin (never on a command line).
AS_NOBODY = r'''
import json, os, socket, sys
secrets, db, home, redis_port = json.load(sys.stdin)
out = {"uid": os.getuid()}
for what, fn in (("read_db", lambda: open(db, "rb").read(16)), ("list_home", lambda: os.listdir(home))):
    try:
        fn()
        out[what] = "allowed"
    except PermissionError:
        out[what] = "denied"
def redis(command):
    with socket.create_connection(("127.0.0.1", redis_port), timeout=5) as s:
        s.sendall(command)
        return s.recv(200).decode(errors="replace")
out["redis_ping"] = redis(b"PING\r\n")
out["redis_enqueue"] = redis(b"RPUSH rq:queue:default job\r\n")
seen, leaks = 0, []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read().decode(errors="replace")
    except OSError:
        continue
    seen += 1
    leaks += [pid for s in secrets if s in cmd]
out["processes_seen"], out["leaks"] = seen, leaks
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def shared_host():
    """(server, settings, client) with the home in a 0755 folder; an old 0644 log left there beforehand."""
    parent = Path(tempfile.mkdtemp(prefix="babelrag-shared-"))
    os.chmod(parent, 0o755)
    home = parent / "home"
    (home / "logs").mkdir(parents=True)
    os.chmod(home, 0o755)
    old = home / "logs" / "old.log"
    old.write_text("from an earlier version\n")
    os.chmod(old, 0o644)
    mine = home / "notes.txt"  # a user's own file in the folder they chose: left as it is (the home is 0700)
    mine.write_text("mine\n")
    os.chmod(mine, 0o644)
    settings = AnnotateSettings(users=[{"username": "ann1", "password": "ann1-password"}], min_submitted=1,
                                server=ServerSettings(home=home, port=0))
    argv: list[list[str]] = []  # every command line the supervisor starts (the owner's creation included)
    real_run, real_popen = subprocess.run, subprocess.Popen

    def run_spy(args, *a, **k):
        argv.append([str(x) for x in args])
        return real_run(args, *a, **k)

    class PopenSpy(real_popen):  # type: ignore[misc,valid-type]
        def __init__(self, args, *a, **k):
            argv.append([str(x) for x in args])
            super().__init__(args, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(subprocess, "run", run_spy)
        mp.setattr(subprocess, "Popen", PopenSpy)
        server = ArgillaServer(settings.server).start()
    server.argv_seen = argv
    os.environ.pop("ARGILLA_API_URL", None)
    try:
        yield server, settings, api.client(api.resolve_target(settings))
    finally:
        server.stop()
        shutil.rmtree(parent, ignore_errors=True)


def test_home_is_private_and_every_file_in_it_too(shared_host):
    server, _, _ = shared_host
    home = server.home
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    modes = {}
    for root, dirs, files in os.walk(home):
        for d in dirs:
            modes[os.path.join(root, d)] = stat.S_IMODE(os.stat(os.path.join(root, d)).st_mode)
        for f in files:
            modes[os.path.join(root, f)] = stat.S_IMODE(os.stat(os.path.join(root, f)).st_mode)
    assert str(home / "argilla.db") in modes and str(home / "credentials.json") in modes
    assert str(home / "redis.conf") in modes and str(home / "logs" / "old.log") in modes
    loose = {p: oct(m) for p, m in modes.items() if m & 0o077}
    assert loose == {str(home / "notes.txt"): "0o644"}
    # what is at stake: the database holds the owner's API key in plain text
    assert server.api_key.encode() in (home / "argilla.db").read_bytes()


def test_nobody_cannot_read_the_db_talk_to_redis_or_find_a_secret_in_proc(shared_host):
    if shutil.which("setpriv") is None or os.getuid() != 0:
        pytest.skip("needs root and setpriv to play a second local user")
    server, settings, client = shared_host
    ps.push(client, settings, "answer_judgement",
            projects.build_records("answer_judgement", samples.model_answers(2), settings))  # ensure_users ran
    secrets = [server.api_key, server.credentials["password"], server.redis_password, "ann1-password"]
    assert all(len(s) >= 12 for s in secrets)
    done = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "/usr/bin/python3", "-c", AS_NOBODY],
        input=json.dumps([secrets, str(server.home / "argilla.db"), str(server.home), server.redis_port]),
        capture_output=True, text=True, timeout=60, cwd="/",
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["uid"] == NOBODY
    assert seen["read_db"] == "denied" and seen["list_home"] == "denied"
    assert seen["redis_ping"].startswith("-NOAUTH") and seen["redis_enqueue"].startswith("-NOAUTH")
    assert seen["processes_seen"] > 5 and seen["leaks"] == []
    # the short-lived ones too (migration, the owner's creation), which /proc shows only while they run
    started = [" ".join(a) for a in server.argv_seen]
    assert any("create-owner" in a for a in started) and any("redis.conf" in a for a in started)
    assert [a for a in started if any(s in a for s in secrets)] == []
    # the owner still reaches Redis with the password (the queue works: pushes above went through the worker)
    with socket.create_connection(("127.0.0.1", server.redis_port), timeout=5) as sock:
        sock.sendall(f"AUTH {server.redis_password}\r\nPING\r\n".encode())
        reply = b""
        while b"PONG" not in reply and len(reply) < 100:
            chunk = sock.recv(100)
            if not chunk:
                break
            reply += chunk
    assert reply.startswith(b"+OK") and b"+PONG" in reply


def _answers(n: int) -> list:
    return projects.build_records("answer_judgement", samples.model_answers(n), AnnotateSettings())


def test_bad_input_creates_nothing_on_the_server(shared_host):
    _, settings, client = shared_host
    s = settings.model_copy(update={"dataset_prefix": "bad", "workspace": "badws"})
    records = _answers(3)
    records[0].fields["model_answer"] = "Lisbon \ud800"
    records[1].fields["question"] = ""
    records[2].id = records[0].id
    with pytest.raises(InputError) as err:
        ps.push(client, s, "answer_judgement", records, source="answers.jsonl")
    assert "nothing was pushed" in str(err.value) and "record ans1:" in str(err.value) and "record ans2:" in str(err.value)
    assert api.get_dataset(client, "bad-answer-judgement", "badws") is None
    assert client.workspaces("badws") is None


def test_changed_records_are_replaced_only_with_update(shared_host):
    _, settings, client = shared_host
    s = settings.model_copy(update={"dataset_prefix": "upd"})
    first = ps.push(client, s, "answer_judgement", _answers(3))
    assert (first.new, first.updated, first.unchanged) == (3, 0, 0)
    again = ps.push(client, s, "answer_judgement", _answers(3))
    assert (again.new, again.updated, again.unchanged) == (0, 0, 3)
    changed = _answers(3)
    changed[1].fields["model_answer"] = "Porto, after all"
    with pytest.raises(InputError, match=r"record ans2: id: already in the dataset with different content; pass --update"):
        ps.push(client, s, "answer_judgement", changed)
    ds = api.find_dataset(client, s, "answer_judgement")
    assert {r.id: r.fields["model_answer"] for r in ds.records}["ans2"] == "Porto"
    done = ps.push(client, s, "answer_judgement", changed, update=True)
    assert (done.new, done.updated, done.unchanged) == (0, 1, 2)
    assert {r.id: r.fields["model_answer"] for r in ds.records}["ans2"] == "Porto, after all"


def test_a_push_that_fails_midway_names_what_landed_and_a_rerun_resumes_without_duplicates(shared_host):
    server, settings, client = shared_host
    s = settings.model_copy(update={"dataset_prefix": "midway"})
    records = _answers(6)

    def kill_api_after_first_batch(n: int, landed: list[str]) -> None:
        if n == 1:
            proc = server._procs["server"]
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(15)

    with pytest.raises(ps.PartialPush) as err:
        ps.push(client, s, "answer_judgement", records, batch_size=2, after_batch=kill_api_after_first_batch)
    assert err.value.landed == ["ans1", "ans2"]
    assert "2 of 6 records landed before it failed (ans1, ans2)" in str(err.value) and "Re-run" in str(err.value)
    server.stop()
    server.start()  # same home and port
    client = api.client(api.resolve_target(settings))
    done = ps.push(client, s, "answer_judgement", records, batch_size=2)
    assert (done.new, done.unchanged) == (4, 2)
    ids = [r.id for r in api.find_dataset(client, s, "answer_judgement").records]
    assert sorted(ids) == [f"ans{i}" for i in range(1, 7)]


def test_a_dataset_from_an_older_version_without_the_hints_field_is_named_before_anything_is_sent(shared_host):
    import argilla as rg

    _, settings, client = shared_host
    s = settings.model_copy(update={"dataset_prefix": "old"})
    new = projects.to_argilla_settings("answer_judgement", s, client)
    old = rg.Settings(fields=[rg.TextField(name=f.name, title=f.title, required=f.required, client=client)
                              for f in new.fields if f.name != "hints"],
                      questions=[rg.LabelQuestion(name="verdict", labels={"correct": "Correct", "incorrect": "Incorrect"},
                                                  client=client)])
    if api.quiet(client.workspaces, s.workspace) is None:  # when run alone
        rg.Workspace(name=s.workspace, client=client).create()
    rg.Dataset(name="old-answer-judgement", workspace=s.workspace, settings=old, client=client).create()
    with pytest.raises(InputError, match="has no field\\(s\\) hints .* new annotate.dataset_prefix"):
        ps.push(client, s, "answer_judgement", _answers(2))
    assert len(list(api.find_dataset(client, s, "answer_judgement").records)) == 0


def test_a_push_to_several_datasets_checks_them_all_before_writing_any(shared_host, tmp_path):
    from typer.testing import CliRunner

    from babelrag.annotate.cli import app

    server, settings, client = shared_host
    s = settings.model_copy(update={"dataset_prefix": "multi"})
    items = samples.qa_items(2, reviewed=True)
    fr = projects.build_records("translation", items, s, "fr")
    fr[0].fields["source_and_mt"] += " (an older version of the record)"
    ps.push(client, s, "translation", fr, suffix="fr")  # qa1 in French now differs from what the file makes
    cfg = tmp_path / "babelrag.yaml"
    cfg.write_text(json.dumps({"annotate": {"dataset_prefix": "multi", "users": [{"username": "ann1", "password": "ann1-password"}],
                                            "projects": {"translation": {"languages": ["de", "fr"]}},
                                            "server": {"home": str(server.home)}}}))
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in items))
    res = CliRunner().invoke(app, ["push", "translation", "-i", str(tmp_path / "qa.jsonl"), "-c", str(cfg)])
    assert isinstance(res.exception, InputError) and "record qa1: id: already in the dataset" in str(res.exception)
    assert api.get_dataset(client, "multi-translation-de", s.workspace) is None  # German not created either
    res = CliRunner().invoke(app, ["push", "translation", "-i", str(tmp_path / "qa.jsonl"), "-c", str(cfg), "--update"])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "multi-translation-de" in out and "2 records: 2 new, 0 updated, 0 already there" in out
    assert "multi-translation-fr" in out and "2 records: 0 new, 1 updated, 1 already there" in out


def _held(dataset) -> dict:
    """External id -> (fields, metadata, {question: suggestion value}, responses) as the server holds them (SDK)."""
    return {r.id: (dict(r.fields), dict(r.metadata), {s.question_name: s.value for s in r.suggestions},
                   sorted((a.question_name, a.value) for a in r.responses))
            for r in dataset.records(with_suggestions=True, with_responses=True)}


def test_update_sends_changed_suggestions_and_metadata_keeps_responses_and_withdraws_old_suggestions(shared_host,
                                                                                                      tmp_path):
    """A re-judged verdict or a new model name changes only a suggestion or metadata: push refuses it without
    --update and replaces it with --update; a switch to suggestion mode "show" deletes the pre-selected
    suggestions on the server (the upsert alone keeps them). The suggestion log and the server agree after
    each push; an annotator's response survives every update."""
    import httpx
    from typer.testing import CliRunner

    from babelrag.annotate.cli import app
    from babelrag.annotate.suggested import read_suggested

    server, settings, client = shared_host
    answers = samples.model_answers(3)
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))

    def push(mode: str, *extra: str):
        cfg = tmp_path / "babelrag.yaml"
        cfg.write_text(json.dumps({
            "project": {"build_dir": str(tmp_path / "build")},
            "annotate": {"dataset_prefix": "rejudge", "users": [{"username": "ann1", "password": "ann1-password"}],
                         "projects": {"answer_judgement": {"suggestions": mode}}, "server": {"home": str(server.home)}}}))
        res = CliRunner().invoke(app, ["push", "answer_judgement", "-i", str(tmp_path / "answers.jsonl"), "-c", str(cfg),
                                       *extra])
        return res, " ".join(res.output.split())

    def log() -> dict:
        return {r["record_id"]: r["suggestions"] for r in read_suggested(tmp_path / "build" / "annotate",
                                                                         "answer_judgement")}

    res, out = push("preselect")
    assert res.exit_code == 0 and "3 records: 3 new, 0 updated, 0 already there" in out, res.output
    ds = api.get_dataset(client, "rejudge-answer-judgement", settings.workspace)
    first = _held(ds)
    assert {rid: sugs for rid, (_, _, sugs, _) in first.items()} == log() == {
        "ans1": {"verdict": "correct"}, "ans2": {"verdict": "incorrect"}, "ans3": {"verdict": "correct"}}
    token = httpx.post(f"{server.url}/api/v1/token", data={"username": "ann1", "password": "ann1-password"})
    argilla_id = next(rec["id"] for rec in api.iter_records(client, str(ds.id)) if rec["external_id"] == "ans1")
    answered = httpx.post(f"{server.url}/api/v1/records/{argilla_id}/responses",
                          json={"status": "submitted", "values": {"verdict": {"value": "correct"}}},
                          headers={"Authorization": f"Bearer {token.json()['access_token']}"})
    assert answered.status_code == 201, answered.text

    answers[0]["judge_verdict"] = "incorrect"  # re-judged
    answers[1]["model"] = "another-model"  # metadata only
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    res, _ = push("preselect")
    assert isinstance(res.exception, InputError), res.output
    assert "record ans1: id: already in the dataset with different content" in str(res.exception)
    assert "record ans2: id: already in the dataset with different content" in str(res.exception)
    assert "ans3" not in str(res.exception)
    assert _held(ds) == {**first, "ans1": (*first["ans1"][:3], [("verdict", "correct")])}  # nothing sent

    res, out = push("preselect", "--update")
    assert res.exit_code == 0 and "3 records: 0 new, 2 updated, 1 already there" in out, res.output
    now = _held(ds)
    assert now["ans1"][2] == log()["ans1"] == {"verdict": "incorrect"}
    assert now["ans1"][3] == [("verdict", "correct")]  # the annotator's response is kept
    assert now["ans2"][1]["model"] == "another-model" and now["ans3"] == first["ans3"]

    res, out = push("show", "--update")  # verdicts become a hint: nothing pre-selected any more
    assert res.exit_code == 0 and "3 records: 0 new, 3 updated, 0 already there" in out, res.output
    now = _held(ds)
    assert {rid: sugs for rid, (_, _, sugs, _) in now.items()} == {"ans1": {}, "ans2": {}, "ans3": {}}
    assert "*Incorrect* (judge-panel)" in now["ans1"][0]["hints"] and now["ans1"][3] == [("verdict", "correct")]
    assert log()["ans1"] == {"verdict": "incorrect"}  # withheld, still logged for agreement
    res, out = push("show")
    assert res.exit_code == 0 and "3 records: 0 new, 0 updated, 3 already there" in out, res.output


def test_cli_push_checks_the_input_once_and_reads_no_responses_to_compare(shared_host, tmp_path, monkeypatch):
    """The CLI checks every language's records before connecting; plan_push does not check them again. The
    comparison with the dataset lists records with their suggestions, not their responses."""
    from typer.testing import CliRunner

    from babelrag.annotate import input_checks
    from babelrag.annotate.cli import app

    server, _, _ = shared_host
    checked, listed = [], []
    real_check, real_get = input_checks.check_input, api.get_json
    monkeypatch.setattr(input_checks, "check_input", lambda records, spec: checked.append(len(records))
                        or real_check(records, spec))
    monkeypatch.setattr(api, "get_json", lambda client, url, **params: (listed.append(params.get("include"))
                                                                    if url.endswith("/records") else None)
                        or real_get(client, url, **params))
    cfg = tmp_path / "babelrag.yaml"
    cfg.write_text(json.dumps({"annotate": {"dataset_prefix": "once", "server": {"home": str(server.home)},
                                            "projects": {"translation": {"languages": ["de", "fr"]}}}}))
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in samples.qa_items(3, reviewed=True)))
    for n in (1, 2):  # the second push compares with the two datasets the first made
        res = CliRunner().invoke(app, ["push", "translation", "-i", str(tmp_path / "qa.jsonl"), "-c", str(cfg)])
        assert res.exit_code == 0, res.output
        assert checked == [3, 3] * n  # once per language, in the CLI only
    assert listed == ["suggestions", "suggestions"]


def test_an_owner_whose_creation_failed_is_created_on_the_next_start(tmp_path, monkeypatch):
    """The credentials are stored before the owner is created (a failure must not lose them); the next start
    must still create the owner instead of serving an API key of a user that does not exist."""
    from babelrag.errors import StageError

    settings = ServerSettings(home=tmp_path / "home", port=0)
    real_run = ArgillaServer._run

    def failing_owner(self, python, args, what, *rest, **kw):
        if args[:1] == ["create-owner"]:
            raise StageError("argilla-server owner user creation failed (injected)")
        return real_run(self, python, args, what, *rest, **kw)

    monkeypatch.setattr(ArgillaServer, "_run", failing_owner)
    with pytest.raises(StageError, match="injected"):
        ArgillaServer(settings).start()
    assert json.loads((tmp_path / "home" / "credentials.json").read_text()).get("owner_created") is None
    monkeypatch.setattr(ArgillaServer, "_run", real_run)
    server = ArgillaServer(settings).start()
    try:
        import httpx

        me = httpx.get(f"{server.url}/api/v1/me", headers={"X-Argilla-Api-Key": server.api_key}, timeout=30)
        assert me.status_code == 200 and me.json()["role"] == "owner", me.text
        assert server.credentials["owner_created"] is True
    finally:
        server.stop()
