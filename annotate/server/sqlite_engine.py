"""Argilla search engine backed by one SQLite file (runs INSIDE the argilla-server virtualenv).

Why: argilla-server 2.8.0 needs Elasticsearch/OpenSearch, neither installable here. Argilla's own
``BaseElasticAndOpenSearchEngine`` turns every filter, sort and record into Elasticsearch JSON; this
class only implements the low-level requests it sends, evaluating the subset of the query DSL Argilla
emits over documents stored as JSON rows. Argilla creates one engine instance per request (and rq
workers run in other processes), so all state lives in the SQLite file named by
``BABELRAG_SEARCH_DB``; each process keeps a parsed-document cache keyed by a per-index write version.

This module must import nothing from babelrag: the server venv does not have the project installed.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import logging
import math
import os
import re
import sqlite3
import threading
import uuid
from typing import Any, Dict, List, Optional

from argilla_server.models import VectorSettings
from argilla_server.search_engine.base import SearchEngine
from argilla_server.search_engine.commons import BaseElasticAndOpenSearchEngine, es_field_for_vector_settings

ENGINE_NAME = "babelrag-sqlite"
DB_ENV = "BABELRAG_SEARCH_DB"
_LOG = logging.getLogger("babelrag.search_engine")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS indices (name TEXT PRIMARY KEY, mappings TEXT NOT NULL, settings TEXT NOT NULL,
                                    version INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS docs (idx TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, source TEXT NOT NULL,
                                 PRIMARY KEY (idx, id));
"""

_local = threading.local()
_cache: Dict[str, tuple[int, List[tuple[str, int, dict]]]] = {}
_cache_lock = threading.Lock()


def _json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if hasattr(value, "value"):  # enums
        return value.value
    return str(value)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=_json_default, ensure_ascii=False)


def _normalise(obj: Any) -> Any:
    """What Elasticsearch would store: JSON types only (uuids/dates/enums as strings)."""
    return json.loads(_dumps(obj))


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
        conn.executescript(_SCHEMA)
        _local.conn, _local.key = conn, key
    return conn


# ---------------------------------------------------------------- document store


def _bump(conn: sqlite3.Connection, index: str) -> None:
    conn.execute("UPDATE indices SET version = version + 1 WHERE name = ?", (index,))


def _load(index: str) -> List[tuple[str, int, dict]]:
    """All documents of an index as (id, seq, source), cached until the index's version changes."""
    conn = connect()
    row = conn.execute("SELECT version FROM indices WHERE name = ?", (index,)).fetchone()
    if row is None:
        raise KeyError(f"index {index} does not exist")
    version = row[0]
    with _cache_lock:
        hit = _cache.get(index)
        if hit and hit[0] == version:
            return hit[1]
    docs = [
        (doc_id, seq, json.loads(src))
        for doc_id, seq, src in conn.execute("SELECT id, seq, source FROM docs WHERE idx = ? ORDER BY seq", (index,))
    ]
    with _cache_lock:
        _cache[index] = (version, docs)
    return docs


def _deep_merge(target: dict, update: dict) -> dict:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_merge(target[key], value)
        else:
            target[key] = value
    return target


# ---------------------------------------------------------------- query DSL evaluation


def _values(doc: Any, path: str) -> List[Any]:
    """Every value at a dotted path, flattening lists (Elasticsearch's multi-value semantics)."""
    current = [doc]
    for part in path.split("."):
        nxt: List[Any] = []
        for item in current:
            if isinstance(item, dict) and part in item:
                value = item[part]
                if isinstance(value, list):
                    nxt.extend(value)
                else:
                    nxt.append(value)
        current = nxt
    out: List[Any] = []
    for value in current:
        if isinstance(value, list):
            out.extend(value)
        elif value is not None:
            out.append(value)
    return out


