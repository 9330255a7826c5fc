"""Pushing records with metadata to the embedded Argilla: ``annotate/server/hot_paths.py`` on vs off.

Two local servers run side by side, identical except that one runs Argilla's own code for the two hot paths
(``BABELRAG_ARGILLA_HOT_PATHS=off``: a webhook event built per record written although no webhook is
enabled, and a new pydantic TypeAdapter per settings parse). The same records (the shape of the 10,000-record
search test, ``tests/test_annotate_engine.py``: two text fields, terms/integer/float metadata) are pushed to
both in batches of 500 (the most one request takes), alternating which server goes first so load on a shared
machine hits both alike. Printed: wall and API-server CPU seconds per side and their ratio; then both
datasets are read back and must hold the same records (fields, metadata, status).

Usage: python bench/bench_annotate_hot_paths.py [--records 2000]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from babelrag.annotate.server.process import HOT_PATHS_ENV

from bench_annotate_push import cpu_seconds, started

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: the test's records
from tests.test_annotate_engine import corpus_records, search_dataset  # noqa: E402

BATCH = 500


def run(n: int) -> None:
    import argilla as rg

    rows = corpus_records(n)
    root = Path(tempfile.mkdtemp(prefix="bench-hot-paths-"))
    wall = {"on": 0.0, "off": 0.0}
    cpu = {"on": 0.0, "off": 0.0}
    with started(root / "on") as (s_on, c_on, pid_on), \
            started(root / "off", env={HOT_PATHS_ENV: "off"}) as (s_off, c_off, pid_off):
        datasets = {"on": search_dataset(c_on, s_on), "off": search_dataset(c_off, s_off)}
        pids = {"on": pid_on, "off": pid_off}
        for k, start in enumerate(range(0, n, BATCH)):
            for name in (("on", "off") if k % 2 == 0 else ("off", "on")):
                records = [rg.Record(id=r["id"], fields={"text": r["text"], "title": r["title"]},
                                     metadata={"topic": r["topic"], "year": r["year"], "score": r["score"]})
                           for r in rows[start : start + BATCH]]
                t, c = time.perf_counter(), cpu_seconds(pids[name])
                datasets[name].records.log(records, batch_size=BATCH)
                wall[name] += time.perf_counter() - t
                cpu[name] += cpu_seconds(pids[name]) - c
        read = {name: sorted((r.id, r.fields["text"], r.fields["title"], tuple(sorted(r.metadata.items())), r.status)
                             for r in ds.records(batch_size=1000)) for name, ds in datasets.items()}
        assert read["on"] == read["off"] and len(read["on"]) == n, "the two servers hold different records"
    print(f"push {n} records with metadata in batches of {BATCH}: hot paths on {wall['on']:.1f} s wall / "
          f"{cpu['on']:.1f} s server CPU, off (Argilla's own) {wall['off']:.1f} s / {cpu['off']:.1f} s; "
          f"on/off wall {wall['on'] / wall['off']:.2f}x, CPU {cpu['on'] / cpu['off']:.2f}x; same records read back",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2000)
    run(ap.parse_args().records)


if __name__ == "__main__":
    main()
