"""Pushing many records to the embedded Argilla: does indexing stay flat, and what does the search engine add?

Two local servers run side by side, identical except that one has the search engine's document
writes disabled (``BABELRAG_SEARCH_WRITES=off``: the floor set by argilla-server's own work, SQLite
database and HTTP). The same Q&A-verification records are pushed to both, batch by batch, alternating
which server goes first, so load on this shared machine hits both alike. Printed:

- per-batch seconds, first vs last window of batches (median of ``--window`` batches each) for both
  servers: a per-batch cost that grows with the dataset shows as a ratio > 1. Wall time and the API
  server process's CPU time (read from /proc): on a machine shared with other jobs the wall time
  swings with their load, the CPU time far less;
- total push time with our search engine / the same push with its writes disabled (target <= 1.2x).
``--engine-only`` times just the engine's bulk writes over a growing index (no server, no HTTP).

Usage: python bench/bench_annotate_push.py [--records 2000] [--records 100000 --checkpoint 10000] [--batch 256]
[--dump timings.json]. 100,000 records take over an hour on a loaded 2-core machine: run it in the background;
``--checkpoint 10000`` also prints the figures after the first 10,000 records of that push.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from babelrag.annotate import argilla_api as api
from babelrag.annotate import projects, push as ps, samples
from babelrag.annotate.settings import AnnotateSettings, ServerSettings
from babelrag.annotate.server.process import SEARCH_WRITES_ENV as WRITES_ENV
from babelrag.annotate.server.process import ArgillaServer
from babelrag.annotate.sources import LexicalHighlighter

LEXICAL = LexicalHighlighter()  # the push is measured, not the highlighting: no encoder in the loop


@contextmanager
def started(home: Path, writes: bool = True, env: dict[str, str] | None = None):
    """A local server whose search engine writes documents (or, for the baseline, does not); ``env``: more
    variables its children read when they are spawned (a bench baseline's switches)."""
    settings = AnnotateSettings(server=ServerSettings(home=home, port=0), min_submitted=1)
    switches = {**(env or {}), **({} if writes else {WRITES_ENV: "off"})}
    old = {k: os.environ.get(k) for k in (*switches, WRITES_ENV)}
    os.environ.pop(WRITES_ENV, None)
    os.environ.update(switches)  # read by the server's children when they are spawned
    server = ArgillaServer(settings.server)
    try:
        server.start()
    finally:
        for k, v in old.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v
    try:
        client = api.client(api.resolve_target(settings))
        yield settings, client, server._procs["server"].pid
    finally:
        server.stop()


def cpu_seconds(pid: int) -> float:
    """User+system CPU time of a process so far: unlike wall time, barely moved by other jobs' load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def new_dataset(client, settings: AnnotateSettings, name: str):
    import argilla as rg

    ps.ensure_users(client, settings)
    return rg.Dataset(name=name, workspace=settings.workspace,
                      settings=projects.to_argilla_settings("qa_verification", settings, client), client=client).create()


def window_median(times: list[float], window: int, last: bool) -> float:
    part = times[-window:] if last else times[:window]
    return statistics.median(part)


def report(n: int, batch: int, window: int, timings: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    eng, base = timings["engine"], timings["baseline"]
    w = window or max(5, len(eng) // 10)
    w = min(w, max(1, len(eng) // 4))
    print(f"push {n} records in {len(eng)} batches of {batch} (first/last windows: median of {w} batches):")
    for name, times in (("engine", eng), ("baseline", base)):
        first, last = window_median(times, w, last=False), window_median(times, w, last=True)
        print(f"  {name:8s} wall: total {sum(times):7.1f} s ({n / sum(times):5.0f} records/s); per batch first "
              f"{first:.2f} s, last {last:.2f} s: last/first {last / first:.2f}")
    for name, secs in cpu.items():
        if secs:
            first, last = window_median(secs, w, last=False), window_median(secs, w, last=True)
            print(f"  {name:8s} server CPU: total {sum(secs):7.1f} s; per batch first {first:.2f} s, last {last:.2f} s: "
                  f"last/first {last / first:.2f}")
    paired = [e / b for e, b in zip(eng, base)]  # the two pushes of one batch run back to back
    print(f"  engine/baseline per batch (paired wall): first {window_median(paired, w, last=False):.2f}x, "
          f"last {window_median(paired, w, last=True):.2f}x")
    print(f"  search engine writes on / off: wall {sum(eng) / sum(base):.2f}x"
          + (f", server CPU {sum(cpu['engine']) / sum(cpu['baseline']):.2f}x" if cpu.get("baseline") else "")
          + " (target <= 1.2x)", flush=True)


def run(n: int, batch: int, window: int, checkpoints: list[int], dump: Path | None) -> None:
    items = samples.qa_items(n)
    arts = {a["id"]: a for a in samples.articles(n)}
    root = Path(tempfile.mkdtemp(prefix="bench-push-"))
    timings: dict[str, list[float]] = {"engine": [], "baseline": []}
    cpu: dict[str, list[float]] = {"engine": [], "baseline": []}
    with started(root / "baseline", writes=False) as (s_base, c_base, pid_base), \
            started(root / "engine", writes=True) as (s_eng, c_eng, pid_eng):
        datasets = {"baseline": new_dataset(c_base, s_base, f"bench-{n}"), "engine": new_dataset(c_eng, s_eng, f"bench-{n}")}
        pids = {"baseline": pid_base, "engine": pid_eng}
        for k, start in enumerate(range(0, n, batch)):
            chunk = projects.build_records("qa_verification", items[start : start + batch], s_eng, articles=arts,
                                           highlighter=LEXICAL)
            order = ("engine", "baseline") if k % 2 == 0 else ("baseline", "engine")
            for name in order:
                records = projects.to_argilla_records(chunk)
                t, c = time.perf_counter(), cpu_seconds(pids[name])
                datasets[name].records.log(records, batch_size=len(records))
                timings[name].append(time.perf_counter() - t)
                cpu[name].append(cpu_seconds(pids[name]) - c)
            done = start + len(chunk)
            if k % 10 == 0:
                print(f"  batch {k:4d} (records {done:6d}): engine {timings['engine'][-1]:.2f} s, "
                      f"baseline {timings['baseline'][-1]:.2f} s", file=sys.stderr, flush=True)
            if dump:
                dump.write_text(json.dumps({"records": n, "batch": batch, "timings": timings, "cpu": cpu}))
            if done < n and any(start < c <= done for c in checkpoints):
                report(done, batch, window, timings, cpu)
        for name, client in (("engine", c_eng), ("baseline", c_base)):
            total = client.http_client.get(f"/api/v1/datasets/{datasets[name].id}/records", params={"limit": 1}).json()["total"]
            assert total == n, (name, total)
    report(n, batch, window, timings, cpu)


ENGINE_SCRIPT = """
import asyncio, json, sys, time
sys.path.insert(0, sys.argv[1])
from sqlite_engine import SQLiteSearchEngine

async def main(template, n, batch):
    docs = json.load(open(template))
    engine = await SQLiteSearchEngine.new_instance()
    await engine._create_index_request("rg.bench", {"properties": {}}, {})
    times = []
    for k, start in enumerate(range(0, n, batch)):
        actions = [{"_op_type": "index", "_index": "rg.bench", "_id": f"d{start + i}", **dict(docs[i % len(docs)], id=f"d{start + i}")}
                   for i in range(min(batch, n - start))]
        t = time.perf_counter()
        await engine._bulk_op_request(actions)
        times.append(time.perf_counter() - t)
    print(json.dumps(times))

asyncio.run(main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
"""


def engine_setup(root: Path, batch: int) -> tuple[Path, Path, dict]:
    """(server venv python, engine module dir, env) for a script that drives the engine directly, and
    ``root/docs.json``: ``batch`` Q&A verification records shaped as Argilla indexes them (fields,
    metadata, suggestions, status, timestamps)."""
    from babelrag.annotate.server.venv import ensure_server_venv

    settings = AnnotateSettings()
    records = projects.build_records("qa_verification", samples.qa_items(batch), settings,
                                     articles={a["id"]: a for a in samples.articles(batch)}, highlighter=LEXICAL)
    docs = [{"fields": r.fields, "metadata": r.metadata, "status": "pending", "responses": [],
             "suggestions": {s.question: {"value": s.value, "agent": s.agent} for s in r.suggestions},
             "inserted_at": "2026-11-24T12:00:00", "updated_at": "2026-11-24T12:00:00"} for r in records]
    (root / "docs.json").write_text(json.dumps(docs))
    python = ensure_server_venv(settings.server.resolved_venv())
    server_dir = Path(__file__).resolve().parents[1] / "annotate" / "server"
    env = {"BABELRAG_SEARCH_DB": str(root / "search.sqlite3"), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return python, server_dir, env


def engine_only(n: int, batch: int, window: int) -> None:
    """The engine's bulk writes alone over a growing index: where the old per-document MAX(seq) scan grew."""
    import subprocess

    root = Path(tempfile.mkdtemp(prefix="bench-engine-"))
    python, server_dir, env = engine_setup(root, batch)
    (root / "engine_bench.py").write_text(ENGINE_SCRIPT)
    done = subprocess.run([str(python), str(root / "engine_bench.py"), str(server_dir), str(root / "docs.json"),
                           str(n), str(batch)], capture_output=True, text=True, env=env, check=True)
    times = json.loads(done.stdout.strip().splitlines()[-1])
    w = window or max(5, len(times) // 10)
    first, last = window_median(times, w, last=False), window_median(times, w, last=True)
    print(f"engine bulk writes only, {n} documents in {len(times)} batches of {batch}: total {sum(times):.1f} s, "
          f"per batch first {first * 1000:.1f} ms, last {last * 1000:.1f} ms: last/first {last / first:.2f} "
          f"(median of {w} batches each)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, action="append", help="records to push (repeatable); default 2000")
    ap.add_argument("--checkpoint", type=int, action="append", default=[],
                    help="also report after this many records of a longer push (e.g. 10000 inside 100000)")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--window", type=int, default=0, help="batches in the first/last window (default: 10%%, >= 5)")
    ap.add_argument("--dump", type=Path, help="write the per-batch timings as JSON here")
    ap.add_argument("--engine-only", action="store_true",
                    help="time only the search engine's bulk writes (no server, no HTTP), in the server venv")
    ap.add_argument("--from-dump", type=Path, help="only report the figures of an earlier run's --dump file "
                    "(at each --checkpoint and at its end)")
    args = ap.parse_args()
    if args.from_dump:
        data = json.loads(args.from_dump.read_text())
        timings, size, cpu = data["timings"], data["batch"], data.get("cpu", {})
        done = min(data["records"], len(timings["engine"]) * size)
        for n in [c for c in args.checkpoint if c < done] + [done]:
            k = -(-n // size)
            report(min(k * size, done), size, args.window, {name: t[:k] for name, t in timings.items()},
                   {name: t[:k] for name, t in cpu.items()})
        return
    if args.engine_only:
        for n in args.records or [100000]:
            engine_only(n, args.batch, args.window)
        return
    for n in args.records or [2000]:
        run(n, args.batch, args.window, args.checkpoint, args.dump)


if __name__ == "__main__":
    main()