def _as_list(value: Any) -> List[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return str(a).lower() == str(b).lower()
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return str(a) == str(b)


def _cmp_value(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _in_range(value: Any, spec: dict) -> bool:
    try:
        v = _cmp_value(value)
        for op, bound in spec.items():
            if bound is None:
                continue
            b = _cmp_value(bound)
            if isinstance(v, str) != isinstance(b, str):
                v, b = str(v), str(b)
            if op == "gte" and not v >= b:
                return False
            if op == "gt" and not v > b:
                return False
            if op == "lte" and not v <= b:
                return False
            if op == "lt" and not v < b:
                return False
    except TypeError:
        return False
    return True


_TOKEN = re.compile(r"\w+", re.UNICODE)


def _tokens(text: str) -> List[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def _text_values(doc: dict, field: str) -> List[str]:
    if field.endswith("*"):
        prefix = field[:-1].rstrip(".")
        roots = _values(doc, prefix) if prefix else [doc]
        out: List[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)
            elif node is not None:
                out.append(str(node))

        walk(roots)
        return out
    return [str(v) for v in _values(doc, field)]


def _simple_query_string(doc: dict, spec: dict) -> float:
    """AND of query terms (prefix match with a trailing ``*``), case-insensitive; score = term hits."""
    terms = [t for t in re.split(r"\s+", spec.get("query", "").strip()) if t]
    if not terms:
        return 1.0
    words: List[str] = []
    for field in spec.get("fields", ["*"]):
        for text in _text_values(doc, field):
            words.extend(_tokens(text))
    score = 0.0
    for term in terms:
        prefix = term.endswith("*")
        wanted = _tokens(term)
        if not wanted:
            continue
        hits = 0
        for w in wanted:
            if prefix and w == wanted[-1]:
                hits += sum(1 for word in words if word.startswith(w))
            else:
                hits += words.count(w)
        if hits == 0:
            return 0.0
        score += hits
    return score


def _match(doc: dict, query: Optional[dict]) -> float:
    """Score (> 0 means the document matches) of one query clause against one document."""
    if not query:
        return 1.0
    (kind, spec), = query.items()
    if kind == "match_all":
        return 1.0
    if kind == "bool":
        score = 0.0
        must = _as_list(spec.get("must")) + _as_list(spec.get("filter"))
        for clause in must:
            s = _match(doc, clause)
            if s <= 0:
                return 0.0
            score += s
        for clause in _as_list(spec.get("must_not")):
            if _match(doc, clause) > 0:
                return 0.0
        should = _as_list(spec.get("should"))
        if should:
            needed = spec.get("minimum_should_match")
            needed = int(needed) if needed is not None else (0 if must else 1)
            matched = [s for s in (_match(doc, c) for c in should) if s > 0]
            if len(matched) < needed:
                return 0.0
            score += sum(matched)
        return score if score > 0 else 1.0
    if kind == "term":
        (field, value), = spec.items()
        if isinstance(value, dict):
            value = value.get("value")
        return 1.0 if any(_eq(v, value) for v in _values(doc, field)) else 0.0
    if kind == "terms":
        (field, wanted), = spec.items()
        return 1.0 if any(_eq(v, w) for v in _values(doc, field) for w in wanted) else 0.0
    if kind == "range":
        (field, bounds), = spec.items()
        return 1.0 if any(_in_range(v, bounds) for v in _values(doc, field)) else 0.0
    if kind == "exists":
        return 1.0 if _values(doc, spec["field"]) else 0.0
    if kind == "ids":
        return 1.0 if str(doc.get("id")) in {str(v) for v in spec.get("values", [])} else 0.0
    if kind == "nested":
        path = spec["path"]
        scores = [_match({path: element}, spec.get("query")) for element in _values(doc, path)]
        scores = [s for s in scores if s > 0]
        return sum(scores) / len(scores) if scores else 0.0
    if kind == "simple_query_string":
        return _simple_query_string(doc, spec)
    if kind == "function_score":
        base = _match(doc, spec.get("query"))
        if base <= 0:
            return 0.0
        for function in spec.get("functions", []):
            if "random_score" in function:
                seed = str(function["random_score"].get("seed", ""))
                digest = hashlib.sha1(f"{seed}:{doc.get('id')}".encode()).digest()
                return int.from_bytes(digest[:8], "big") / 2**64 + 1e-12
        return base
    raise ValueError(f"babelrag search engine: unsupported query clause {kind!r}")


# ---------------------------------------------------------------- sorting and aggregations


def _sort_key_value(doc: dict, field: str, spec: Any) -> Any:
    if isinstance(spec, dict) and "nested" in spec:
        nested = spec["nested"]
        path = nested["path"]
        relative = field[len(path) + 1 :] if field.startswith(path + ".") else field
        values = []
        for element in _values(doc, path):
            if nested.get("filter") and _match({path: element}, nested["filter"]) <= 0:
                continue
            values.extend(_values(element, relative))
    else:
        values = _values(doc, field)
    values = [_cmp_value(v) for v in values]
    if not values:
        return None
    if all(isinstance(v, (int, float)) for v in values):
        return sum(values) / len(values)
    return min(str(v) for v in values)


def _sorted(hits: List[tuple[float, int, dict]], sort: Optional[List[dict]]) -> List[tuple[float, int, dict]]:
    """Stable multi-key sort; missing values last whatever the direction (Elasticsearch's default)."""
    if not sort:
        return sorted(hits, key=lambda h: (-h[0], h[1]))
    result = sorted(hits, key=lambda h: h[1])
    for clause in reversed(sort):
        if isinstance(clause, str):
            clause = {clause: "asc"}
        (field, spec), = clause.items()
        order = spec.get("order", "asc") if isinstance(spec, dict) else spec
        reverse = str(order).lower() == "desc"
        present = [h for h in result if _sort_key_value(h[2], field, spec) is not None]
        missing = [h for h in result if _sort_key_value(h[2], field, spec) is None]

        def key(h: tuple[float, int, dict], field: str = field, spec: Any = spec) -> Any:
            v = _sort_key_value(h[2], field, spec)
            return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))

        result = sorted(present, key=key, reverse=reverse) + missing
    return result


def _aggregate(docs: List[dict], aggregations: dict) -> dict:
    out: dict = {}
    for name, spec in aggregations.items():
        (kind, params), = spec.items()
        field = params["field"]
        if kind == "terms":
            counts: Dict[Any, int] = {}
            for doc in docs:
                for value in {_dumps(v): v for v in _values(doc, field)}.values():
                    counts[value] = counts.get(value, 0) + 1
            buckets = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))[: int(params.get("size", 10))]
            out[name] = {"buckets": [{"key": k, "doc_count": c} for k, c in buckets]}
        elif kind == "value_count":
            out[name] = {"value": sum(len(_values(doc, field)) for doc in docs)}
        elif kind == "stats":
            nums = [float(v) for doc in docs for v in _values(doc, field) if isinstance(v, (int, float))]
            out[name] = {
                "count": len(nums),
                "min": min(nums) if nums else None,
                "max": max(nums) if nums else None,
                "avg": sum(nums) / len(nums) if nums else None,
                "sum": sum(nums),
            }
        else:
            raise ValueError(f"babelrag search engine: unsupported aggregation {kind!r}")
    return out


