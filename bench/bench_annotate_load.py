"""Annotators under load: 32 concurrent annotators submitting for a bounded time on loopback, against
1 annotator in the same run (the baseline), on the real local Argilla server.

Each annotator works as the web UI does: fetch the first page of their Pending queue (search engine),
submit a response to its first record, repeat until the time is up. Printed per phase: submits,
throughput (submits/s), p50/p95 submit latency and p50 queue-page latency, then the 32-client figures
as ratios of the 1-client ones. Checked (the run fails otherwise): every submit the server
acknowledged is on the server afterwards, once per (annotator, record) — no response lost or doubled.

Usage: python bench/bench_annotate_load.py [--clients 32] [--seconds 20] [--records 400]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from babelrag.annotate import argilla_api as api
from babelrag.annotate import projects, push as ps, samples
from babelrag.annotate.pull import fetch_rows
from babelrag.annotate.settings import AnnotateSettings, ServerSettings
from babelrag.annotate.server.process import ArgillaServer

PENDING = {"filters": {"and": [{"type": "terms", "scope": {"entity": "response", "property": "status"},
                                "values": ["pending"]}]}}


@dataclass
class Annotator:
    username: str
    password: str
    submits: list[float] = field(default_factory=list)  # seconds per acknowledged submit
    queue: list[float] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)  # Argilla record ids
    errors: list[str] = field(default_factory=list)


def phase(server: ArgillaServer, client, settings: AnnotateSettings, prefix: str, team: list[Annotator],
          records: int, seconds: float) -> dict:
    s = settings.model_copy(update={"dataset_prefix": prefix})
    recs = projects.build_records("answer_judgement", samples.model_answers(records), s)
    ps.push(client, s, "answer_judgement", recs)
    dataset_id = str(api.find_dataset(client, s, "answer_judgement").id)
    for a in team:  # figures are per phase
        a.submits, a.queue, a.acknowledged, a.errors = [], [], [], []
    start = threading.Barrier(len(team) + 1, timeout=120)  # a sign-in that fails breaks it: no hang
    stop_box: dict[str, float] = {}  # the deadline, set once every annotator has signed in
    go = threading.Event()
    threads = [threading.Thread(target=_annotator_thread, args=(server.url, dataset_id, a, start, go, stop_box))
               for a in team]
    for t in threads:
        t.start()
    try:
        start.wait()
    except threading.BrokenBarrierError:
        raise SystemExit(f"not every annotator signed in: {[e for a in team for e in a.errors][:3]}") from None
    t0 = time.perf_counter()
    stop_box["at"] = t0 + seconds
    go.set()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    responses, rows = fetch_rows(client, s, "answer_judgement")
    on_server = [(r["annotator"], r["record_id"]) for r in responses if r["status"] == "submitted"]
    ids = {r["argilla_id"]: r["record_id"] for r in rows}
    acked = [(a.username, ids[rid]) for a in team for rid in a.acknowledged]
    assert len(set(acked)) == len(acked), "an annotator's submit was acknowledged twice for one record"
    assert sorted(on_server) == sorted(acked), (
        f"responses lost or extra: {len(acked)} acknowledged, {len(on_server)} on the server")
    submits = [x for a in team for x in a.submits]
    queue = [x for a in team for x in a.queue]
    errors = [e for a in team for e in a.errors]
    assert submits, f"no submit acknowledged with {len(team)} client(s): {errors[:3]}"
    return {"clients": len(team), "submits": len(submits), "wall_s": wall, "throughput": len(submits) / wall,
            "p50": statistics.median(submits), "p95": _p95(submits), "queue_p50": statistics.median(queue),
            "errors": errors}


def _annotator_thread(url: str, dataset_id: str, who: Annotator, start: threading.Barrier, go: threading.Event,
                      stop_box: dict) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        try:
            token = http.post("/api/v1/token", data={"username": who.username, "password": who.password}).json()
            http.headers["Authorization"] = f"Bearer {token['access_token']}"
        except (httpx.HTTPError, KeyError, ValueError) as exc:  # the others must not wait for this one
            who.errors.append(f"sign-in: {exc!r}")
            start.abort()
            return
        start.wait()
        go.wait()
        try:
            _loop(http, dataset_id, who, stop_box["at"])
        except httpx.HTTPError as exc:  # counted, so a dead client is not reported as a lost response
            who.errors.append(f"request: {exc!r}")


def _loop(http: httpx.Client, dataset_id: str, who: Annotator, stop_at: float) -> None:
    while time.perf_counter() < stop_at:
        t = time.perf_counter()
        page = http.post(f"/api/v1/me/datasets/{dataset_id}/records/search", params={"limit": 10}, json=PENDING)
        who.queue.append(time.perf_counter() - t)
        items = page.json().get("items", []) if page.status_code == 200 else []
        if not items:
            if page.status_code != 200:
                who.errors.append(f"queue: HTTP {page.status_code}")
            return  # an error, or every record of the queue is done
        record_id = items[0]["record"]["id"]
        body = {"status": "submitted", "values": {"verdict": {"value": "correct"}}}
        t = time.perf_counter()
        resp = http.post(f"/api/v1/records/{record_id}/responses", json=body)
        if resp.status_code == 201:
            who.submits.append(time.perf_counter() - t)
            who.acknowledged.append(record_id)
        else:
            who.errors.append(f"submit: HTTP {resp.status_code} {resp.text[:120]}")


def _p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1] if len(xs) >= 2 else xs[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--records", type=int, default=400)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-argilla-load-"))
    team = [Annotator(f"ann{i:02d}", f"ann{i:02d}-password") for i in range(1, args.clients + 1)]
    settings = AnnotateSettings(users=[{"username": a.username, "password": a.password} for a in team],
                                min_submitted=args.clients, server=ServerSettings(home=home, port=0))
    server = ArgillaServer(settings.server).start()
    try:
        client = api.client(api.resolve_target(settings))
        one = phase(server, client, settings, "load1", team[:1], args.records, args.seconds)
        many = phase(server, client, settings, f"load{args.clients}", team, args.records, args.seconds)
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)
    for r in (one, many):
        print(f"{r['clients']:>2} client(s): {r['submits']} submits in {r['wall_s']:.1f} s = {r['throughput']:.1f}/s; "
              f"submit p50 {r['p50'] * 1000:.0f} ms, p95 {r['p95'] * 1000:.0f} ms; queue page p50 "
              f"{r['queue_p50'] * 1000:.0f} ms; errors {len(r['errors'])}{' ' + r['errors'][0] if r['errors'] else ''}")
    print(f"{args.clients} vs 1 client: throughput {many['throughput'] / one['throughput']:.2f}x, "
          f"submit p50 {many['p50'] / one['p50']:.1f}x, p95 {many['p95'] / one['p95']:.1f}x; "
          f"no response lost ({one['submits'] + many['submits']} acknowledged = on the server)")


if __name__ == "__main__":
    main()
