"""An annotator's next page after another process wrote: catch-up read vs the full reload it replaces.

The embedded search engine keeps each index's parsed documents in every server process. When another
process (an rq worker, a second API worker) writes, the next search must bring that cache up to date.
It reads only the rows stamped with a newer version (the catch-up); the baseline, measured in the same
run on the same index, is what that search used to cost: parsing the whole index again. Also printed:
a search from an up-to-date cache, the floor of both.

Reads are timed alone and inside a page.
The query is an annotator's queue page: pending, not answered by this user, 10 records, sorted.
Usage: python bench/bench_annotate_search.py [--records 100000] [--writes 1]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from bench_annotate_push import engine_setup

SCRIPT = r'''
import asyncio, json, statistics, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
import sqlite_engine
from sqlite_engine import SQLiteSearchEngine

IDX = "rg.bench"
QUEUE = {"bool": {"filter": [{"terms": {"status": ["pending"]}}],
                  "must_not": [{"term": {"responses.user_id": "u1"}}]}}

async def main(template, n, writes, role):
    e = await SQLiteSearchEngine.new_instance()
    if role == "writer":  # the other process: answer `writes` records as u2
        for k in range(writes):
            await e._update_document_request(IDX, f"d{k * 7919 % n}", {"script": {
                "source": "... responses.add(params.response)",
                "params": {"response": {"id": f"x{k}", "user_id": "u2", "status": "submitted"}}}})
        return None
    docs = json.load(open(template))
    await e._create_index_request(IDX, {"properties": {}}, {})
    for start in range(0, n, 256):
        await e._bulk_op_request([{"_op_type": "index", "_index": IDX, "_id": f"d{start + i}",
                                   **dict(docs[i % len(docs)], id=f"d{start + i}")} for i in range(min(256, n - start))])

    async def page():
        t = time.perf_counter()
        await e._index_search_request(IDX, QUEUE, size=10, from_=0, sort=[{"inserted_at": {"order": "asc"}}])
        return time.perf_counter() - t

    def read():
        t = time.perf_counter()
        sqlite_engine._load(IDX)
        return time.perf_counter() - t

    out = {"full_read": [], "full_page": [], "cached_page": [], "catch_up_read": [], "catch_up_page": []}
    for _ in range(3):
        sqlite_engine._cache.clear()                # the baseline: this process parses the whole index
        out["full_read"].append(read())
        sqlite_engine._cache.clear()
        out["full_page"].append(await page())
        out["cached_page"].append(await page())     # up to date: no read at all
        subprocess.run([sys.executable, __file__, sys.argv[1], template, str(n), str(writes), "writer"], check=True)
        out["catch_up_read"].append(read())         # another process wrote: read only its rows
        subprocess.run([sys.executable, __file__, sys.argv[1], template, str(n), str(writes), "writer"], check=True)
        out["catch_up_page"].append(await page())
    return {k: statistics.median(v) for k, v in out.items()}

result = asyncio.run(main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))
if result is not None:
    print(json.dumps(result))
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, action="append", help="index size (repeatable); default 10000 and 100000")
    ap.add_argument("--writes", type=int, default=1, help="documents the other process updates between pages")
    args = ap.parse_args()
    for n in args.records or [10_000, 100_000]:
        root = Path(tempfile.mkdtemp(prefix="bench-search-"))
        python, server_dir, env = engine_setup(root, 256)
        (root / "search_bench.py").write_text(SCRIPT)
        done = subprocess.run([str(python), str(root / "search_bench.py"), str(server_dir), str(root / "docs.json"),
                               str(n), str(args.writes), "main"], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(done.stderr[-3000:])
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{n:,} records, {args.writes} written by another process (medians of 3):\n"
              f"  bringing the cache up to date: catch-up {r['catch_up_read'] * 1000:.1f} ms vs full reload (the old "
              f"path) {r['full_read'] * 1000:.0f} ms = {r['catch_up_read'] / r['full_read']:.3f}x\n"
              f"  queue page after the write: {r['catch_up_page']:.3f} s vs {r['full_page']:.3f} s with a full "
              f"reload = {r['catch_up_page'] / r['full_page']:.2f}x; from an up-to-date cache {r['cached_page']:.3f} s",
              flush=True)


if __name__ == "__main__":
    main()
