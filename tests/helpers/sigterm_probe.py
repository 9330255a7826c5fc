"""Run by ``tests/test_sigterm_teardown.py`` as its own pytest process (not collected by the suite: its name
does not start with ``test_``). A session fixture starts a child server the way most fixtures do (a plain
Popen: no process group of its own, no death signal, only its finalizer ends it); the first test writes the
server's process id to ``$BABELRAG_PROBE_DIR/pids.json`` and waits for SIGTERM, swallowing the interrupt as
code that handles Ctrl-C itself does (the CLI). The second test must not run after a SIGTERM."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROBE = Path(os.environ.get("BABELRAG_PROBE_DIR", "."))


@pytest.fixture(scope="session")
def child_server():
    proc = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    yield proc
    proc.terminate()
    proc.wait(10)


def test_wait_for_sigterm(child_server):
    (PROBE / "pids.json").write_text(json.dumps([child_server.pid]))
    try:
        time.sleep(600)
    except KeyboardInterrupt:
        pass  # handled here, as babelrag's CLI handles Ctrl-C: the run must stop all the same


def test_after_the_sigterm(child_server):
    (PROBE / "ran-after-sigterm").touch()
