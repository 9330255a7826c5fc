"""Annotation server costs: start time, push of 1,000 records, pull; each as a ratio to a same-run baseline.

Baselines (measured in this run, on this machine):
- start: importing argilla_server in its venv (the floor any start pays) vs our full start (Redis,
  migrate-if-needed, owner, server + worker, readiness).
- push: writing the same 1,000 records as JSONL locally vs pushing them to Argilla (SQLite DB + our
  search engine index); a re-push of the same records (every record read back and found unchanged,
  nothing sent) vs the first push.
- pull: the SDK's own record iteration with responses vs our REST pull (which also keeps timestamps).
- queue: one page of an annotator's pending queue (search engine) vs one page of the plain record
  listing (database only).

Usage: python bench/bench_annotate.py [--records 1000] [--keep-home DIR]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from babelrag.annotate import argilla_api as api
from babelrag.annotate import projects, pull as pl, push as ps, samples
from babelrag.annotate.settings import AnnotateSettings, ServerSettings
from babelrag.annotate.server.process import ArgillaServer
from babelrag.annotate.server.venv import ensure_server_venv


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1000)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-argilla-"))
    settings = AnnotateSettings(users=[{"username": "ann1", "password": "ann1-password"}], min_submitted=1,
                                server=ServerSettings(home=home, port=0))
    python = ensure_server_venv(settings.server.resolved_venv())

    t = time.perf_counter()
    subprocess.run([str(python), "-c", "import argilla_server._app"], check=True, capture_output=True)
    import_s = time.perf_counter() - t

    server = ArgillaServer(settings.server)
    t = time.perf_counter()
    server.start()
    first_start_s = time.perf_counter() - t
    try:
        client = api.client(api.resolve_target(settings))
        items = samples.qa_items(args.records)
        records = projects.build_records("qa_verification", items, settings,
                                         articles={a["id"]: a for a in samples.articles(args.records)})

        t = time.perf_counter()
        (home / "baseline.jsonl").write_text("".join(json.dumps(q) + "\n" for q in items))
        jsonl_s = time.perf_counter() - t

        t = time.perf_counter()
        result = ps.push(client, settings, "qa_verification", records)
        push_s = time.perf_counter() - t
        assert result.new == args.records, result
        t = time.perf_counter()
        again = ps.push(client, settings, "qa_verification", records)  # resume / re-run: checks, sends nothing
        repush_s = time.perf_counter() - t
        assert (again.new, again.unchanged) == (0, args.records), again

        # one annotator answers 100 records so the pull carries responses
        token = httpx.post(f"{server.url}/api/v1/token", data={"username": "ann1", "password": "ann1-password"}).json()
        headers = {"Authorization": f"Bearer {token['access_token']}"}
        ds = api.find_dataset(client, settings, "qa_verification")
        listing = client.http_client.get(f"/api/v1/datasets/{ds.id}/records", params={"limit": 100}).json()["items"]
        for rec in listing:
            body = {"status": "submitted", "values": {"natural": {"value": "yes"}, "answerable": {"value": "yes"},
                                                       "answer_correct": {"value": "yes"}}}
            httpx.post(f"{server.url}/api/v1/records/{rec['id']}/responses", json=body, headers=headers).raise_for_status()

        # the annotator's queue page (our search engine evaluates the pending filter over 1,000 docs)
        # vs the same page from the plain listing endpoint (database only, no search engine)
        body = {"filters": {"and": [{"type": "terms", "scope": {"entity": "response", "property": "status"},
                                     "values": ["pending"]}]}}
        reps = 20
        t = time.perf_counter()
        for _ in range(reps):
            httpx.post(f"{server.url}/api/v1/me/datasets/{ds.id}/records/search", params={"limit": 10},
                       json=body, headers=headers).raise_for_status()
        queue_s = (time.perf_counter() - t) / reps
        t = time.perf_counter()
        for _ in range(reps):
            client.http_client.get(f"/api/v1/datasets/{ds.id}/records", params={"limit": 10}).raise_for_status()
        listing_s = (time.perf_counter() - t) / reps

        t = time.perf_counter()
        n_sdk = sum(1 for _ in ds.records(with_responses=True, with_suggestions=True))
        sdk_s = time.perf_counter() - t
        t = time.perf_counter()
        pulled = pl.pull(client, settings, "qa_verification", home / "pulled")
        pull_s = time.perf_counter() - t
        assert pulled.records == n_sdk == args.records and pulled.responses == 100
    finally:
        server.stop()

    t = time.perf_counter()
    server = ArgillaServer(settings.server)
    server.start()
    restart_s = time.perf_counter() - t
    server.stop()

    print(f"server first start: {first_start_s:.1f} s ({first_start_s / import_s:.1f}x the {import_s:.2f} s import of argilla_server)")
    print(f"server restart:     {restart_s:.1f} s ({restart_s / import_s:.1f}x the import)")
    print(f"push {args.records} records: {push_s:.1f} s ({push_s / jsonl_s:.0f}x writing them as JSONL, {jsonl_s * 1000:.1f} ms)")
    print(f"re-push of the same {args.records} records (read back, compared, nothing sent): {repush_s:.1f} s "
          f"({repush_s / push_s:.2f}x the first push)")
    print(f"pull {args.records} records + 100 responses: {pull_s:.2f} s ({pull_s / sdk_s:.2f}x the SDK's own iteration, {sdk_s:.2f} s)")
    print(f"annotator queue page over {args.records} records: {queue_s * 1000:.0f} ms "
          f"({queue_s / listing_s:.1f}x a plain listing page, {listing_s * 1000:.0f} ms)")
    print(f"timings: {server.timings}", file=sys.stderr)


if __name__ == "__main__":
    main()
