"""Start long-lived helper servers (argilla-server, Redis, llama.cpp) that die with the process that started them,
without running Python in the forked child.

A ``preexec_fn`` makes ``subprocess`` fork() and run Python code in the child before exec. In a process that
has gRPC threads running (Milvus Lite's client, Ray), gRPC's fork handlers then sometimes abort that child
(``Epoll1Poller ... epoll_wait error: Bad file descriptor``, exit -6: about one start in 300, measured with a
Milvus Lite client open). So the children here are started the way CPython can vfork them (no
``preexec_fn``: ``umask`` and ``start_new_session`` are set by ``subprocess`` itself), and the parent-death
signal is set by a tiny exec wrapper, this file run as ``python -I -S child_process.py PARENT_PID -- CMD``:
it asks Linux for SIGTERM when its parent dies (PR_SET_PDEATHSIG survives exec), checks the parent is still
the one that started it, then execs ``CMD`` in its own place (same pid, so signals and ``wait`` reach it).
"""
from __future__ import annotations

import os
import signal
import sys
from typing import Any, Sequence

PR_SET_PDEATHSIG = 1
PRIVATE_UMASK = 0o077  # whatever the child creates (database, journal, logs) is the owner's only


def wrapper_command() -> list[str]:
    """This file run as a script by this Python, isolated (``-I -S``: no environment variables, user or site
    packages, nor this folder on its path): it needs only the standard library, so it runs whatever environment
    a server child gets (argilla-server's has no PYTHONPATH) and whether or not babelrag is installed."""
    return [sys.executable, "-I", "-S", os.path.abspath(__file__)]


def guarded(cmd: Sequence[str]) -> list[str]:
    """``cmd`` behind the exec wrapper on Linux (SIGTERM when this process's starting thread dies);
    unchanged elsewhere, where there is no parent-death signal."""
    if not sys.platform.startswith("linux"):
        return list(cmd)
    return [*wrapper_command(), str(os.getpid()), "--", *cmd]


def spawn_kwargs(private: bool = False) -> dict[str, Any]:
    """``subprocess`` arguments for a server child: its own session (process group), and with ``private``
    files only its owner can read. No ``preexec_fn``, so CPython starts it with vfork."""
    kwargs: dict[str, Any] = {"start_new_session": True}
    if private:
        kwargs["umask"] = PRIVATE_UMASK
    return kwargs


def _set_parent_death_signal() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not glibc: the child just outlives a crashed parent
        pass


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: python child_process.py PARENT_PID -- COMMAND [ARGS...]\n")
        return 2
    parent, cmd = int(argv[0]), argv[2:]
    _set_parent_death_signal()
    if os.getppid() != parent:  # the parent died before the signal was armed: nobody is left to stop us
        sys.stderr.write(f"babelrag.child_process: parent {parent} is gone; not starting {cmd[0]}\n")
        return 1
    try:
        os.execvp(cmd[0], cmd)
    except OSError as exc:
        sys.stderr.write(f"babelrag.child_process: cannot run {cmd[0]}: {exc}\n")
        return 127
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
