"""Ingest pass 1, resumable at item level: a run killed during extraction continues where it stopped.

Pass 1's results (the spooled rows of kept articles, their hashes and MinHash signatures, the skip
counts) go to files in the stage's partial folder (``.partial/ingest/pass1``, which the stage's shard
writer clears when the fingerprint changes and the commit removes). Every ``CHECKPOINT_SECONDS`` the files
are flushed and ``state.json`` records, atomically, how many input items are done and how long each file
was then. A re-run with the same fingerprint truncates the files to those lengths (a killed run may
have written past them), skips the items already done (reading them, not extracting them) and goes on;
only the items in flight at the kill are extracted again. Results come back in input order, so the
spool, and so the output, is the one an uninterrupted run writes.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from babelrag.atomic import atomic_write_text

CHECKPOINT_SECONDS = 5.0


@dataclass
class Pass1State:
    inputs_done: int = 0  # corpus.inputs entries finished
    consumed: int = 0  # items of the next input already handled
    rows: int = 0  # kept articles spooled
    spool_bytes: int = 0
    count_in: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    first_skip: dict[str, str] = field(default_factory=dict)  # an example per reason, for the zero-articles error
    encodings: dict[str, str] = field(default_factory=dict)  # input file -> "read as" (not plain UTF-8)
    done: bool = False


class Pass1Spool:
    """The spool, hash and signature files of pass 1 and their checkpoint."""

    def __init__(self, folder: Path, n_perm: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.path = folder / "spool.jsonl"
        self._state_file = folder / "state.json"
        self._widths = {"hashes.bin": (np.int64, 2), "signatures.bin": (np.uint32, n_perm)}
        self.discarded = ""  # why an earlier run's pass 1 was thrown away ("" when resumed or fresh)
        try:
            self.state = (Pass1State(**json.loads(self._state_file.read_text(encoding="utf-8")))
                          if self._state_file.exists() else Pass1State())
            problem = self._damage(self._sizes())
        except (ValueError, TypeError) as exc:  # not JSON, or not the fields of a checkpoint
            problem = f"state.json is unreadable: {exc}"
        if problem:  # start pass 1 over rather than fail on every later run
            self.discarded = problem
            self.state = Pass1State()
        self._files = {}
        for name, size in self._sizes().items():
            handle = open(folder / name, "ab")
            handle.truncate(size)  # what a killed run wrote after its last checkpoint goes
            self._files[name] = handle
        self._last = time.monotonic()

    def _sizes(self) -> dict[str, int]:
        """The length each file had at the last checkpoint."""
        return {"spool.jsonl": self.state.spool_bytes,
                **{name: self.state.rows * np.dtype(t).itemsize * w for name, (t, w) in self._widths.items()}}

    def _damage(self, sizes: Mapping[str, int]) -> str:
        """Why the files cannot be what the checkpoint says ("" when they can): shorter than recorded, or a
        spool whose line count is not the recorded row count (two runs once wrote here at the same time)."""
        for name, size in sizes.items():
            have = (self.folder / name).stat().st_size if (self.folder / name).exists() else 0
            if have < size:
                return f"{name} has {have} bytes, the checkpoint recorded {size}"
        if not self.state.spool_bytes:
            return ""
        lines, last = 0, b"\n"
        with open(self.path, "rb") as fh:
            left = self.state.spool_bytes
            while left > 0:
                block = fh.read(min(left, 1 << 20))
                if not block:
                    break
                lines += block.count(b"\n")
                left -= len(block)
                last = block[-1:]
        if lines != self.state.rows or last != b"\n":
            return f"spool.jsonl holds {lines} complete lines, the checkpoint recorded {self.state.rows} rows"
        return ""

    def add(self, row: Mapping[str, object], hashes: np.ndarray, signature: np.ndarray) -> None:
        line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
        self._files["spool.jsonl"].write(line)
        self._files["hashes.bin"].write(np.asarray(hashes, np.int64).tobytes())
        self._files["signatures.bin"].write(np.asarray(signature, np.uint32).tobytes())
        self.state.rows += 1
        self.state.spool_bytes += len(line)

    def checkpoint(self, inputs_done: int, consumed: int, count_in: int, skipped: Mapping[str, int],
                   first_skip: Mapping[str, str], encodings: Mapping[str, str] | None = None, done: bool = False,
                   every: float = 0.0) -> None:
        """Record progress (at most every ``every`` seconds): files flushed to disk first, then the state."""
        now = time.monotonic()
        if every and now - self._last < every:
            return
        self._last = now
        for handle in self._files.values():
            handle.flush()
            os.fsync(handle.fileno())
        self.state.inputs_done, self.state.consumed, self.state.count_in = inputs_done, consumed, count_in
        self.state.skipped, self.state.first_skip, self.state.done = dict(skipped), dict(first_skip), done
        self.state.encodings = dict(encodings or {})
        atomic_write_text(self._state_file, json.dumps(asdict(self.state)))

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, signatures) of every spooled row, read back from their files."""
        out = []
        for name, (dtype, width) in self._widths.items():
            out.append(np.fromfile(self.folder / name, dtype=dtype).reshape(-1, width)[: self.state.rows])
        return out[0], out[1]
