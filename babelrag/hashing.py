"""Fingerprints: digests of files, folders and JSON-able values (stage fingerprints, data hashes).

``ContentHasher`` caches file digests by their stat signature so a large corpus is not re-read on every run.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from babelrag.atomic import atomic_write_text


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def stable_hash(obj: Any) -> str:
    """Hash of a JSON-able object that does not depend on key order."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


class ContentHasher:
    """sha256 digests of files and folders, cached by their stat signature.

    A file is re-read only when its size, mtime or inode changed; a folder (every non-hidden file below
    it, by relative path) only when one of its files did. Files modified in the last ``RACY_SECONDS``
    are never cached (an edit within the same mtime tick would otherwise go unseen). The cache lives in
    ``<build>/_shared/content_hashes.json``; losing it only costs re-reading.
    """

    RACY_SECONDS = 2.0

    def __init__(self, cache_file: Path | None = None, exclude: Iterable[Path] = ()) -> None:
        self.cache_file = cache_file
        self.exclude = {os.path.realpath(p) for p in exclude}
        self._cache: dict[str, dict[str, Any]] = {}
        self._dirty = False
        if cache_file is not None and cache_file.exists():
            try:
                self._cache = json.loads(cache_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._cache = {}

    def digest(self, path: Path) -> str:
        """``sha256:<hex>`` for a file, ``tree:<hex>`` for a folder, ``absent`` when nothing is there."""
        try:
            st = path.stat()
        except OSError:
            return "absent"
        if stat.S_ISDIR(st.st_mode):
            return self._dir_digest(path)
        return "sha256:" + self._file_digest(path, st)

    def _file_digest(self, path: Path, st: os.stat_result) -> str:
        key = os.path.realpath(path)
        sig = [st.st_size, st.st_mtime_ns, st.st_ino]
        hit = self._cache.get(key)
        if hit is not None and hit.get("sig") == sig:
            return hit["sha"]
        sha = sha256_file(path)
        if time.time_ns() - st.st_mtime_ns > self.RACY_SECONDS * 1e9:
            self._cache[key] = {"sig": sig, "sha": sha}
            self._dirty = True
        return sha

    def _walk(self, folder: Path) -> Iterator[tuple[str, Path, os.stat_result]]:
        """Regular non-hidden files below ``folder`` in a fixed order (sorted names, depth first)."""
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                             and os.path.realpath(os.path.join(root, d)) not in self.exclude)
            for name in sorted(files):
                if name.startswith("."):
                    continue
                full = Path(root) / name
                try:
                    st = full.stat()
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    yield full.relative_to(folder).as_posix(), full, st

    def _dir_digest(self, folder: Path) -> str:
        # one cache entry per folder (not per file: a corpus folder may hold millions of files),
        # keyed by the listing with sizes and mtimes; any change re-reads the folder
        listing = hashlib.sha256()
        newest = 0
        for rel, _, st in self._walk(folder):
            listing.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode())
            newest = max(newest, st.st_mtime_ns)
        key = "tree:" + os.path.realpath(folder)
        sig = listing.hexdigest()
        hit = self._cache.get(key)
        if hit is not None and hit.get("sig") == sig:
            return hit["sha"]
        digest = hashlib.sha256()
        for rel, full, _ in self._walk(folder):
            digest.update(f"{rel}\0{sha256_file(full)}\n".encode())
        sha = "tree:" + digest.hexdigest()
        if time.time_ns() - newest > self.RACY_SECONDS * 1e9:
            self._cache[key] = {"sig": sig, "sha": sha}
            self._dirty = True
        return sha

    def save(self) -> None:
        if not self._dirty or self.cache_file is None or not self.cache_file.parent.parent.exists():
            return
        try:
            atomic_write_text(self.cache_file, json.dumps(self._cache, sort_keys=True))
            self._dirty = False
        except OSError:
            pass  # a read-only build dir only costs re-hashing next time
