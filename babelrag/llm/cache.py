"""Persistent response cache: SQLite in WAL mode, one committed row per finished call.

Why SQLite/WAL: several processes (parallel stages, a re-run next to a still-running job) can read and
write at once; each success is committed as soon as it arrives, so a killed run loses only the calls
that were in flight. Successful answers are stored in ``responses``; a reply that stayed unusable after
the repair re-ask (``invalid_json``, ``schema``: the item's final outcome, ``failed_items``) in
``unreadable``, so that a re-run answers it with the same failure instead of paying for the same reply
again (``llm.retry_unreadable`` asks again). A call that got no answer is never stored: a re-run tries
it again. The key hashes what determines the answer: endpoint base_url + model, messages, sampling
params, prompt id + version, schema name. API keys are never part of the key or the row.
"""
from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from babelrag.errors import StageError

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,            -- chat | embed
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,          -- prompt id@version ('' for free calls)
    raw TEXT NOT NULL,             -- response text (chat) or JSON vector (embed)
    usage TEXT NOT NULL,           -- JSON {prompt_tokens, completion_tokens}
    created REAL NOT NULL
)
"""

# a reply that was answered but stayed unusable after the repair re-ask: the item's final outcome
_UNREADABLE_SCHEMA = """
CREATE TABLE IF NOT EXISTS unreadable (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,
    reason TEXT NOT NULL,          -- invalid_json | schema
    error TEXT NOT NULL,           -- the Result's error text
    raw TEXT NOT NULL,             -- the last reply (the repair re-ask's)
    usage TEXT NOT NULL,
    created REAL NOT NULL
)
"""


@dataclass(frozen=True)
class Unreadable:
    """A stored final failure: what the item's ``Result`` said the first time."""

    reason: str
    error: str
    raw: str


def cache_key(*, base_url: str, model: str, kind: str, payload: Any, params: dict,
              prompt_ref: str = "", schema_name: str = "") -> str:
    """Stable sha256 over everything that determines the answer (never the API key)."""
    blob = json.dumps(
        {"u": base_url.rstrip("/"), "m": model, "k": kind, "p": payload, "s": params,
         "pr": prompt_ref, "sc": schema_name},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _retry_locked(op, attempts: int = 100, pause: float = 0.05):
    """Run ``op``, retrying while SQLite says the file is locked. Switching a new file to WAL needs a moment of
    exclusive access and answers "database is locked" at once, without the busy timeout, when another
    process opens the same new cache file at that instant (two workers starting together)."""
    for attempt in range(attempts):
        try:
            return op()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(pause)


class ResponseCache:
    """Key -> (raw, usage). Thread-safe; one connection per thread; safe with other processes."""

    FILENAME = "llm-cache.sqlite"

    def __init__(self, cache_dir: str | Path) -> None:
        self.dir = Path(cache_dir)
        self.path = self.dir / self.FILENAME
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            _retry_locked(lambda: self._conn().execute(_SCHEMA))
            _retry_locked(lambda: self._conn().execute(_UNREADABLE_SCHEMA))
        except (OSError, sqlite3.Error) as exc:
            raise StageError(
                f"LLM cache {self.path} cannot be opened ({exc}); fix the permissions or delete the "
                f"file (only finished LLM answers are lost), or set llm.cache_dir elsewhere"
            ) from None

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # one connection per thread; check_same_thread=False only so close() can close them all
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            _retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable against process kill
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    def _read_row(self, sql: str, key: str) -> Optional[tuple]:
        """One row by key; a failing read is logged and treated as a miss (the call is simply made again)."""
        try:
            return self._conn().execute(sql, (key,)).fetchone()
        except sqlite3.Error as exc:
            log.warning("LLM cache read from %s failed: %s", self.path, exc)
            return None

    def _write_row(self, table: str, row: dict[str, Any]) -> bool:
        """Insert or replace one row; a failing write (disk full, locked too long) is logged, not raised."""
        sql = f"INSERT OR REPLACE INTO {table}({', '.join(row)}) VALUES ({','.join('?' * len(row))})"
        try:
            self._conn().execute(sql, tuple(row.values()))
            return True
        except sqlite3.Error as exc:
            log.warning("LLM cache write to %s failed: %s", self.path, exc)
            return False

    def get(self, key: str) -> Optional[tuple[str, dict]]:
        row = self._read_row("SELECT raw, usage FROM responses WHERE key=?", key)
        if row is None:
            return None
        return row[0], json.loads(row[1])

    def put(self, key: str, *, kind: str, model: str, prompt_ref: str, raw: str, usage: dict) -> bool:
        """Store one answer; a failing write is logged, not raised: the item still succeeded, it just is not
        resumable."""
        return self._write_row("responses", {"key": key, "kind": kind, "model": model, "prompt": prompt_ref,
                                             "raw": raw, "usage": json.dumps(usage), "created": time.time()})

    def get_unreadable(self, key: str) -> Optional[Unreadable]:
        """The stored unusable reply under ``key`` (None: none, or the read failed: the call is made)."""
        row = self._read_row("SELECT reason, error, raw FROM unreadable WHERE key=?", key)
        return Unreadable(*row) if row is not None else None

    def put_unreadable(self, key: str, *, model: str, prompt_ref: str, reason: str, error: str, raw: str,
                       usage: dict) -> bool:
        """Store a reply that stayed unusable after the repair re-ask; a failing write is logged, not raised
        (a re-run then pays for the call again)."""
        return self._write_row("unreadable", {"key": key, "model": model, "prompt": prompt_ref, "reason": reason,
                                              "error": error, "raw": raw, "usage": json.dumps(usage),
                                              "created": time.time()})

    def delete(self, key: str) -> None:
        self._conn().execute("DELETE FROM responses WHERE key=?", (key,))

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        """Close every thread's connection (call when no call is in flight)."""
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            try:
                conn.close()
            except sqlite3.Error:
                pass
        self._local = threading.local()
