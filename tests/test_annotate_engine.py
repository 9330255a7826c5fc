"""The SQLite search engine's storage layer, run with the argilla-server venv's python (where it lives).

Two processes share one index file, as the API server and the rq worker do: writes from one must be
seen by the other's next search even though each keeps a parsed-document cache. Then 10,000 records
through a real server and the Argilla SDK: text queries, metadata terms and ranges and their
combinations return exactly the records Python selects from the same data.
"""
from __future__ import annotations

import json
import random
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from babelrag.annotate import argilla_api as api, push as ps
from babelrag.annotate.server.process import ArgillaServer
from babelrag.annotate.server.venv import ensure_server_venv
from babelrag.annotate.settings import AnnotateSettings, ServerSettings

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
        # one batch: an existing document replaced (keeps its place), a new one appended, one deleted
        await e._bulk_op_request([
            {"_op_type": "index", "_index": IDX, "_id": "r1", "id": "r1", "fields": {"text": "replaced text"}},
            {"_op_type": "index", "_index": IDX, "_id": "r4", "id": "r4", "fields": {"text": "doc 4"}},
            {"_op_type": "delete", "_index": IDX, "_id": "r2"},
            {"_op_type": "index", "_index": IDX, "_id": "r5", "id": "r5", "fields": {"text": "doc 5"}}])
        out["after_mixed_batch"] = await ids(e, {"match_all": {}})
        out["replaced"] = await ids(e, {"simple_query_string": {"query": "replaced", "fields": ["fields.*"]}})
        os.environ["BABELRAG_SEARCH_WRITES"] = "off"  # the bench baseline: writes are no-ops
        await e._bulk_op_request([{"_op_type": "delete", "_index": IDX, "_id": "r4"}])
        await e._update_document_request(IDX, "r5", {"doc": {"fields": {"text": "not written"}}})
        del os.environ["BABELRAG_SEARCH_WRITES"]
        out["after_writes_off"] = await ids(e, {"simple_query_string": {"query": "doc", "fields": ["fields.*"]}})
        await e.put_index_mapping_request(IDX, {"metadata.n": {"type": "long"}})
        await e._delete_index_request(IDX)
        out["exists_after_delete"] = await e._index_exists_request(IDX)
        return out

    role = sys.argv[2] if len(sys.argv) > 2 else "main"
    print(json.dumps(asyncio.run(main(role))))
    """
)


def run_engine_script(tmp_path: Path, text: str, *args: str, timeout: float = 300):
    """Run ``text`` with the server venv's python (engine module dir as argv[1], a fresh index file);
    the JSON of its last output line."""
    python = ensure_server_venv(ServerSettings().resolved_venv())
    script = tmp_path / "engine_script.py"
    script.write_text(text)
    env = {"BABELRAG_SEARCH_DB": str(tmp_path / "search.sqlite3"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([str(python), str(script), str(SERVER_DIR), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_engine_storage_is_shared_between_processes(tmp_path):
    out = run_engine_script(tmp_path, SCRIPT)
    assert out["exists"] == [True, False]
    assert out["pending_before"] == [["r3", "r2", "r1"], 3]
    assert out["pending_after_own_write"] == [["r2", "r3"], 2]
    assert out["pending_after_other_process"] == [["r3"], 1]  # the other process's write is visible
    assert out["after_delete"] == [["r1", "r2"], 2]
    assert out["after_mixed_batch"] == [["r1", "r4", "r5"], 3]  # insertion order; r1 kept its place
    assert out["replaced"] == [["r1"], 1]
    assert out["after_writes_off"] == [["r4", "r5"], 2]
    assert out["exists_after_delete"] is False


CATCH_UP_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, random, subprocess, sys
    sys.path.insert(0, sys.argv[1])
    import sqlite_engine
    from sqlite_engine import SQLiteSearchEngine

    IDX = "rg.catchup"

    def ops(round_no):
        # round k's writes, the same in whichever process asks: upserts, inserts, deletes, re-inserts
        rng = random.Random(round_no)
        out = []
        for _ in range(rng.randint(1, 6)):
            kind = rng.choice(["upsert", "upsert", "delete", "update"])
            doc = f"d{rng.randint(0, 59)}"
            out.append((kind, doc, f"{doc} v{round_no}.{len(out)}"))
        return out

    async def apply(e, round_no):
        for kind, doc, text in ops(round_no):
            if kind == "delete":
                await e._bulk_op_request([{"_op_type": "delete", "_index": IDX, "_id": doc}])
            elif kind == "update":
                await e._update_document_request(IDX, doc, {"doc": {"fields": {"text": text}}})
            else:
                await e._bulk_op_request([{"_op_type": "index", "_index": IDX, "_id": doc, "id": doc,
                                           "fields": {"text": text}}])

    def model_apply(model, round_no):
        for kind, doc, text in ops(round_no):
            if kind == "delete":
                model.pop(doc, None)
            elif kind == "update":
                if doc in model:
                    model[doc] = text
            else:
                model[doc] = text  # a new or re-inserted id goes last; an existing one keeps its place

    async def state(e):
        res = await e._index_search_request(IDX, {"match_all": {}}, size=1000, from_=0)
        texts = {doc_id: source["fields"]["text"] for doc_id, _, source in sqlite_engine._load(IDX)}  # the cache
        return [[h["_id"], texts[h["_id"]]] for h in res["hits"]["hits"]]

    async def main():
        e = await SQLiteSearchEngine.new_instance()
        if sys.argv[2] == "writer":  # one long-lived process (importing argilla_server costs seconds)
            for line in sys.stdin:
                await apply(e, int(line))
                print("done", flush=True)
            return None
        if sys.argv[2] == "recreate":
            await e._delete_index_request(IDX)
            await e._create_index_request(IDX, {"properties": {}}, {})
            await e._bulk_op_request([{"_op_type": "index", "_index": IDX, "_id": "new", "id": "new",
                                       "fields": {"text": "after re-creation"}}])
            return None
        await e._create_index_request(IDX, {"properties": {}}, {})
        model = {f"d{i}": f"d{i} v0" for i in range(40)}
        await e._bulk_op_request([{"_op_type": "index", "_index": IDX, "_id": d, "id": d, "fields": {"text": t}}
                                  for d, t in model.items()])
        real_loads = sqlite_engine.json.loads  # counted below: how many stored documents a search parses
        out = {"rounds": [], "parsed": []}
        assert await state(e) == [[d, t] for d, t in model.items()]
        writer = subprocess.Popen([sys.executable, __file__, sys.argv[1], "writer"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        for round_no in range(1, 31):
            writer.stdin.write(f"{round_no}\\n")
            writer.stdin.flush()
            for line in writer.stdout:  # argilla's rich log handler also writes here (missing-doc warnings)
                if line.strip() == "done":
                    break
            else:
                raise RuntimeError("the writer process stopped")
            model_apply(model, round_no)
            count = [0]
            def counting(text, count=count):
                count[0] += 1
                return real_loads(text)
            sqlite_engine.json.loads = counting
            try:
                got = await state(e)
            finally:
                sqlite_engine.json.loads = real_loads
            out["rounds"].append(got == [[d, t] for d, t in model.items()] or {"got": got, "want": list(model.items())})
            out["parsed"].append([count[0], len(ops(round_no))])
        writer.stdin.close()
        assert writer.wait(timeout=60) == 0
        subprocess.run([sys.executable, __file__, sys.argv[1], "recreate"], check=True)
        out["after_recreate"] = await state(e)
        return out

    result = asyncio.run(main())
    if result is not None:
        print(json.dumps(result))
    """
)


