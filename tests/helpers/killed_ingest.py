"""Run ingest in a child process and SIGKILL it once its pass-1 checkpoint says enough is done (resume tests)."""
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

_SCRIPT = ("import sys, json; import babelrag.construct.ingest as ingest; ingest.CHECKPOINT_SECONDS = 0.2; "
           "from babelrag.config import config_from_dict; from babelrag.pipeline import Pipeline; "
           "Pipeline(config_from_dict(json.loads(sys.argv[1]))).run(until='ingest')")


def kill_ingest_when(raw: dict, ready: Callable[[dict], bool], timeout: float = 300) -> dict:
    """Start ``babelrag`` ingest on the config dict ``raw``, kill -9 it as soon as ``ready(checkpoint)`` holds
    for its ``.partial/ingest/pass1/state.json``, and return the checkpoint it left."""
    state = Path(raw["project"]["build_dir"]) / ".partial" / "ingest" / "pass1" / "state.json"
    run = subprocess.Popen([sys.executable, "-c", _SCRIPT, json.dumps(raw)], env={**os.environ, "HF_HUB_OFFLINE": "1"},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + timeout
    while time.time() < deadline and run.poll() is None:
        if state.exists() and ready(json.loads(state.read_text())):
            break
        time.sleep(0.05)
    assert run.poll() is None, "the ingest finished before it could be killed"
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    return json.loads(state.read_text())
