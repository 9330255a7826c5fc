"""Server children (argilla-server, Redis, llama.cpp) start with no Python run in the forked child, still in
their own session, with private files, and still die with the process that started them.

Why: a ``preexec_fn`` makes CPython fork and run Python before exec; in a process with gRPC threads (a Milvus
Lite client, Ray) gRPC's fork handlers then sometimes abort that child (CI: argilla-server's owner creation
died with exit -6, ``Epoll1Poller ... epoll_wait error: Bad file descriptor``). Python's at-fork hooks run in
a child exactly when Python code runs there after fork, so a hook that leaves a mark shows it, every time,
where the gRPC abort shows only about once in 300 starts.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from babelrag.child_process import PRIVATE_UMASK, guarded, wrapper_command
from tests.helpers.proc_state import alive

PROBE = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from babelrag.annotate.server.process import ArgillaServer
    from babelrag.annotate.settings import ServerSettings
    from babelrag.errors import StageError

    marks = Path(sys.argv[1])
    os.register_at_fork(after_in_child=lambda: marks.open("a").write(f"{os.getpid()}\\n"))
    home = Path(sys.argv[2])
    (home / "logs").mkdir(parents=True)
    server = ArgillaServer(settings=ServerSettings(home=home))
    child = server._spawn("probe", ["sleep", "60"])       # as Redis, the web server and the workers start
    try:                                                   # as migrate / create-owner run (the CI failure)
        server._run(Path(sys.executable), ["no-such-command"], "probe run")
        ran = "ok"
    except StageError as exc:
        ran = str(exc)
    print(json.dumps({"child": child.pid, "ran": ran}), flush=True)
    os._exit(0)  # as a crash would: nothing stops the child
""")


def test_argilla_children_start_without_python_after_fork_and_die_with_their_starter(tmp_path):
    marks = tmp_path / "forked-python.txt"
    done = subprocess.run([sys.executable, "-c", PROBE, str(marks), str(tmp_path / "home")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert "probe run failed" in info["ran"]  # the launcher really ran (and refused the unknown command)
    assert not marks.exists(), f"Python ran in forked children: {marks.read_text()}"
    deadline = time.monotonic() + 20
    while alive(info["child"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(info["child"]), "the server child outlived the process that started it"


def test_a_guarded_child_keeps_its_pid_session_and_private_umask(tmp_path):
    proc = subprocess.Popen(guarded(["sleep", "30"]), start_new_session=True, umask=PRIVATE_UMASK)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the wrapper execs sleep in its own place: same pid
            if Path(f"/proc/{proc.pid}/exe").resolve().name == "sleep":
                break
            time.sleep(0.05)
        assert Path(f"/proc/{proc.pid}/exe").resolve().name == "sleep"
        status = Path(f"/proc/{proc.pid}/status").read_text()
        assert "Umask:\t0077" in status
        assert os.getsid(proc.pid) == proc.pid != os.getsid(0)
    finally:
        proc.kill()
        proc.wait()


def test_the_wrapper_refuses_an_orphaned_start_and_bad_usage():
    """Run as its own process: it arms the parent-death signal on whatever runs it."""
    wrapper = wrapper_command()
    not_the_parent = subprocess.run([*wrapper, "1", "--", "true"], capture_output=True, text=True, timeout=60)
    assert not_the_parent.returncode == 1
    assert "parent 1 is gone; not starting true" in not_the_parent.stderr
    for bad in (["123"], [str(os.getpid()), "x", "true"]):
        done = subprocess.run([*wrapper, *bad], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "usage:" in done.stderr


def test_the_wrapper_names_a_command_it_cannot_run(tmp_path):
    """Run with no PYTHONPATH and from another folder, as argilla-server's children are: it needs no babelrag."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    done = subprocess.run(guarded([str(tmp_path / "missing-binary")]), capture_output=True, text=True, timeout=60,
                          env=env, cwd=tmp_path)
    assert done.returncode == 127
    assert "cannot run" in done.stderr and "missing-binary" in done.stderr
