"""Shared test setup: never reach a model hub; keep heavy fixtures session-scoped; SIGTERM tears down."""
import os
import signal
import sys
import threading

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# An xdist worker (make test) starts with COLUMNS=80 that the run itself never had; babelrag's console then
# wraps its output at 80 columns instead of the 160 a log gets (babelrag/console.py), unlike a one-process
# run. The controller passes its own COLUMNS (or none) on, and each worker takes it back.
os.environ.setdefault("BABELRAG_TEST_COLUMNS", os.environ.get("COLUMNS", ""))
if os.environ.get("PYTEST_XDIST_WORKER"):
    if os.environ["BABELRAG_TEST_COLUMNS"]:
        os.environ["COLUMNS"] = os.environ["BABELRAG_TEST_COLUMNS"]
    else:
        os.environ.pop("COLUMNS", None)

import pytest

from babelrag.interrupts import EXIT_TERMINATED
from babelrag.testing.scripted_server import ScriptedServer

_TERMINATED = pytest.StashKey[bool]()  # a SIGTERM arrived


def pytest_sessionstart(session):
    """SIGTERM (a CI job cancelled or timed out) ends the run like Ctrl-C: the session stops and every
    fixture finalizer runs, so the servers the fixtures started (Argilla, Milvus, Ray, model servers) stop
    too. Its default action would kill pytest on the spot and leave them running. The first SIGTERM raises
    KeyboardInterrupt where the run is and marks the session to stop after the current test even if that
    code handles the interrupt itself; a later one does not break into the teardown. Exit code 143. A child
    forked from pytest (a fork-started worker) inherits the handler: there SIGTERM keeps its default action.
    Under xdist (``make test``) the controller passes SIGTERM on to its workers, which stop that way."""
    if threading.current_thread() is not threading.main_thread():
        return
    pytest_pid = os.getpid()

    def terminate(signum, frame):
        if os.getpid() != pytest_pid:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if session.config.stash.get(_TERMINATED, False):
            return
        session.config.stash[_TERMINATED] = True
        session.shouldstop = "SIGTERM: stopping, fixture finalizers run"
        if session.config.pluginmanager.hasplugin("dsession"):  # xdist's controller: the workers run the tests
            sys.stderr.write("\nSIGTERM: stopping the xdist workers, fixture finalizers run\n")
            _terminate_workers()
            return
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, terminate)


def _terminate_workers() -> None:
    """SIGTERM to each xdist worker (the controller's child processes): each stops as a plain run does, its
    fixture finalizers included, and the controller ends when they have. Killing them instead (what xdist does
    when its controller is interrupted) would leave their servers running."""
    import psutil

    for worker in psutil.Process().children():
        try:
            worker.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass


def pytest_collection_modifyitems(config, items):
    """In an xdist worker (``make test``: two files at a time) the files with a slow or an Argilla test come
    first, so that the files the workers take last are short ones and the two finish together (the Makefile
    turns off xdist's own order, by test count). A run without xdist keeps pytest's order."""
    if not hasattr(config, "workerinput"):
        return
    heavy = {item.path for item in items if item.get_closest_marker("slow") or item.get_closest_marker("argilla")}
    items.sort(key=lambda item: item.path not in heavy)  # stable: the order within each part stays


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    if session.config.stash.get(_TERMINATED, False):
        session.exitstatus = EXIT_TERMINATED


@pytest.fixture()
def eval_server():
    """The scripted endpoint answering models and judges as ``tests/test_eval_runner.py``'s ``brain`` does
    (shared by the evaluate tests that drive the CLI)."""
    from tests.test_eval_runner import brain

    with ScriptedServer(brain) as srv:
        yield srv
