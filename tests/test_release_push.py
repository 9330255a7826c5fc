"""`babelrag release push`: one clear line when offline, when the endpoint is unreachable, or the token is refused.

Runs the real CLI in a subprocess (huggingface_hub reads HF_HUB_OFFLINE at import time) against 127.0.0.1.
"""
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from babelrag.release.build import build_release
from tests.helpers.release_fixtures import make_build, make_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("push")
    make_build(tmp / "build")
    return build_release(make_config(tmp)).folder


def push(folder, **env):
    full = {**os.environ, "PYTHONPATH": str(ROOT), "HF_TOKEN": "hf_test_token", **env}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "babelrag.cli", "release", "push", str(folder), "--repo",
                           "org/demo-bench"], env=full, capture_output=True, text=True, timeout=120, cwd=ROOT)
    return proc, time.monotonic() - started


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_one_line_error(proc, *fragments):
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for frag in fragments:
        assert frag in lines[0], lines[0]


def test_offline_mode_is_refused_up_front(folder):
    proc, _ = push(folder, HF_HUB_OFFLINE="1", HF_ENDPOINT="http://127.0.0.1:9")
    assert_one_line_error(proc, "HF_HUB_OFFLINE is set (offline mode)", "http://127.0.0.1:9")


def test_unreachable_endpoint(folder):
    port = free_port()  # nothing listens here
    proc, seconds = push(folder, HF_HUB_OFFLINE="0", HF_ENDPOINT=f"http://127.0.0.1:{port}")
    assert_one_line_error(proc, f"cannot reach the Hub at http://127.0.0.1:{port}", "HF_ENDPOINT")
    assert seconds < 60


class _Refuse(BaseHTTPRequestHandler):
    seen: list = []

    def _reply(self):
        _Refuse.seen.append((self.command, self.path, self.headers.get("authorization")))
        body = b'{"error": "Invalid credentials in Authorization header"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_HEAD = _reply

    def log_message(self, *args):
        pass


def test_refused_token(folder):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        proc, _ = push(folder, HF_HUB_OFFLINE="0", HF_ENDPOINT=endpoint)
    finally:
        server.shutdown()
        server.server_close()
    assert_one_line_error(proc, "refused the token (HTTP 401)", "HF_TOKEN", "org/demo-bench")
    create = [auth for method, path, auth in _Refuse.seen if path == "/api/repos/create"]
    assert create == ["Bearer hf_test_token"]


def test_not_a_release_folder(tmp_path):
    proc, _ = push(tmp_path, HF_HUB_OFFLINE="0")
    assert_one_line_error(proc, "is not a release folder")


class _FakeHub(BaseHTTPRequestHandler):
    """Just enough of the Hub API for ``upload_folder``: every file regular (inline), commits recorded."""

    committed: list = []

    def _json(self, status: int, obj) -> None:
        import json

        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        import json

        data = self.rfile.read(int(self.headers.get("content-length") or 0))
        endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        if self.path.startswith("/api/repos/create"):
            self._json(200, {"url": f"{endpoint}/datasets/org/demo-bench", "name": "org/demo-bench"})
        elif self.path.startswith("/api/validate-yaml"):
            self._json(200, {})
        elif "/preupload/" in self.path:
            files = json.loads(data)["files"]
            self._json(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                       for f in files]})
        elif "/commit/" in self.path:
            lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
            _FakeHub.committed.append(sorted(x["value"]["path"] for x in lines if x["key"] in ("file", "lfsFile")))
            self._json(200, {"commitUrl": f"{endpoint}/datasets/org/demo-bench/commit/{'a' * 40}",
                             "commitOid": "a" * 40})
        else:
            self._json(404, {"error": f"not in the fake hub: {self.path}"})

    def log_message(self, *args):
        pass


def test_dry_run_lists_exactly_what_upload_folder_sends_hidden_and_git_files_included(folder, tmp_path):
    import shutil

    copy = tmp_path / "rel"
    shutil.copytree(folder, copy)
    extra = [".hidden", "data/.notes.txt", "data/mono-de/.DS_Store", ".git/config", "data/.git/HEAD",
             ".cache/huggingface/upload.lock", "schema/.cache/huggingface/x", "disk/mono-de/.x", "data/mono-de/ok.txt"]
    for rel in extra:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_text("x\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HF_TOKEN": ""}
    dry = subprocess.run([sys.executable, "-m", "babelrag.cli", "release", "push", str(copy), "--repo",
                          "org/demo-bench", "--dry-run"], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert dry.returncode == 0, dry.stderr
    listing = dry.stdout.split("\n\n--- README.md ---")[0].splitlines()[1:]
    listed = sorted(line.split()[-1] for line in listing)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeHub.committed.clear()
    try:
        proc, _ = push(copy, HF_HUB_OFFLINE="0", HF_ENDPOINT=f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr
    assert _FakeHub.committed == [listed]  # the dry run is what upload_folder sent, file for file
    assert "data/mono-de/ok.txt" in listed and "README.md" in listed
    assert not [p for p in listed if p.startswith(("disk/", ".")) or "/." in p]  # no hidden file at any depth