def _hits_response(hits: List[tuple[float, int, dict]], total: int) -> dict:
    return {
        "hits": {
            "total": {"value": total, "relation": "eq"},
            "hits": [{"_id": doc["id"], "_score": score} for score, _, doc in hits],
        }
    }


# ---------------------------------------------------------------- update scripts Argilla sends

_SUGGESTION_REMOVE = re.compile(r'ctx\._source\["suggestions"\]\.remove\("(?P<name>[^"]+)"\)')


def _apply_update(source: dict, body: dict) -> dict:
    if "doc" in body:
        return _deep_merge(source, _normalise(body["doc"]))
    script = body.get("script")
    if isinstance(script, str):
        m = _SUGGESTION_REMOVE.search(script)
        if not m:
            raise ValueError(f"babelrag search engine: unsupported update script {script!r}")
        (source.get("suggestions") or {}).pop(m.group("name"), None)
        return source
    if isinstance(script, dict):
        text = script.get("source", "")
        response = _normalise(script.get("params", {}).get("response", {}))
        responses = [r for r in (source.get("responses") or []) if r.get("id") != response.get("id")]
        if "responses.add" in text:
            responses.append(response)
        elif "remove(i)" not in text:
            raise ValueError(f"babelrag search engine: unsupported update script {text!r}")
        source["responses"] = responses
        return source
    raise ValueError(f"babelrag search engine: unsupported update body keys {sorted(body)}")


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
            "INSERT OR REPLACE INTO indices (name, mappings, settings, version) VALUES (?, ?, ?, "
            "COALESCE((SELECT version FROM indices WHERE name = ?), 0) + 1)",
            (index_name, _dumps(mappings), _dumps(settings), index_name),
        )

    async def _delete_index_request(self, index_name: str) -> None:
        conn = connect()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM docs WHERE idx = ?", (index_name,))
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
        current.setdefault("properties", {}).update(_normalise(mappings))
        conn.execute("UPDATE indices SET mappings = ? WHERE name = ?", (_dumps(current), index))
        conn.execute("COMMIT")

    # ---- writes
    async def _bulk_op_request(self, actions: List[Dict[str, Any]]) -> None:
        conn = connect()
        conn.execute("BEGIN IMMEDIATE")
        try:
            touched = set()
            for action in actions:
                op, index, doc_id = action.get("_op_type", "index"), action["_index"], str(action["_id"])
                touched.add(index)
                if op == "delete":
                    conn.execute("DELETE FROM docs WHERE idx = ? AND id = ?", (index, doc_id))
                    continue
                source = {k: v for k, v in action.items() if not k.startswith("_")}
                if "_source" in action:
                    source = action["_source"]
                payload = _dumps(source)
                updated = conn.execute(
                    "UPDATE docs SET source = ? WHERE idx = ? AND id = ?", (payload, index, doc_id)
                ).rowcount
                if not updated:
                    conn.execute(
                        "INSERT INTO docs (idx, id, seq, source) VALUES (?, ?, "
                        "(SELECT COALESCE(MAX(seq), 0) + 1 FROM docs WHERE idx = ?), ?)",
                        (index, doc_id, index, payload),
                    )
            for index in touched:
                _bump(conn, index)
            conn.execute("COMMIT")
        except Exception:
            conn.execute("ROLLBACK")
            raise

    async def _update_document_request(self, index_name: str, id: str, body: dict) -> None:
        conn = connect()
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT source FROM docs WHERE idx = ? AND id = ?", (index_name, str(id))).fetchone()
            if row is None:
                _LOG.warning("update of missing document %s in %s ignored", id, index_name)
                conn.execute("ROLLBACK")
                return
            source = _apply_update(json.loads(row[0]), body)
            conn.execute("UPDATE docs SET source = ? WHERE idx = ? AND id = ?", (_dumps(source), index_name, str(id)))
            _bump(conn, index_name)
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
            score = _match(source, query)
            if score > 0:
                hits.append((score, seq, source))
        response = _hits_response([], len(hits))
        if aggregations:
            response["aggregations"] = _aggregate([h[2] for h in hits], aggregations)
        size = 10 if size is None else size
        start = from_ or 0
        if size > 0:
            ordered = _sorted(hits, sort)
            response["hits"]["hits"] = _hits_response(ordered[start : start + size], len(hits))["hits"]["hits"]
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
            if query_filters and not all(_match(source, f) > 0 for f in query_filters):
                continue
            vectors = source.get("vectors") or {}
            vec = vectors.get(field.split(".", 1)[1])
            if not vec:
                continue
            norm_v = math.sqrt(sum(x * x for x in vec)) or 1.0
            cosine = sum(a * b for a, b in zip(value, vec)) / (norm_q * norm_v)
            hits.append(((1.0 + cosine) / 2.0, seq, source))
        hits.sort(key=lambda h: (-h[0], h[1]))
        return _hits_response(hits[:k], min(len(hits), k))
