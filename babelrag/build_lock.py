"""One writer per build folder.

Two processes writing one build mix their output (two ingests appending to one spool, two commits of
one stage). Every command that writes a build holds ``<build_dir>/.lock`` for as long as it runs: a POSIX
record lock (``fcntl.lockf``), which the kernel drops when the process ends however it ends, so a
``kill -9`` leaves nothing to clean up, and which forked or spawned children do not inherit. A second
writer stops at once with exit 2, naming the holder's pid and command.

A command that only needs the build to hold still while it reads it (``release build``) takes the lock
shared: readers run side by side, a writer waits for none of them but is refused while one reads. Commands
that only look (``construct status``, ``release validate``) take no lock.

Holding is re-entrant within a process (``demo`` runs the pipeline several times in one build). The
lock file itself stays: removing it would let a third process lock a fresh file while the second still
holds the old one.
"""
from __future__ import annotations

import fcntl
import json
import os
import shlex
import socket
import struct
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from babelrag.build_layout import LOCK_FILE
from babelrag.errors import BuildInUseError
from babelrag.fs_errors import ensure_writable_dir, filesystem_error

_HELD: dict[str, list[int]] = {}  # resolved build folder -> [fd of the locked lock file, depth]


def current_command() -> str:
    """This process's command line as a user typed it (``babelrag run -c x.yaml``)."""
    argv = list(sys.argv) or ["python"]
    argv[0] = Path(argv[0]).name or argv[0]
    return shlex.join(argv)


@contextmanager
def build_lock(build_dir: Path | str, command: str | None = None, shared: bool = False) -> Iterator[Path]:
    """Hold the build's lock for the block. Exclusive (a writer): the folder is created and checked writable
    first. ``shared`` (a reader): a build that does not exist or cannot be written has no writer to wait
    for, and is read unlocked."""
    root = Path(build_dir)
    if not shared:
        root = ensure_writable_dir(root)
    key = str(root.resolve())
    held = _HELD.get(key)
    if held is not None:
        held[1] += 1
        try:
            yield root
        finally:
            held[1] -= 1
        return
    fd = _open(root, shared)
    if fd is None:
        yield root
        return
    _lock(fd, root, shared, command or current_command())
    _HELD[key] = [fd, 1]
    try:
        yield root
    finally:
        del _HELD[key]
        _release(fd, shared)


def _open(root: Path, shared: bool) -> int | None:
    path = root / LOCK_FILE
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if shared:  # a read-only or missing build: nobody can be writing it
            try:
                return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return None
        err = filesystem_error(exc, path)
        if err is None:
            raise
        raise err from None


def _lock(fd: int, root: Path, shared: bool, command: str) -> None:
    try:
        fcntl.lockf(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError:  # EAGAIN / EACCES: a writer (or, for a writer, any holder) has it
        holder = _holder(fd, shared)
        os.close(fd)
        raise BuildInUseError(_in_use_message(root, holder, shared)) from None
    if shared:
        return  # several readers: none of them owns the holder line
    line = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
            "since": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(line) + "\n").encode("utf-8"), 0)


def _release(fd: int, shared: bool) -> None:
    if not shared:
        try:
            os.ftruncate(fd, 0)  # the next writer writes its own line; nobody reads a stale one
        except OSError:
            pass
    os.close(fd)  # closing drops the lock


def _holder(fd: int, shared: bool) -> dict:
    """Who holds the lock: the kernel's answer (pid; its command from /proc), else the holder's line."""
    try:
        raw = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        line = json.loads(raw) if raw else {}
    except (OSError, ValueError):
        line = {}
    pid = _lock_owner(fd, shared)
    if pid is None or line.get("pid") == pid:
        return line
    return {"pid": pid, "command": _command_of(pid)}


def _lock_owner(fd: int, shared: bool) -> int | None:
    """The pid of a process holding a lock that conflicts with ours (``F_GETLK``; Linux layout only)."""
    if not sys.platform.startswith("linux"):
        return None
    kind = fcntl.F_RDLCK if shared else fcntl.F_WRLCK
    request = struct.pack("@hhqqi", kind, os.SEEK_SET, 0, 0, 0).ljust(32, b"\0")
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, request)
    except OSError:
        return None
    l_type, _, _, _, l_pid = struct.unpack_from("@hhqqi", answer)
    return l_pid if l_type != fcntl.F_UNLCK and l_pid > 0 else None


def _command_of(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return ""
    args = [a.decode("utf-8", "replace") for a in argv if a]
    if args:
        args[0] = Path(args[0]).name
    return shlex.join(args)


def _in_use_message(root: Path, holder: dict, shared: bool) -> str:
    who = f"pid {holder['pid']}" if holder.get("pid") else "another process"
    if holder.get("host") and holder["host"] != socket.gethostname():
        who += f" on {holder['host']}"
    what = f" running `{holder['command']}`" if holder.get("command") else ""
    since = f" since {holder['since']}" if holder.get("since") else ""
    rule = ("it is being written; reading it now could mix two versions of a stage" if shared
            else "one build has one writer at a time")
    return (f"build folder {root} is in use by {who}{what}{since}: {rule}. Wait for it to finish (or stop "
            f"it), then run again" + ("" if shared else "; or give this run its own project.build_dir"))