def test_a_stale_cache_catches_up_on_what_another_process_wrote(tmp_path):
    """30 rounds of another process's writes (upserts, new ids, deletes, re-inserts, updates) against a
    model of the index: after each, this process's search shows exactly the model, having parsed only
    the documents written that round; an index deleted and re-created elsewhere is read afresh."""
    out = run_engine_script(tmp_path, CATCH_UP_SCRIPT, "main", timeout=600)
    assert out["rounds"] == [True] * 30, [r for r in out["rounds"] if r is not True][:1]
    # a round writes at most one document per operation: the catch-up parses those, not the 40+ in the index
    assert all(parsed <= n_ops for parsed, n_ops in out["parsed"]), out["parsed"]
    assert sum(parsed for parsed, _ in out["parsed"]) > 0
    assert out["after_recreate"] == [["new", "after re-creation"]]


OLD_FILE_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os, sqlite3, sys
    # a search index in the previous file format (no epoch, rev, tombstones), as an existing home has it
    db = sqlite3.connect(os.environ["BABELRAG_SEARCH_DB"])
    db.executescript(
        "CREATE TABLE indices (name TEXT PRIMARY KEY, mappings TEXT NOT NULL, settings TEXT NOT NULL,"
        "                      version INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE docs (idx TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, source TEXT NOT NULL,"
        "                   PRIMARY KEY (idx, id));"
        "INSERT INTO indices VALUES ('rg.old', '{}', '{}', 7);"
        "INSERT INTO docs VALUES ('rg.old', 'a', 1, '{\\"id\\": \\"a\\"}');"
        "INSERT INTO docs VALUES ('rg.old', 'b', 2, '{\\"id\\": \\"b\\"}');")
    db.commit()
    db.close()
    sys.path.insert(0, sys.argv[1])
    from sqlite_engine import SQLiteSearchEngine

    async def ids(e):
        res = await e._index_search_request("rg.old", {"match_all": {}}, size=10, from_=0)
        return [h["_id"] for h in res["hits"]["hits"]]

    async def main():
        e = await SQLiteSearchEngine.new_instance()
        out = {"read": await ids(e)}
        await e._bulk_op_request([{"_op_type": "delete", "_index": "rg.old", "_id": "a"},
                                  {"_op_type": "index", "_index": "rg.old", "_id": "c", "id": "c"}])
        out["after_write"] = await ids(e)
        return out

    print(json.dumps(asyncio.run(main())))
    """
)


def test_an_index_file_of_the_previous_format_is_upgraded_on_connect(tmp_path):
    assert run_engine_script(tmp_path, OLD_FILE_SCRIPT) == {"read": ["a", "b"], "after_write": ["b", "c"]}


# ----------------------------------------------------------------------------- 10,000 records through the SDK

VOCAB = ("falcon river harbour summit treaty market orbit glacier festival vaccine tariff election bridge "
         "drought museum rocket strike merger ferry census").split()
TOPICS = ("politics", "sports", "science", "health", "culture")
N_RECORDS = 10_000


def corpus_records(n: int = N_RECORDS) -> list[dict]:
    """Deterministic records: texts from a small vocabulary (some words capitalised), terms/int/float metadata."""
    rng = random.Random(17)
    rows = []
    for i in range(n):
        words = [rng.choice(VOCAB) for _ in range(rng.randint(3, 9))]
        words = [w.capitalize() if rng.random() < 0.2 else w for w in words]
        rows.append({"id": f"r{i:05d}", "text": " ".join(words) + ".", "title": rng.choice(VOCAB).upper(),
                     "topic": rng.choice(TOPICS), "year": rng.randint(1990, 2024), "score": round(rng.random(), 3)})
    return rows


def search_dataset(client, settings):
    """The dataset the records go to: two text fields, one question, terms/integer/float metadata."""
    import argilla as rg

    ps.ensure_users(client, settings)
    return rg.Dataset(name="search-10k", workspace=settings.workspace, client=client, settings=rg.Settings(
        fields=[rg.TextField(name="text", client=client), rg.TextField(name="title", client=client)],
        questions=[rg.LabelQuestion(name="ok", labels=["yes", "no"], client=client)],
        metadata=[rg.TermsMetadataProperty(name="topic", client=client),
                  rg.IntegerMetadataProperty(name="year", client=client),
                  rg.FloatMetadataProperty(name="score", client=client)])).create()


def _words(row: dict) -> set[str]:
    return {w.lower() for w in re.findall(r"\w+", row["text"] + " " + row["title"])}


@pytest.fixture(scope="module")
def big_dataset(tmp_path_factory):
    import argilla as rg

    settings = AnnotateSettings(server=ServerSettings(home=tmp_path_factory.mktemp("argilla-10k"), port=0))
    server = ArgillaServer(settings.server).start()
    try:
        ds = search_dataset(api.client(api.resolve_target(settings)), settings)
        rows = corpus_records()
        ds.records.log([rg.Record(id=r["id"], fields={"text": r["text"], "title": r["title"]},
                                  metadata={"topic": r["topic"], "year": r["year"], "score": r["score"]}) for r in rows],
                       batch_size=500)  # the most one request takes (the SDK would cut 1000 down to it)
        yield ds, rows
    finally:
        server.stop()


SEARCHES = {  # name -> (text query, SDK filter conditions, the same selection in Python)
    "one word": ("falcon", [], lambda r: "falcon" in _words(r)),
    "two words (AND)": ("falcon river", [], lambda r: {"falcon", "river"} <= _words(r)),
    "prefix": ("harb*", [], lambda r: any(w.startswith("harb") for w in _words(r))),
    "word in the title field": ("GLACIER", [], lambda r: "glacier" in _words(r)),
    "terms": (None, [("metadata.topic", "in", ["sports", "health"])], lambda r: r["topic"] in ("sports", "health")),
    "integer range": (None, [("metadata.year", ">=", 2000), ("metadata.year", "<=", 2010)],
                      lambda r: 2000 <= r["year"] <= 2010),
    "float range": (None, [("metadata.score", ">=", 0.9)], lambda r: r["score"] >= 0.9),
    "text + terms + range": ("glacier", [("metadata.topic", "==", "science"), ("metadata.year", ">=", 2015)],
                             lambda r: "glacier" in _words(r) and r["topic"] == "science" and r["year"] >= 2015),
    "terms + two ranges": (None, [("metadata.topic", "in", ["politics"]), ("metadata.year", "<=", 1995),
                                  ("metadata.score", "<=", 0.5)],
                           lambda r: r["topic"] == "politics" and r["year"] <= 1995 and r["score"] <= 0.5),
    "no match": ("zeppelin", [], lambda r: False),
}


@pytest.mark.parametrize("name", list(SEARCHES))
def test_search_over_10000_records_matches_python(big_dataset, name):
    import argilla as rg

    ds, rows = big_dataset
    text, conditions, keep = SEARCHES[name]
    expected = {r["id"] for r in rows if keep(r)}
    query = rg.Query(query=text, filter=rg.Filter(conditions) if conditions else None)
    found = [rec.id for rec in ds.records(query=query, batch_size=1000)]
    assert len(found) == len(set(found))  # pages neither repeat nor skip records
    assert set(found) == expected, (name, len(found), len(expected))
    if name != "no match":
        assert 0 < len(expected) < N_RECORDS  # the selection is a real subset
