"""A test run killed with SIGTERM (a CI job cancelled or timed out) still stops the servers its fixtures
started: tests/conftest.py turns SIGTERM into an interrupt that stops the session, so fixture finalizers run
before pytest exits (143, as a shell reports a terminated job).

The run is a real pytest process on ``tests/helpers/sigterm_probe.py`` (a session fixture's child server,
SIGTERMed mid-test). Without the handler pytest dies on the spot and the server keeps running. (An
argilla-server needs no finalizer for this: its children get SIGTERM when their parent dies, PR_SET_PDEATHSIG
in annotate/server/process.py.)"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.proc_state import alive

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("xdist", [[], ["-n", "2", "--dist", "loadfile"]], ids=["one-process", "xdist"])
def test_sigterm_runs_fixture_finalizers_and_leaves_no_server_behind(tmp_path, xdist):
    """Also as ``make test`` runs the suite (pytest-xdist): the SIGTERM reaches only the controller, whose
    workers run the tests; killed, as xdist kills them when its controller is interrupted, they would leave
    the server running."""
    pid_file = tmp_path / "pids.json"
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *xdist,
                            "tests/helpers/sigterm_probe.py"], cwd=REPO, start_new_session=True,
                           env={**os.environ, "BABELRAG_PROBE_DIR": str(tmp_path)},
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not pid_file.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pid_file.exists(), run.communicate(timeout=30)[0][-3000:] if run.poll() is not None else "no pid in 120 s"
        pids = json.loads(pid_file.read_text())
        assert pids and all(alive(p) for p in pids)
        run.send_signal(signal.SIGTERM)  # the pytest process only, as a CI runner's cancel sends it
        output = run.communicate(timeout=120)[0]
        deadline = time.monotonic() + 10
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in pids if alive(p)] == [], output[-3000:]
        assert run.returncode == 143, output[-3000:]
        assert "SIGTERM" in output
        assert not (tmp_path / "ran-after-sigterm").exists()  # the interrupt was swallowed; the run stopped anyway
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        for p in pids:  # a failing run leaves nothing behind either
            if alive(p):
                os.kill(p, signal.SIGKILL)
