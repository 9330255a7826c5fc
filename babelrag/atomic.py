"""Writes that are all-or-nothing: a reader sees the old file/folder or the new one, never half of one.

Everything the project writes for a user (stage output, caches, releases, reports, exports, credentials)
goes through here: write to a temp name beside the target, then ``os.replace`` it into place; a failure
removes the temp and leaves the target as it was.
"""
from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def temp_beside(path: Path) -> Path:
    """A hidden, unique name in the target's folder (same filesystem, so the rename is atomic)."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temp path to write (a file or a folder); it replaces ``path`` when the block ends cleanly and
    is removed when it raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_beside(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            _remove(tmp)


def atomic_write_bytes(path: Path, data: bytes, private: bool = False) -> None:
    """``data`` into ``path``; ``private`` creates it readable by its owner only (0600) from the start."""
    with atomic_path(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o666)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)


def atomic_write_text(path: Path, text: str, private: bool = False) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), private=private)


@contextmanager
def atomic_dir(path: Path) -> Iterator[Path]:
    """Yield a new empty folder beside ``path`` to fill; it replaces ``path`` whole when the block ends
    cleanly (see ``replace_dir``) and is removed when it raises, so ``path`` appears complete or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_beside(path)
    tmp.mkdir()
    try:
        yield tmp
        replace_dir(tmp, path)
    finally:
        if os.path.lexists(tmp):
            _remove(tmp)


def replace_dir(staging: Path, final: Path) -> None:
    """Swap a finished folder in for ``final``: an existing one is moved aside first and removed after, so
    ``final`` is always either the old folder or the new one."""
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(final, old)
    os.replace(staging, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
