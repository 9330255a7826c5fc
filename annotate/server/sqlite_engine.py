"""Argilla search engine backed by one SQLite file (runs INSIDE the argilla-server virtualenv).

Why: argilla-server 2.8.0 needs Elasticsearch/OpenSearch, neither installable here. Argilla's own
``BaseElasticAndOpenSearchEngine`` turns every filter, sort and record into Elasticsearch JSON; this
class only implements the low-level requests it sends, evaluating the subset of the query DSL Argilla
emits over documents stored as JSON rows. Argilla creates one engine instance per request (and rq
workers run in other processes), so all state lives in the SQLite file named by
``BABELRAG_SEARCH_DB``; each process keeps a parsed-document cache keyed by a per-index write version.
Every write stamps the rows it touches (and the ids it deletes) with the index's new version, so a
process whose cache is behind reads only what changed since, not the whole index.

This module must import nothing from babelrag: the server venv does not have the project installed.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import math
import os
import sqlite3
import threading
import uuid
from typing import Any, Dict, Iterator, List, Optional

from argilla_server.models import VectorSettings
from argilla_server.search_engine.base import SearchEngine
from argilla_server.search_engine.commons import BaseElasticAndOpenSearchEngine, es_field_for_vector_settings

try:  # a top-level module when the launcher runs it, a package module when the project imports it
    from .es_dsl import aggregate, apply_update, dumps, hits_response, match, normalise, sort_hits
except ImportError:
    from es_dsl import aggregate, apply_update, dumps, hits_response, match, normalise, sort_hits

ENGINE_NAME = "babelrag-sqlite"
DB_ENV = "BABELRAG_SEARCH_DB"
_LOG = logging.getLogger("babelrag.search_engine")

_TABLES = """
CREATE TABLE IF NOT EXISTS indices (name TEXT PRIMARY KEY, mappings TEXT NOT NULL, settings TEXT NOT NULL,
                                    version INTEGER NOT NULL DEFAULT 0, epoch TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS docs (idx TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, source TEXT NOT NULL,
                                 rev INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (idx, id));
CREATE TABLE IF NOT EXISTS tombstones (idx TEXT NOT NULL, id TEXT NOT NULL, rev INTEGER NOT NULL);
"""
# Columns added since the first release of this file format; older files get them on connect.
_ADDED_COLUMNS = {"indices": ("epoch", "TEXT NOT NULL DEFAULT ''"), "docs": ("rev", "INTEGER NOT NULL DEFAULT 0")}
_INDEXES = """
CREATE INDEX IF NOT EXISTS docs_by_seq ON docs (idx, seq);
CREATE INDEX IF NOT EXISTS docs_by_rev ON docs (idx, rev);
CREATE INDEX IF NOT EXISTS tombstones_by_rev ON tombstones (idx, rev);
"""
# ^ docs_by_seq makes "next seq of an index" one index probe instead of a scan of the index's documents
#   (the scan made every pushed batch slower than the one before); docs_by_rev and tombstones_by_rev
#   make "what changed since version v" a range read.

WRITES_ENV = "BABELRAG_SEARCH_WRITES"  # "off": document writes are no-ops (bench baseline only, never for use)

_local = threading.local()
_cache: Dict[str, "_Cached"] = {}
_cache_lock = threading.Lock()


@dataclasses.dataclass(frozen=True)
class _Cached:
    """One index's parsed documents in seq order, as of ``version`` of index generation ``epoch``.
    Never mutated: a newer state is a new object, so a search iterating an old one is undisturbed."""

    epoch: str
    version: int
    docs: List[tuple[str, int, dict]]
    position: Dict[str, int]


def connect() -> sqlite3.Connection:
    """One connection per process+thread; WAL so the server and rq workers can share the file."""
    path = os.environ.get(DB_ENV)
    if not path:
        raise RuntimeError(f"{DB_ENV} is not set: the babelrag launcher sets it to the search index file")
    key = (os.getpid(), path)
    conn = getattr(_local, "conn", None)
    if conn is None or getattr(_local, "key", None) != key:
        conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_TABLES)
        for table, (column, decl) in _ADDED_COLUMNS.items():
            if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
                try:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
                except sqlite3.OperationalError as exc:  # another process added it first
                    if "duplicate column" not in str(exc):
                        raise
        conn.executescript(_INDEXES)
        _local.conn, _local.key = conn, key
    return conn


# ---------------------------------------------------------------- document store


def _bump(conn: sqlite3.Connection, index: str) -> int:
    """The index's next version (inside the caller's write transaction): the rev of what it writes."""
    conn.execute("UPDATE indices SET version = version + 1 WHERE name = ?", (index,))
    row = conn.execute("SELECT version FROM indices WHERE name = ?", (index,)).fetchone()
    return row[0] if row else 0  # no such index: nothing will ever read these rows (as before the revs)


def _load(index: str) -> List[tuple[str, int, dict]]:
    """All documents of an index as (id, seq, source) in seq order, from this process's cache brought up
    to the index's current version: whole on first use or after the index was re-created, else by
    applying only the rows written and the ids deleted since the cached version."""
    conn = connect()
    conn.execute("BEGIN")  # one snapshot: the version and the rows read agree
    try:
        row = conn.execute("SELECT version, epoch FROM indices WHERE name = ?", (index,)).fetchone()
        if row is None:
            raise KeyError(f"index {index} does not exist")
        version, epoch = row
        with _cache_lock:
            hit = _cache.get(index)
        if hit is not None and hit.epoch == epoch and hit.version == version:
            return hit.docs
        if hit is not None and hit.epoch == epoch and hit.version < version:
            fresh = _catch_up(conn, index, hit, version)
        else:
            docs = [(doc_id, seq, json.loads(src)) for doc_id, seq, src in
                    conn.execute("SELECT id, seq, source FROM docs WHERE idx = ? ORDER BY seq", (index,))]
            fresh = _Cached(epoch, version, docs, {d[0]: k for k, d in enumerate(docs)})
    finally:
        conn.execute("COMMIT")
    with _cache_lock:
        current = _cache.get(index)
        if current is None or current.epoch != fresh.epoch or current.version < fresh.version:
            _cache[index] = fresh
    return fresh.docs


def _catch_up(conn: sqlite3.Connection, index: str, hit: _Cached, version: int) -> _Cached:
    """``hit`` plus what was written since its version: changed documents replace theirs in place,
    new ones join in seq order, deleted ones leave."""
    changed = {doc_id: (seq, json.loads(src)) for doc_id, seq, src in conn.execute(
        "SELECT id, seq, source FROM docs WHERE idx = ? AND rev > ?", (index, hit.version))}
    deleted = {doc_id for (doc_id,) in conn.execute(
        "SELECT id FROM tombstones WHERE idx = ? AND rev > ?", (index, hit.version))} - set(changed)
    docs = list(hit.docs)
    reorder = any(doc_id in hit.position for doc_id in deleted)
    appended = []
    for doc_id, (seq, source) in changed.items():
        k = hit.position.get(doc_id)
        if k is not None and docs[k][1] == seq:
            docs[k] = (doc_id, seq, source)
        else:  # new, or deleted and written again (a new seq)
            reorder |= k is not None
            appended.append((doc_id, seq, source))
    appended.sort(key=lambda d: d[1])
    if appended and docs and appended[0][1] < docs[-1][1]:
        reorder = True
    if reorder:
        gone = deleted | {d[0] for d in appended}
        docs = sorted([d for d in docs if d[0] not in gone] + appended, key=lambda d: d[1])
        position = {d[0]: k for k, d in enumerate(docs)}
    else:  # the position map is shared with the older state unless documents were added
        position = dict(hit.position) if appended else hit.position
        for d in appended:
            position[d[0]] = len(docs)
            docs.append(d)
    return _Cached(hit.epoch, version, docs, position)


def _writes_disabled() -> bool:
    return os.environ.get(WRITES_ENV, "").lower() == "off"


def _max_variables(conn: sqlite3.Connection) -> int:
    """Bound parameters one statement may take (32766 since SQLite 3.32; 999 on older builds)."""
    try:
        return conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    except AttributeError:  # Python < 3.11
        return 999


def _source_of(action: Dict[str, Any]) -> Dict[str, Any]:
    """The document of an ``index`` action: ``_source`` if given, else the action minus its ``_`` keys."""
    if "_source" in action:
        return action["_source"]
    return {k: v for k, v in action.items() if not k.startswith("_")}


def _runs(actions: List[Dict[str, Any]]) -> Iterator[tuple[tuple[str, str], List[Dict[str, Any]]]]:
    """Consecutive actions with the same (op, index), in order: deletes and upserts never swap places."""
    for key, group in itertools.groupby(
        actions, key=lambda a: ("delete" if a.get("_op_type") == "delete" else "index", a["_index"])
    ):
        yield key, list(group)


# ---------------------------------------------------------------- the engine


@SearchEngine.register(engine_name=ENGINE_NAME)
@dataclasses.dataclass
class SQLiteSearchEngine(BaseElasticAndOpenSearchEngine):
    """Argilla's Elasticsearch engine with its requests answered from a SQLite file."""

    @classmethod
    async def new_instance(cls) -> "SQLiteSearchEngine":
        return cls(number_of_shards=1, number_of_replicas=0)

    def __post_init__(self) -> None:
        self.client = None  # type: ignore[assignment]  # no remote client: see module docstring

    async def close(self) -> None:
        return None

    async def ping(self) -> bool:
        connect().execute("SELECT 1").fetchone()
        return True

    async def info(self) -> dict:
        return {"version": {"number": "8.0.0", "distribution": ENGINE_NAME}}

    # ---- index management
    def _mapping_for_vector_settings(self, vector_settings: VectorSettings) -> dict:
        return {
            es_field_for_vector_settings(vector_settings): {
                "type": "dense_vector",
                "dims": vector_settings.dimensions,
                "similarity": "cosine",
            }
        }

    async def _create_index_request(self, index_name: str, mappings: dict, settings: dict) -> None:
        conn = connect()
        conn.execute(
            "INSERT OR REPLACE INTO indices (name, mappings, settings, version, epoch) VALUES (?, ?, ?, "
            "COALESCE((SELECT version FROM indices WHERE name = ?), 0) + 1, ?)",
            (index_name, dumps(mappings), dumps(settings), index_name, uuid.uuid4().hex),
        )

    async def _delete_index_request(self, index_name: str) -> None:
        conn = connect()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM docs WHERE idx = ?", (index_name,))
        conn.execute("DELETE FROM tombstones WHERE idx = ?", (index_name,))
        conn.execute("DELETE FROM indices WHERE name = ?", (index_name,))
        conn.execute("COMMIT")
        with _cache_lock:
            _cache.pop(index_name, None)

    async def _index_exists_request(self, index_name: str) -> bool:
        return connect().execute("SELECT 1 FROM indices WHERE name = ?", (index_name,)).fetchone() is not None

    async def put_index_mapping_request(self, index: str, mappings: dict) -> None:
        conn = connect()
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute("SELECT mappings FROM indices WHERE name = ?", (index,)).fetchone()
        if row is None:
            conn.execute("ROLLBACK")
            raise KeyError(f"index {index} does not exist")
        current = json.loads(row[0])
        current.setdefault("properties", {}).update(normalise(mappings))
        conn.execute("UPDATE indices SET mappings = ? WHERE name = ?", (dumps(current), index))
        conn.execute("COMMIT")

    # ---- writes
    async def _bulk_op_request(self, actions: List[Dict[str, Any]]) -> None:
        """Apply Argilla's bulk actions in one transaction: per run of consecutive upserts into an index,
        one multi-row INSERT .. ON CONFLICT (new documents get the next sequence numbers, existing ones
        keep theirs); deletes in one DELETE per run. Cost per batch does not grow with the index."""
        if _writes_disabled():
            return
        conn = connect()
        limit = _max_variables(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            revs: Dict[str, int] = {}
            for (op, index), run in _runs(actions):
                if index not in revs:
                    revs[index] = _bump(conn, index)
                rev = revs[index]
                if op == "delete":
                    ids = [str(a["_id"]) for a in run]
                    for start in range(0, len(ids), limit - 1):
                        chunk = ids[start : start + limit - 1]
                        conn.execute(f"DELETE FROM docs WHERE idx = ? AND id IN ({','.join('?' * len(chunk))})",
                                     (index, *chunk))
                    conn.executemany("INSERT INTO tombstones (idx, id, rev) VALUES (?, ?, ?)",
                                     [(index, doc_id, rev) for doc_id in ids])
                    continue
                next_seq = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM docs WHERE idx = ?", (index,)).fetchone()[0]
                rows = [(index, str(a["_id"]), next_seq + k, dumps(_source_of(a)), rev) for k, a in enumerate(run)]
                for start in range(0, len(rows), limit // 5):  # 5 variables per row
                    chunk = rows[start : start + limit // 5]
                    conn.execute(
                        "INSERT INTO docs (idx, id, seq, source, rev) VALUES "
                        + ",".join("(?, ?, ?, ?, ?)" for _ in chunk)
                        + " ON CONFLICT (idx, id) DO UPDATE SET source = excluded.source, rev = excluded.rev",
                        [v for row in chunk for v in row],
                    )
            conn.execute("COMMIT")
        except Exception:
            conn.execute("ROLLBACK")
            raise

    async def _update_document_request(self, index_name: str, id: str, body: dict) -> None:
        if _writes_disabled():
            return
        conn = connect()
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT source FROM docs WHERE idx = ? AND id = ?", (index_name, str(id))).fetchone()
            if row is None:
                _LOG.warning("update of missing document %s in %s ignored", id, index_name)
                conn.execute("ROLLBACK")
                return
            source = apply_update(json.loads(row[0]), body)
            conn.execute("UPDATE docs SET source = ?, rev = ? WHERE idx = ? AND id = ?",
                         (dumps(source), _bump(conn, index_name), index_name, str(id)))
            conn.execute("COMMIT")
        except Exception:
            conn.execute("ROLLBACK")
            raise

    # ---- reads
    async def _index_search_request(
        self,
        index: str,
        query: dict,
        size: Optional[int] = None,
        from_: Optional[int] = None,
        sort: Optional[dict] = None,
        aggregations: Optional[dict] = None,
    ) -> dict:
        docs = _load(index)
        hits = []
        for _doc_id, seq, source in docs:
            score = match(source, query)
            if score > 0:
                hits.append((score, seq, source))
        response = hits_response([], len(hits))
        if aggregations:
            response["aggregations"] = aggregate([h[2] for h in hits], aggregations)
        size = 10 if size is None else size
        start = from_ or 0
        if size > 0:
            ordered = sort_hits(hits, sort)
            response["hits"]["hits"] = hits_response(ordered[start : start + size], len(hits))["hits"]["hits"]
        return response

    async def _request_similarity_search(
        self,
        index: str,
        vector_settings: VectorSettings,
        value: List[float],
        k: int,
        excluded_id: Optional[uuid.UUID] = None,
        query_filters: Optional[List[dict]] = None,
    ) -> dict:
        field = es_field_for_vector_settings(vector_settings)
        norm_q = math.sqrt(sum(x * x for x in value)) or 1.0
        hits = []
        for _doc_id, seq, source in _load(index):
            if excluded_id is not None and str(source.get("id")) == str(excluded_id):
                continue
            if query_filters and not all(match(source, f) > 0 for f in query_filters):
                continue
            vectors = source.get("vectors") or {}
            vec = vectors.get(field.split(".", 1)[1])
            if not vec:
                continue
            norm_v = math.sqrt(sum(x * x for x in vec)) or 1.0
            cosine = sum(a * b for a, b in zip(value, vec)) / (norm_q * norm_v)
            hits.append(((1.0 + cosine) / 2.0, seq, source))
        hits.sort(key=lambda h: (-h[0], h[1]))
        return hits_response(hits[:k], min(len(hits), k))
