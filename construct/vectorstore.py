"""Article vectors in Milvus through pymilvus ``MilvusClient``.

Default: a Milvus Lite file under the build's shared ``milvus`` folder (embedded, nothing to run).
For scale, ``dense.milvus.uri`` points at any Milvus server. Schema: id (primary, varchar), language,
published (int days since 1970-01-01, so date ranges are integer filters), title, source, vector.
Upserts are idempotent: re-ingesting the same articles replaces rows instead of duplicating them.

Note: Milvus Lite allows one process per data file; a second process gets "Open local milvus failed".
milvus-lite serves a file from a server inside the process that ``client.close()`` leaves running (and the file
locked) until the process exits; ``VectorStore.close`` stops it when the last store of this process on that
file closes, so a stage that is done with the file hands it on (to another process, a later stage).
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from babelrag.errors import ConfigError, StageError
from babelrag.records import UNDATED_DAY
from babelrag.executor import in_ray_worker

TITLE_MAX = 1024
SOURCE_MAX = 512
ID_MAX = 256


_LITE_LOCK = threading.Lock()
_LITE_OPEN: dict[str, int] = {}  # Milvus Lite file -> stores of this process holding it open


def _lite_path(uri: str) -> str | None:
    return os.path.abspath(uri) if uri.endswith(".db") and "://" not in uri else None


def _release_lite(path: str) -> None:
    """One store fewer on a Milvus Lite file; the last one stops milvus-lite's server for it (and its lock)."""
    with _LITE_LOCK:
        left = _LITE_OPEN.get(path, 1) - 1
        if left > 0:
            _LITE_OPEN[path] = left
            return
        _LITE_OPEN.pop(path, None)
        try:
            from milvus_lite.server_manager import server_manager_instance
        except ImportError:  # an older milvus-lite without a server manager: nothing held in this process
            return
        server_manager_instance.release_server(path)


@dataclass(slots=True)
class Hit:
    id: str
    score: float
    language: str
    published: int
    title: str = ""


