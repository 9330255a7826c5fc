"""File-system failures as one line that names the path and the fix.

A full disk, a read-only mount, a ``build_dir`` that is a file: the operating system reports them as an
``OSError`` from wherever the write happened (often deep in pyarrow or sqlite). ``filesystem_error``
turns the ones a user can fix into a ``FileSystemError`` (exit 2); any other ``OSError`` is left alone.
"""
from __future__ import annotations

import errno
import os
import uuid
from pathlib import Path

from babelrag.errors import FileSystemError

#: errno -> (what the disk said, what to do about it)
_KNOWN: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("no space left on the device",
                   "free space on that disk (or point project.build_dir at a larger one) and run again; "
                   "finished work is kept"),
    errno.EDQUOT: ("disk quota exceeded",
                   "free space within your quota (or point project.build_dir elsewhere) and run again; "
                   "finished work is kept"),
    errno.EROFS: ("the file system is read-only",
                  "point project.build_dir (or --out) at a folder on a writable disk"),
    errno.EACCES: ("permission denied",
                   "make the folder writable for this user, or point project.build_dir (or --out) elsewhere"),
    errno.EPERM: ("operation not permitted",
                  "make the folder writable for this user, or point project.build_dir (or --out) elsewhere"),
    errno.ENOTDIR: ("a part of the path is a file, not a folder",
                    "point project.build_dir (or --out) at a folder, or move that file away"),
    errno.EEXIST: ("a file is in the way of a folder",
                   "point project.build_dir (or --out) at a folder, or move that file away"),
    errno.EISDIR: ("a folder is in the way of a file", "move that folder away"),
}


def filesystem_error(exc: BaseException, where: Path | str | None = None) -> FileSystemError | None:
    """The one-line error for ``exc`` if it is a file-system failure a user can fix, else None.

    ``where`` names the folder being written when the OS did not say which file (a ``write`` on a full
    disk carries no file name)."""
    if not isinstance(exc, OSError) or exc.errno not in _KNOWN:
        return None
    what, fix = _KNOWN[exc.errno]
    path = exc.filename or where
    place = f"cannot write {path}" if path else "a write failed"
    return FileSystemError(f"{place}: {what} ({errno.errorcode[exc.errno]}); {fix}")


def ensure_writable_dir(path: Path, key: str = "project.build_dir") -> Path:
    """Create ``path`` if needed and prove a file can be written in it, before any work starts: a file in
    its place, a read-only disk or a missing permission fails here with one line, not mid-stage."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise FileSystemError(f"{key} {path} is a file, not a folder: point {key} at a folder (or move the "
                              f"file away)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-probe-{uuid.uuid4().hex[:8]}"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        probe.unlink()
    except OSError as exc:
        err = filesystem_error(exc, path)
        if err is None:
            raise
        raise err from None
    return path
