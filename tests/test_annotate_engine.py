"""The SQLite search engine's storage layer, run with the argilla-server venv's python (where it lives).

Two processes share one index file, as the API server and the rq worker do: writes from one must be
seen by the other's next search even though each keeps a parsed-document cache.
"""
from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from babelrag.annotate.settings import ServerSettings
from babelrag.annotate.server.venv import ensure_server_venv

pytestmark = pytest.mark.argilla
SERVER_DIR = Path(__file__).resolve().parents[1] / "annotate" / "server"

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os, subprocess, sys
    sys.path.insert(0, sys.argv[1])
    from sqlite_engine import SQLiteSearchEngine

    IDX = "rg.test"
    PENDING_U1 = {"bool": {"must_not": {"term": {"responses.user_id": "u1"}}}}

    async def ids(engine, query, **kw):
        res = await engine._index_search_request(IDX, query=query, size=10, from_=0, **kw)
        return [h["_id"] for h in res["hits"]["hits"]], res["hits"]["total"]["value"]

    async def main(role):
        e = await SQLiteSearchEngine.new_instance()
        out = {}
        if role == "writer":  # the other process: answer r2 as u1
            await e._update_document_request(IDX, "r2", {"script": {"source": "... responses.add(params.response)",
                "params": {"response": {"id": "x9", "user_id": "u1", "status": "submitted"}}}})
            return out
        await e._create_index_request(IDX, {"properties": {}}, {})
        out["exists"] = [await e._index_exists_request(IDX), await e._index_exists_request("rg.nope")]
        await e._bulk_op_request([{"_op_type": "index", "_index": IDX, "_id": f"r{i}", "id": f"r{i}",
                                   "status": "pending", "fields": {"text": f"doc {i}"}, "metadata": {"n": i}}
                                  for i in (1, 2, 3)])
        out["pending_before"] = await ids(e, PENDING_U1, sort=[{"metadata.n": "desc"}])
        await e._update_document_request(IDX, "r1", {"script": {"source": "... responses.add(params.response)",
            "params": {"response": {"id": "x1", "user_id": "u1", "status": "draft"}}}})
        out["pending_after_own_write"] = await ids(e, PENDING_U1)
        subprocess.run([sys.executable, __file__, sys.argv[1], "writer"], check=True)
        out["pending_after_other_process"] = await ids(e, PENDING_U1)
        await e._bulk_op_request([{"_op_type": "delete", "_index": IDX, "_id": "r3"}])
        out["after_delete"] = await ids(e, {"match_all": {}})
        await e.put_index_mapping_request(IDX, {"metadata.n": {"type": "long"}})
        await e._delete_index_request(IDX)
        out["exists_after_delete"] = await e._index_exists_request(IDX)
        return out

    role = sys.argv[2] if len(sys.argv) > 2 else "main"
    print(json.dumps(asyncio.run(main(role))))
    """
)


def test_engine_storage_is_shared_between_processes(tmp_path):
    python = ensure_server_venv(ServerSettings().resolved_venv())
    script = tmp_path / "engine_check.py"
    script.write_text(SCRIPT)
    env = {"BABELRAG_SEARCH_DB": str(tmp_path / "search.sqlite3"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([str(python), str(script), str(SERVER_DIR)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["exists"] == [True, False]
    assert out["pending_before"] == [["r3", "r2", "r1"], 3]
    assert out["pending_after_own_write"] == [["r2", "r3"], 2]
    assert out["pending_after_other_process"] == [["r3"], 1]  # the other process's write is visible
    assert out["after_delete"] == [["r1", "r2"], 2]
    assert out["exists_after_delete"] is False
