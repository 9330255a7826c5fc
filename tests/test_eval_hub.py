"""`babelrag evaluate run` on a Hub id: fetched through huggingface_hub from a local Hub-compatible server,
reused from the cache offline, and a one-line error (never a traceback) when it cannot be fetched.

The fake Hub answers the requests huggingface_hub's ``snapshot_download`` and ``datasets.load_dataset``
make for a dataset repo (checked by logging them): ``GET /api/datasets/<repo>/revision/<rev>``,
``GET /api/datasets/<repo>/tree/<commit>[/<path>]?recursive=…`` and ``HEAD``/``GET
/datasets/<repo>/resolve/<rev>/<file>``; anything else is a 404 with the Hub's error codes. The CLI
runs in a subprocess because huggingface_hub reads HF_ENDPOINT / HF_HUB_OFFLINE at import time.
"""
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import pytest

from babelrag.errors import InputError
from babelrag.evaluators.answers import read_answers
from babelrag.evaluators.release_reader import load_instances
from babelrag.evaluators.source import parse_hub_id, resolve_release
from babelrag.testing.scripted_server import ScriptedServer
from tests.test_eval_release_e2e import eval_config, release_brain, release_folder  # noqa: F401 - fixture

ROOT = Path(__file__).resolve().parents[1]
REPO = "babel-org/demo-bench"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeHub:
    """Serves one folder as dataset repo ``REPO`` at commit ``COMMIT`` (branch ``main``)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                            if p.is_file() and "disk" not in p.relative_to(folder).parts)
        self.requests: list[tuple[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, code, body=b"", headers=None):
                self.send_response(code)
                self.send_header("Content-Type", "application/json" if code != 200 or body[:1] in (b"{", b"[")
                                 else "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_GET(self):  # noqa: N802
                url = urlparse(self.path)
                path = unquote(url.path)
                hub.requests.append((self.command, path))
                if "/babel-org/private-bench" in path:  # what the Hub says about a private repo without a token
                    return self._send(401, b'{"error": "Invalid username or password."}')
                api = f"/api/datasets/{REPO}/"
                if path.startswith(api + "revision/"):
                    rev = path[len(api + "revision/"):]
                    if rev not in ("main", COMMIT):
                        return self._send(404, b'{"error": "Invalid rev id"}', {"X-Error-Code": "RevisionNotFound"})
                    info = {"id": REPO, "sha": COMMIT, "private": False, "disabled": False, "gated": False,
                            "siblings": [{"rfilename": f} for f in hub.files]}
                    return self._send(200, json.dumps(info).encode())
                if path.startswith(api + "tree/"):
                    rev, _, sub = path[len(api + "tree/"):].partition("/")
                    recursive = parse_qs(url.query).get("recursive", ["false"])[0] == "true"
                    return self._send(200, json.dumps(hub.tree(sub.strip("/"), recursive)).encode())
                prefix = f"/datasets/{REPO}/resolve/"
                if path.startswith(prefix):
                    rev, _, rel = path[len(prefix):].partition("/")
                    if rev not in ("main", COMMIT):
                        return self._send(404, b'{"error": "Invalid rev id"}', {"X-Error-Code": "RevisionNotFound"})
                    if rel not in hub.files:
                        return self._send(404, b'{"error": "Entry not found"}', {"X-Error-Code": "EntryNotFound"})
                    data = (hub.folder / rel).read_bytes()
                    return self._send(200, data, {"X-Repo-Commit": COMMIT,
                                                  "ETag": f'"{hashlib.sha1(data).hexdigest()}"'})
                return self._send(404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"})

            do_HEAD = do_GET

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def tree(self, sub: str, recursive: bool) -> list[dict]:
        out, dirs = [], set()
        for f in self.files:
            if sub and not f.startswith(sub + "/"):
                continue
            rest = f[len(sub) + 1:] if sub else f
            if not recursive and "/" in rest:
                dirs.add(f"{sub}/{rest.split('/')[0]}" if sub else rest.split("/")[0])
                continue
            data = (self.folder / f).read_bytes()
            out.append({"type": "file", "path": f, "size": len(data), "oid": hashlib.sha1(data).hexdigest()})
        return out + [{"type": "directory", "path": d, "oid": "0" * 40, "size": 0} for d in sorted(dirs)]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(tmp_path, llm_url, metrics=("xrag", "citations")):
    return eval_config(tmp_path, llm_url, judges=["judge-1"], metrics=metrics, configs=["mono-de", "en-baseline"])


def _evaluate(ref, cfg, out, cwd, **env):
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-m", "babelrag.cli", "evaluate", "run", ref, "-c", str(cfg),
                           "--out", str(out), "--rounds", "50"], env=full, capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def _one_line_error(proc, *fragments):
    lines = [x for x in proc.stderr.strip().splitlines() if x.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for frag in fragments:
        assert frag in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def hub(release_folder):  # noqa: F811
    h = FakeHub(release_folder)
    yield h
    h.close()


@pytest.fixture(scope="module")
def llm(release_folder):  # noqa: F811
    with ScriptedServer(release_brain(load_instances(release_folder))) as srv:
        yield srv


def test_parse_hub_id():
    assert parse_hub_id("org/bench") == ("org/bench", "")
    assert parse_hub_id("org/bench@v0.1.0") == ("org/bench", "v0.1.0")
    assert parse_hub_id("hf://datasets/org/my.bench-2@" + COMMIT) == ("org/my.bench-2", COMMIT)
    for not_an_id in ("bench", "/abs/path", "./rel/path", "a/b/c", "~/x/y", "org/", "../x"):
        assert parse_hub_id(not_an_id) is None, not_an_id


def test_local_folder_wins_over_a_hub_id(tmp_path, release_folder, monkeypatch):  # noqa: F811
    import shutil

    shutil.copytree(release_folder, tmp_path / "org" / "bench")
    monkeypatch.chdir(tmp_path)
    src = resolve_release("org/bench")
    assert src.path == Path("org/bench") and src.hub_id == ""  # read from disk, no Hub involved
    with pytest.raises(InputError, match="does not exist; pass a release folder, an instances .jsonl file, or a Hub"):
        resolve_release("./not/here")


def test_evaluate_a_hub_id_then_reuse_the_cache_offline(tmp_path, hub, llm, release_folder):  # noqa: F811
    cfg = _config(tmp_path, llm.base_url)
    hf_home = tmp_path / "hf-home"
    env = {"HF_HOME": str(hf_home), "HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0"}
    proc = _evaluate(REPO, cfg, tmp_path / "out", tmp_path, **env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    release = json.loads((release_folder / "release.json").read_text())
    assert data["run"]["dataset"] == REPO
    assert data["run"]["dataset_revision"] == f"{release['version']}+{str(release['data_hash'])[:12]}"
    assert data["run"]["settings"]["source"] == f"hf://datasets/{REPO}"
    assert data["run"]["settings"]["hub_commit"] == COMMIT and data["run"]["settings"]["hub_revision"] == "main"
    assert [r["model"] for r in data["leaderboard"]] == ["good", "weak"]
    assert data["leaderboard"][0]["accuracy"] == 1.0 and data["leaderboard"][1]["accuracy"] == 0.0
    answers = read_answers(tmp_path / "out" / "answers.jsonl")
    wanted = {i.id for i in load_instances(release_folder, configs=["mono-de", "en-baseline"], split="test")}
    assert {a.instance_id for a in answers} == wanted and len(answers) == 2 * len(wanted)
    assert data["run"]["split"] == "test" and data["run"]["configs"] == ["en-baseline", "mono-de"]
    # only the requested configs' parquet files (plus card and release.json) were downloaded
    got = {p for m, p in hub.requests if m == "GET" and "/resolve/" in p}
    assert {p.rsplit("/resolve/", 1)[1].split("/", 1)[1] for p in got} == \
        {"README.md", "release.json"} | {f for f in hub.files if f.startswith(("data/mono-de/", "data/en-baseline/"))}
    snapshot = hf_home / "hub" / f"datasets--{REPO.replace('/', '--')}" / "snapshots" / COMMIT
    assert (snapshot / "release.json").is_file()
    # what we evaluated is what researchers get from datasets.load_dataset(hub_id, config) on the same Hub
    script = ("import json, datasets; ids = sorted(r['id'] for c in ('mono-de', 'en-baseline') "
              f"for r in datasets.load_dataset('{REPO}', c, split='test')); print(json.dumps(ids))")
    ld = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                        env={**os.environ, **env, "HF_HOME": str(tmp_path / "hf-home-datasets"),
                             "HF_DATASETS_OFFLINE": "0"})
    assert ld.returncode == 0, ld.stderr
    assert json.loads(ld.stdout.strip().splitlines()[-1]) == sorted(wanted)

    # offline afterwards, with nothing listening: the cached snapshot is used, no request is made
    before = len(hub.requests)
    env_off = {**env, "HF_HUB_OFFLINE": "1", "HF_ENDPOINT": f"http://127.0.0.1:{_free_port()}"}
    proc = _evaluate(REPO, cfg, tmp_path / "out-offline", tmp_path, **env_off)
    assert proc.returncode == 0, proc.stderr
    again = json.loads((tmp_path / "out-offline" / "results.json").read_text())
    assert again["leaderboard"] == data["leaderboard"] and len(hub.requests) == before


def test_offline_without_cache_is_one_clear_line(tmp_path, llm):
    cfg = _config(tmp_path, llm.base_url)
    proc = _evaluate(REPO, cfg, tmp_path / "out", tmp_path, HF_HOME=str(tmp_path / "empty-hf"), HF_HUB_OFFLINE="1")
    line = _one_line_error(proc, f"dataset '{REPO}'", "offline (HF_HUB_OFFLINE=1)", "HF_ENDPOINT",
                           "download the release folder and pass its path")
    assert "network" in line
    assert not (tmp_path / "out").exists()  # nothing was evaluated


def test_unreachable_endpoint_unknown_repo_and_revision(tmp_path, hub, llm):
    cfg = _config(tmp_path, llm.base_url)
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0"}
    port = _free_port()  # nothing listens here
    proc = _evaluate(REPO, cfg, tmp_path / "o1", tmp_path, HF_ENDPOINT=f"http://127.0.0.1:{port}", **env)
    _one_line_error(proc, f"dataset '{REPO}'", f"http://127.0.0.1:{port} is unreachable", "HF_ENDPOINT",
                    "pass its path")
    proc = _evaluate("babel-org/no-such-bench", cfg, tmp_path / "o2", tmp_path, HF_ENDPOINT=hub.url, **env)
    _one_line_error(proc, "dataset 'babel-org/no-such-bench' does not exist at", hub.url)
    proc = _evaluate(f"{REPO}@v9", cfg, tmp_path / "o3", tmp_path, HF_ENDPOINT=hub.url, **env)
    _one_line_error(proc, f"dataset '{REPO}' at revision 'v9'", "revision does not exist")
    proc = _evaluate("babel-org/private-bench", cfg, tmp_path / "o4", tmp_path, HF_ENDPOINT=hub.url, **env)
    _one_line_error(proc, "dataset 'babel-org/private-bench' is private or does not exist", "(HTTP 401)", "HF_TOKEN")
    assert not any((tmp_path / o).exists() for o in ("o1", "o2", "o3", "o4"))
