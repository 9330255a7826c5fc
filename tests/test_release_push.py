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
