"""Whether a process is still running, as the tests that kill parents check their children."""
from __future__ import annotations


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a parent to reap it has stopped)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