def _quote(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid Milvus string literal


def build_filter(languages: Sequence[str] | None = None, published_from: int | None = None,
                 published_to: int | None = None, exclude_ids: Sequence[str] | None = None,
                 or_undated: bool = False) -> str:
    """A Milvus filter. An undated article's ``published`` is ``UNDATED_DAY``, above any bound, so a date range
    leaves it out; ``or_undated`` lets undated articles through the range (pair windows, never freshness)."""
    parts = []
    if languages:
        parts.append(f"language in [{', '.join(_quote(x) for x in languages)}]")
    dates = []
    if published_from is not None:
        dates.append(f"published >= {int(published_from)}")
    if published_to is not None:
        dates.append(f"published <= {int(published_to)}")
    if dates and or_undated:
        parts.append(f"(({' and '.join(dates)}) or published >= {UNDATED_DAY})")
    else:
        parts.extend(dates)
    if exclude_ids:
        parts.append(f"id not in [{', '.join(_quote(x) for x in exclude_ids)}]")
    return " and ".join(parts)


class VectorStore:
    """One collection of article vectors; cosine similarity on normalised vectors (metric IP)."""

    def __init__(self, uri: str, collection: str, dim: int, index_type: str = "FLAT", token: str | None = None,
                 index_params: dict[str, Any] | None = None) -> None:
        from pymilvus import MilvusClient

        self.uri = uri
        self.collection = collection
        self.dim = dim
        self.index_type = index_type
        self._lite = _lite_path(uri)
        if self._lite:
            with _LITE_LOCK:
                _LITE_OPEN[self._lite] = _LITE_OPEN.get(self._lite, 0) + 1
        try:
            self.client = MilvusClient(uri=uri, token=token or "")
        except Exception as exc:
            if self._lite:
                _release_lite(self._lite)
            hint = (" (Milvus Lite allows one process per data file: is another babelrag run using it?)"
                    if not uri.startswith("http") else " (is the server running and reachable?)")
            raise StageError(f"cannot open Milvus at {uri}: {type(exc).__name__}: {str(exc)[:200]}{hint}") from None
        try:
            self._ensure(index_params or {})
        except BaseException:
            self.close()  # the file is not left held by a store nobody can close
            raise

    @classmethod
    def lite(cls, folder: Path, collection: str, dim: int, index_type: str = "FLAT") -> VectorStore:
        if in_ray_worker():  # every worker would open its own copy of one data file
            raise StageError(f"Milvus Lite ({folder / 'milvus.db'}) opened inside a Ray worker: Milvus Lite is one "
                             f"process per data file. With executor.backend ray, set dense.milvus.uri to a Milvus "
                             f"server (http://host:19530) or write vectors from the driver")
        folder.mkdir(parents=True, exist_ok=True)
        return cls(str(folder / "milvus.db"), collection, dim, index_type)

    def _ensure(self, index_params: dict[str, Any]) -> None:
        from pymilvus import DataType

        c = self.client
        if c.has_collection(self.collection):
            desc = c.describe_collection(self.collection)
            for f in desc.get("fields", []):
                if f.get("name") == "vector":
                    have = int(f.get("params", {}).get("dim", self.dim))
                    if have != self.dim:
                        raise ConfigError(
                            f"Milvus collection {self.collection!r} at {self.uri} holds {have}-d vectors but the "
                            f"encoder makes {self.dim}-d ones: set dense.milvus.collection to a new name "
                            f"(or delete the collection) after changing dense.encoder")
            c.load_collection(self.collection)
            return
        schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=ID_MAX)
        schema.add_field("language", DataType.VARCHAR, max_length=16)
        schema.add_field("published", DataType.INT64)
        schema.add_field("title", DataType.VARCHAR, max_length=TITLE_MAX)
        schema.add_field("source", DataType.VARCHAR, max_length=SOURCE_MAX)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dim)
        index = c.prepare_index_params()
        params = dict(index_params)
        if self.index_type == "HNSW":
            params = {"M": 16, "efConstruction": 200, **params}
        elif self.index_type == "IVF_FLAT":
            params = {"nlist": 128, **params}
        index.add_index(field_name="vector", index_type=self.index_type, metric_type="IP", params=params)
        # Strong consistency: a search right after an upsert sees it (servers default to "Bounded")
        c.create_collection(self.collection, schema=schema, index_params=index, consistency_level="Strong")
        c.load_collection(self.collection)

    def upsert(self, ids: Sequence[str], vectors: np.ndarray, languages: Sequence[str], published: Sequence[int],
               titles: Sequence[str], sources: Sequence[str], batch: int = 1000) -> int:
        for name, seq in (("ids", ids), ("languages", languages), ("published", published), ("titles", titles),
                          ("sources", sources)):
            if len(seq) != len(vectors):
                raise ValueError(f"{name}: {len(seq)} values for {len(vectors)} vectors")
        n = 0
        for s in range(0, len(ids), batch):
            rows = [{"id": ids[i][:ID_MAX], "language": languages[i], "published": int(published[i]),
                     "title": titles[i][:TITLE_MAX // 4], "source": sources[i][:SOURCE_MAX // 4],
                     "vector": vectors[i].astype(np.float32).tolist()}
                    for i in range(s, min(len(ids), s + batch))]
            self.client.upsert(self.collection, rows)
            n += len(rows)
        return n

    def seal(self, timeout: float = 3600.0, poll: float = 0.5) -> dict[str, Any]:
        """Flush the upserts and wait until the vector index covers every row; the index's state.

        A Milvus server searches freshly upserted rows in growing segments apart from the index, and builds an
        HNSW index on a segment only once it is sealed (a flush) and then in the background: searched before that,
        the windowed recall@20 was 0.30-0.88 from run to run (docs/scaleout.md). The index stage calls this after
        its upserts, so a later stage searches a finished index. Milvus Lite (FLAT) reports it finished at once.
        A build that does not finish within ``timeout`` seconds is a ``StageError`` (a re-run waits again)."""
        import time

        self.client.flush(self.collection)
        deadline = time.monotonic() + timeout
        while True:
            info = self.client.describe_index(self.collection, "vector") or {}
            total = int(info.get("total_rows", 0))
            done = (str(info.get("state", "")) == "Finished" and int(info.get("pending_index_rows", 0)) == 0
                    and int(info.get("indexed_rows", 0)) >= total)
            if done:
                return {k: info.get(k) for k in ("index_type", "state", "total_rows", "indexed_rows",
                                                 "pending_index_rows")}
            if time.monotonic() > deadline:
                raise StageError(f"the {self.index_type} index of {self.collection!r} at {self.uri} is not built "
                                 f"after {timeout:.0f} s ({info.get('indexed_rows')} of {total} rows indexed, state "
                                 f"{info.get('state')!r}, {info.get('fail_reason') or 'no failure reported'}); "
                                 f"re-run the index stage once the server has built it")
            time.sleep(poll)

    def iter_rows(self, fields: Sequence[str], batch: int = 5000) -> Iterator[list[dict[str, Any]]]:
        """Every row's ``fields``, ``batch`` rows at a time (how mining reads the vectors once)."""
        it = self.client.query_iterator(self.collection, batch_size=batch, filter="", output_fields=list(fields))
        try:
            while True:
                rows = it.next()
                if not rows:
                    break
                yield rows
        finally:
            it.close()

    def prune(self, keep: set[str], batch: int = 5000) -> int:
        """Delete rows whose id is not in ``keep`` (articles gone from the corpus since the last run)."""
        stale = [r["id"] for rows in self.iter_rows(["id"], batch) for r in rows if r["id"] not in keep]
        for s in range(0, len(stale), 500):
            expr = f"id in [{', '.join(_quote(x) for x in stale[s:s + 500])}]"
            self.client.delete(self.collection, filter=expr)
        return len(stale)

    def count(self) -> int:
        res = self.client.query(self.collection, filter="", output_fields=["count(*)"], consistency_level="Strong")
        return int(res[0]["count(*)"])

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for s in range(0, len(ids), 500):
            chunk = list(ids[s:s + 500])
            # not client.get(): pymilvus does not escape quotes/backslashes in the ids it puts in its filter
            expr = f"id in [{', '.join(_quote(x) for x in chunk)}]"
            res = self.client.query(self.collection, filter=expr, output_fields=["id"], consistency_level="Strong")
            found.update(r["id"] for r in res)
        return found

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (so callers need not keep a whole corpus of vectors in memory)."""
        out: dict[str, np.ndarray] = {}
        for s in range(0, len(ids), 500):
            expr = f"id in [{', '.join(_quote(x) for x in ids[s:s + 500])}]"
            for r in self.client.query(self.collection, filter=expr, output_fields=["id", "vector"],
                                       consistency_level="Strong"):
                out[r["id"]] = np.asarray(r["vector"], dtype=np.float32)
        return out

    def search(self, queries: np.ndarray, top_k: int = 10, languages: Sequence[str] | None = None,
               published_from: int | None = None, published_to: int | None = None,
               filter_expr: str | None = None, search_params: dict[str, Any] | None = None,
               exclude_ids: Sequence[str] | None = None, or_undated: bool = False) -> list[list[Hit]]:
        expr = (filter_expr if filter_expr is not None
                else build_filter(languages, published_from, published_to, exclude_ids, or_undated))
        q = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        res = self.client.search(self.collection, data=q.tolist(), limit=top_k, filter=expr,
                                 output_fields=["language", "published", "title"], consistency_level="Strong",
                                 search_params={"metric_type": "IP", "params": search_params or {}})
        out = []
        for hits in res:
            row = []
            for h in hits:
                ent = h.get("entity", h)
                row.append(Hit(id=str(h.get("id", ent.get("id"))), score=float(h["distance"]),
                               language=ent.get("language", ""), published=int(ent.get("published", 0)),
                               title=ent.get("title", "")))
            out.append(row)
        return out

    def search_columns(self, queries: np.ndarray, top_k: int = 10, languages: Sequence[str] | None = None,
                       published_from: int | None = None, published_to: int | None = None,
                       exclude_ids: Sequence[str] | None = None, or_undated: bool = False) -> list[tuple[list, ...]]:
        """``search`` as (ids, scores, days, languages) lists per query (the shape ``WindowIndex`` gives)."""
        return [([h.id for h in hits], [h.score for h in hits], [h.published for h in hits],
                 [h.language for h in hits])
                for hits in self.search(queries, top_k, languages, published_from, published_to,
                                        exclude_ids=exclude_ids, or_undated=or_undated)]

    def drop(self) -> None:
        self.client.drop_collection(self.collection)

    def close(self) -> None:
        """Close the client; the last store of this process on a Milvus Lite file also frees the file."""
        try:
            self.client.close()
        except Exception:
            pass
        if self._lite:
            path, self._lite = self._lite, None  # a second close() releases nothing twice
            _release_lite(path)


def store_from_config(ctx: Any, dim: int) -> VectorStore:
    m = ctx.config.dense.milvus
    if m.uri:
        token = os.environ.get(m.token_env, "") if m.token_env else None
        if m.token_env and not token:
            raise ConfigError(f"dense.milvus.token_env names {m.token_env}, which is not set")
        return VectorStore(m.uri, m.collection, dim, m.index_type, token)
    return VectorStore.lite(ctx.store.shared_dir("milvus"), m.collection, dim, m.index_type)
