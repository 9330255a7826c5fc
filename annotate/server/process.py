"""Supervise a local argilla-server: Redis, DB migration, owner user, the API/UI server and its rq worker.

Every child runs in its own process group (and gets SIGTERM if this process dies), so ``stop()`` can
signal whole groups and leave no orphans (rq's WorkerPool forks grandchildren). State that outlives
a run lives in the home dir: ``argilla.db`` (Argilla's SQLite), ``search.sqlite3`` (our search
engine), ``credentials.json`` (owner API key), ``server.json`` (URL while running), ``logs/``. A new
home's database is a copy of the empty migrated one kept beside the server venv (``EMPTY_DB``).

Safe on a shared host (see ``host_safety.py``): the home is 0700 and every file the server keeps there
0600 (children run with umask 077), Redis needs a password generated per start, and no secret is ever a command-line
argument (``/proc/<pid>/cmdline`` is world-readable): children get them through the environment or
a 0600 file.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from babelrag.atomic import atomic_path, atomic_write_bytes, atomic_write_text
from babelrag.child_process import PRIVATE_UMASK, guarded, spawn_kwargs
from babelrag.errors import StageError

from ..settings import ARGILLA_SERVER_VERSION, ServerSettings
from .host_safety import private_home, redis_config, redis_url
from .venv import ensure_server_venv, redis_server_binary

LAUNCHER = Path(__file__).with_name("launcher.py")
ENGINE_NAME = "babelrag-sqlite"
SEARCH_WRITES_ENV = "BABELRAG_SEARCH_WRITES"  # "off" = the engine skips document writes (bench baseline only)
HOT_PATHS_ENV = "BABELRAG_ARGILLA_HOT_PATHS"  # "off" = Argilla's own hot paths, not hot_paths.py (bench baseline only)
EMPTY_DB = f"empty-argilla-{ARGILLA_SERVER_VERSION}.db"  # beside the server venv: a new home's database
OWNER_KEY_ENV = "BABELRAG_ARGILLA_OWNER_API_KEY"
OWNER_PASSWORD_ENV = "BABELRAG_ARGILLA_OWNER_PASSWORD"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def write_private(path: Path, data: dict) -> None:
    atomic_write_text(path, json.dumps(data, indent=2), private=True)


def load_credentials(home: Path) -> dict:
    """Owner credentials of a local server (created on first start), or {} if none yet."""
    path = Path(home) / "credentials.json"
    return json.loads(path.read_text()) if path.exists() else {}


def running_server(home: Path) -> Optional[dict]:
    """``server.json`` of a server started from this home dir, if its process is still alive."""
    path = Path(home) / "server.json"
    if not path.exists():
        return None
    info = json.loads(path.read_text())
    try:
        os.kill(int(info["pid"]), 0)
    except (OSError, KeyError, ValueError):
        return None
    return info


@dataclass
class ArgillaServer:
    """A running (or startable) local argilla-server. Use as a context manager or start()/stop()."""

    settings: ServerSettings = field(default_factory=ServerSettings)
    port: int = 0
    redis_port: int = 0
    redis_password: str = field(default="", repr=False)
    timings: dict[str, float] = field(default_factory=dict)
    _procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    _logs: list = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.settings.resolved_home()

    @property
    def url(self) -> str:
        return f"http://{self.settings.host}:{self.port}"

    @property
    def credentials(self) -> dict:
        return load_credentials(self.home)

    @property
    def api_key(self) -> str:
        return self.credentials["api_key"]

    # ---- environment
    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ARGILLA_", "VIRTUAL_ENV", "PYTHON"))}
        env.update(
            ARGILLA_HOME_PATH=str(self.home),
            ARGILLA_DATABASE_URL=f"sqlite:///{self.home / 'argilla.db'}",
            ARGILLA_REDIS_URL=redis_url(self.redis_port, self.redis_password),
            ARGILLA_SEARCH_ENGINE=ENGINE_NAME,
            BABELRAG_SEARCH_DB=str(self.home / "search.sqlite3"),
            HF_HUB_DISABLE_TELEMETRY="1",
            HF_HUB_OFFLINE="1",
        )
        return env

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen:
        log = os.fdopen(os.open(self.home / "logs" / f"{name}.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")
        self._logs.append(log)
        # own process group, private files, SIGTERM when the supervisor dies (babelrag.child_process)
        proc = subprocess.Popen(
            guarded(cmd), env=self._env(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=self.home, **spawn_kwargs(private=True),
        )
        self._procs[name] = proc
        return proc

    def _run(self, python: Path, args: list[str], what: str, extra_env: Optional[dict[str, str]] = None) -> str:
        done = subprocess.run(
            [str(python), str(LAUNCHER), *args], env={**self._env(), **(extra_env or {})}, capture_output=True,
            text=True, cwd=self.home, umask=PRIVATE_UMASK,
        )
        if done.returncode != 0:
            raise StageError(f"argilla-server {what} failed (exit {done.returncode}): {(done.stderr or done.stdout)[-1200:]}")
        return done.stdout

    def _log_tail(self, name: str, chars: int = 1500) -> str:
        path = self.home / "logs" / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    # ---- lifecycle
    def start(self) -> "ArgillaServer":
        t0 = time.perf_counter()
        private_home(self.home)
        other = running_server(self.home)
        if other:
            raise StageError(
                f"an Argilla server from {self.home} is already running at {other['url']} (pid {other['pid']}); "
                "stop it or use another annotate.server.home"
            )
        self.port = self.port or (self.settings.port or free_port(self.settings.host))
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
            try:
                probe.bind((self.settings.host, self.port))
            except OSError:
                raise StageError(
                    f"port {self.port} on {self.settings.host} is in use; pick another with --port "
                    "(or annotate.server.port; 0 = any free port)"
                ) from None
        python = ensure_server_venv(self.settings.resolved_venv())
        self.timings["venv_s"] = time.perf_counter() - t0

        self.redis_port = self.redis_port or free_port()
        self.redis_password = secrets.token_urlsafe(32)
        try:
            t1 = time.perf_counter()
            conf = redis_config(self.home, self.redis_port, self.redis_password)
            self._spawn("redis", [str(redis_server_binary(self.settings.resolved_venv())), str(conf)])
            marker = self.home / f".migrated-{ARGILLA_SERVER_VERSION}"
            fresh = not (marker.exists() and (self.home / "argilla.db").exists())
            if fresh:
                self._migrate(python)
                marker.touch(mode=0o600)
            self.timings["migrate_s"] = time.perf_counter() - t1
            if fresh or not self.credentials.get("owner_created"):  # also after a start that failed there
                self._ensure_owner(python)
            self._spawn("server", [str(python), str(LAUNCHER), "start", "--host", self.settings.host,
                                   "--port", str(self.port), "--no-access-log"])
            self._spawn("worker", [str(python), str(LAUNCHER), "worker", "--num-workers", str(self.settings.workers)])
            self._wait_ready(self.settings.startup_timeout_s)
        except BaseException:
            self.stop()
            raise
        self.timings["start_s"] = time.perf_counter() - t0
        write_private(self.home / "server.json", {"url": self.url, "pid": os.getpid(), "port": self.port})
        return self

    def _migrate(self, python: Path) -> None:
        """Argilla's schema in the home's database. A new database is a copy of the empty migrated one kept
        beside the server venv (``EMPTY_DB``: no user, no secret, made before the owner exists), which
        ``database migrate`` (alembic: seconds of every fresh start) fills once per venv and Argilla
        version; an existing database (an older version's) is migrated in place."""
        db = self.home / "argilla.db"
        empty = self.settings.resolved_venv() / EMPTY_DB
        if not db.exists() and empty.exists():
            atomic_write_bytes(db, empty.read_bytes(), private=True)
            return
        new = not db.exists()
        self._run(python, ["database", "migrate"], "database migrate")
        if new and not empty.exists():
            try:
                with atomic_path(empty) as tmp, closing(sqlite3.connect(db)) as src, \
                        closing(sqlite3.connect(tmp)) as copy:
                    src.backup(copy)  # a consistent snapshot, whatever journal mode migrate left
            except (OSError, sqlite3.Error):
                pass  # a read-only venv: every new home keeps running migrate

    def _ensure_owner(self, python: Path) -> None:
        """Create the owner in a new database, reusing stored credentials if the database was recreated."""
        creds = self.credentials
        if not creds:
            creds = {
                "username": self.settings.owner_username,
                "password": os.environ.get(OWNER_PASSWORD_ENV) or secrets.token_urlsafe(12),
                "api_key": os.environ.get(OWNER_KEY_ENV) or "babelrag." + secrets.token_urlsafe(24),
                "source": "env" if os.environ.get(OWNER_KEY_ENV) else "generated",
            }
        write_private(self.home / "credentials.json", creds)  # first: a failure below must not lose them
        self._run(
            python, ["create-owner"], "owner user creation",
            {"BABELRAG_OWNER_USERNAME": creds["username"], "BABELRAG_OWNER_PASSWORD": creds["password"],
             "BABELRAG_OWNER_API_KEY": creds["api_key"]},
        )  # the launcher passes them to Argilla's CLI in-process; Argilla skips an existing username
        write_private(self.home / "credentials.json", {**creds, "owner_created": True})

    def _wait_ready(self, timeout: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self._procs.items():
                if proc.poll() is not None:
                    raise StageError(f"argilla {name} exited with code {proc.returncode} during startup:\n"
                                     f"{self._log_tail(name)}")
            try:
                if httpx.get(f"{self.url}/api/v1/version", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise StageError(f"argilla-server not ready after {timeout:.0f} s; log tail:\n{self._log_tail('server')}")

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM every child's process group (server, worker pool, redis), then SIGKILL stragglers."""
        for name in ("server", "worker", "redis"):
            proc = self._procs.get(name)
            if proc is not None and proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout
        for proc in self._procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for proc in self._procs.values():
            try:  # the group may still hold forked grandchildren even if the leader exited
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if proc.poll() is None:
                proc.wait(5)
        self._procs.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()
        info = self.home / "server.json"
        if info.exists():
            try:
                if json.loads(info.read_text()).get("pid") == os.getpid():
                    info.unlink()
            except (OSError, ValueError):
                pass

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs.values()]

    def __enter__(self) -> "ArgillaServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_forever(server: ArgillaServer) -> None:
    """Block until SIGINT/SIGTERM (or a child dies), then stop everything."""
    stop = {"flag": False}

    def handler(signum: int, _frame: object) -> None:
        stop["flag"] = True

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop["flag"]:
            dead = [n for n, p in server._procs.items() if p.poll() is not None]
            if dead:
                print(f"babelrag: argilla {dead[0]} exited; stopping", file=sys.stderr)
                break
            time.sleep(0.5)
    finally:
        server.stop()
        for s, h in old.items():
            signal.signal(s, h)
