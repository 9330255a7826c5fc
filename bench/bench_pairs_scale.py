"""The real pairs stage at corpus scale on planted vectors, against the exact bound measured in the same run.

An encoder registered here (``planted``) returns a vector planted per article (its story's centre plus noise,
read from a tag in the title), so encoding costs nothing and only mining is timed. Corpora: en/de news, every
story reported once in each language plus same-language follow-ups, ``--per-day`` articles a day (the daily
volume stays fixed while the corpus grows), and a dense-window case (``--dense N`` articles over
``--dense-days`` days: every +-14-day window holds the whole corpus). For each corpus: ingest and index run
first (not timed), then the pairs stage alone in a fresh process (``babelrag``'s own ``Pipeline``, default
config, ``dense.queries: articles``) whose wall seconds and peak RSS are printed, then the exact bound: the same
searches as bare numpy blocks over date windows (cross-language queries, the mutual back-check, the
same-language neighbours; top-k by a per-row threshold (``topk``), no per-hit Python), in this process, on the same vectors.

Printed per corpus: stage seconds, peak RSS (and the vectors' own size), the exact bound's seconds and the ratio;
across corpora at the same daily volume: the growth per 10x articles against linear (10.0x). ``--milvus`` also
times the stage with ``dense.search: milvus`` (Milvus Lite's own search, the path before issue 34) on corpora of
at most ``--milvus-max`` articles. ``--hybrid-score title`` also runs the stage with the title score (its titles
file written, then reused) and prints its peak RSS against the passage score's. ``--hnsw`` starts a Milvus server (PyPI ``milvus``), stores the largest
corpus's vectors under HNSW and prints recall@k of its windowed searches against the exact search.

``--repeat N`` runs the stage and the bound N times per corpus (one ratio per round); ``--baseline DIR`` also runs
another checkout's stage (DIR/.venv, e.g. main's) on the same build in each round, with its own bound measured
right after it, and stops unless it wrote the same pairs.

    python bench/bench_pairs_scale.py [--sizes 10000 100000] [--per-day 550] [--dense 12000] [--dense-days 12]
        [--dim 384] [--milvus] [--milvus-max 12000] [--hnsw] [--hybrid-score title] [--keep DIR]
        [--repeat N] [--baseline DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TAG = re.compile(r"\[p(\d+) s(\d+) x(\d+)\]")  # [p<dim> s<story> x<article index>] in every title
EN = ("the minister said on monday that the city council would meet again after the storm damaged roads and "
      "schools while police asked drivers to stay home and officials promised new money for families").split()
DE = ("der minister sagte am montag dass der stadtrat nach dem sturm wieder tagen werde weil strassen und "
      "schulen beschaedigt wurden die polizei bat autofahrer zu hause zu bleiben und neue hilfen").split()
K = 20  # what the stage searches per query (max(dense.top_k, 20))


def planted_vector(dim: int, story: int, article: int) -> np.ndarray:
    """The story's centre plus article noise: same-story articles are each other's nearest neighbours."""
    centre = np.random.default_rng(story).normal(size=dim)
    noise = np.random.default_rng(10**9 + article).normal(size=dim)
    v = (centre / np.sqrt(dim) + 0.55 * noise / np.sqrt(dim)).astype(np.float32)
    return v / np.linalg.norm(v)


def register_planted() -> None:
    """The ``planted`` encoder kind (an Encoder subclass, registered like a plug-in)."""
    from babelrag.construct.encoders import registry
    from babelrag.construct.encoders.base import Encoder

    class PlantedEncoder(Encoder):
        kind = "planted"
        name = "planted"

        def __init__(self, batch_size: int = 512) -> None:
            self.batch_size = batch_size
            self.set_batch_size(batch_size)

        def _encode_batch(self, items: list[str], kind: Any) -> np.ndarray:
            out = []
            for text in items:
                m = TAG.search(text)
                if m is None:
                    raise ValueError(f"no planted tag in {text[:80]!r}")
                dim, story, art = (int(x) for x in m.groups())
                out.append(planted_vector(dim, story, art))
            self.dim = len(out[0]) if out else self.dim
            return np.stack(out)

    PlantedEncoder.__qualname__ = "PlantedEncoder"  # the registry checks the class against its declared path
    registry.ENCODERS.register_lazy("planted", f"{__name__}:PlantedEncoder")
    globals()["PlantedEncoder"] = PlantedEncoder


def corpus(path: Path, n: int, per_day: int, dim: int, seed: int = 0) -> None:
    """n articles, en and de alternating, per_day a day: stories of 2-4 reports (one per language, follow-ups in
    either) within 3 days of each other."""
    rng = np.random.default_rng(seed)
    with path.open("w", encoding="utf-8") as f:
        story, i = 0, 0
        while i < n:
            size = int(rng.integers(2, 5))
            start = i // per_day
            for r in range(min(size, n - i)):
                lang = "en" if r % 2 == 0 else "de"
                words = EN if lang == "en" else DE
                day = min(start + int(rng.integers(0, 3)), (n - 1) // per_day)
                text = " ".join(rng.choice(words, size=60)) + f" report {i} story {story}."
                date = (np.datetime64("2026-01-01") + np.timedelta64(day, "D")).astype(str)
                f.write(json.dumps({"id": f"a{i:07d}", "title": f"News {i} [p{dim} s{story} x{i}]",
                                    "maintext": text, "language": lang, "date_publish": date}) + "\n")
                i += 1
            story += 1


def config(build: Path, data: Path, search: str, hybrid_score: str = "passage") -> dict:
    return {"project": {"build_dir": str(build), "languages": ["en", "de"]},
            "corpus": {"inputs": [{"path": str(data), "format": "jsonl"}], "min_tokens": 20,
                       "near_duplicate_threshold": 1.0},
            "dense": {"encoder": {"kind": "planted"}, "queries": "articles", "search": search},
            "pairs": {"graphml": False, "hybrid_score": hybrid_score}}


def stage_child(cfg_path: str, force: str) -> None:
    """Run in a fresh process: the pipeline up to pairs (ingest/index done), print seconds and peak RSS."""
    register_planted()
    from babelrag.config import config_from_dict
    from babelrag.pipeline import Pipeline
    from babelrag.parquet_io import iter_column
    from babelrag.shards import RECORDS_FILE
    from babelrag.store import BuildStore

    # the stage's imports are a fixed start-up cost, not mining: loaded before the timer (datasets: the stage
    # writer's Arrow schema; pymilvus: the Milvus path; scipy.sparse: the entity graph's lazy import, 0.2-0.4 s)
    import babelrag.construct.crosslingual  # noqa: F401
    import babelrag.construct.samelang  # noqa: F401
    import datasets  # noqa: F401
    import pymilvus  # noqa: F401
    import scipy.sparse  # noqa: F401

    raw = json.loads(Path(cfg_path).read_text())
    cfg = config_from_dict(raw)
    rss_start = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    t, c = time.perf_counter(), time.process_time()
    Pipeline(cfg).run(until="pairs", force=["pairs"] if force == "yes" else [])
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    # peak RSS of this process's own address space (VmHWM), read before the check below reads the pairs back:
    # getrusage's ru_maxrss keeps the peak from before exec, i.e. the bench parent's size at the fork (ingest,
    # index and Milvus Lite ran there), which it over-reported
    hwm = next(int(x.split()[1]) for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmHWM"))
    store = BuildStore(cfg.build_dir)
    search = store.manifest("pairs").extra.get("search", {})
    digest = hashlib.sha256()  # of (id, score) in id order, the file's own order, one row group at a time
    n = 0
    for i, score in zip(iter_column(store.stage_dir("pairs") / RECORDS_FILE, "id"),
                        iter_column(store.stage_dir("pairs") / RECORDS_FILE, "score")):
        digest.update(json.dumps([i, score]).encode())
        n += 1
    print(json.dumps({"seconds": seconds, "cpu": cpu, "rss_mb": hwm / 1024,
                      "rss_start_mb": rss_start, "source": search.get("source"),
                      "output_fingerprint": store.manifest("pairs").output_fingerprint,
                      "title_vectors": store.manifest("pairs").extra.get("title_vectors"),
                      "pairs": n, "read_seconds": search.get("read_seconds"), "digest": digest.hexdigest()}))


def run_stage(build: Path, data: Path, search: str, force: bool, hybrid_score: str = "passage",
              checkout: Path | None = None) -> dict:
    """The stage in a fresh process; ``checkout``: another checkout's stage (its ``.venv`` and this script there)."""
    cfg_path = build.parent / f"{build.name}-{search}-{hybrid_score}.json"
    cfg_path.write_text(json.dumps(config(build, data, search, hybrid_score)))
    python, script = sys.executable, __file__
    if checkout is not None:
        python, script = str(checkout / ".venv" / "bin" / "python"), str(checkout / "bench" / Path(__file__).name)
    proc = subprocess.run([python, script, "--child", str(cfg_path), "yes" if force else "no"],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if proc.returncode != 0:
        raise SystemExit(f"pairs stage failed ({search}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def title_score_line(build: Path, data: Path, passage: dict) -> str:
    """The stage with the title score, twice (the titles file written, then reused): peak RSS above the passage
    score's run (``passage``), which is what holding title vectors costs."""
    from babelrag.construct.titlevectors import TITLE_FILE, TITLE_MANIFEST
    from babelrag.store import BuildStore

    out = ""
    for run in ("writes", "reuses"):
        if run == "writes":  # from a kept build: written again (its titles from the vector cache, as a re-write)
            for name in (TITLE_FILE, TITLE_MANIFEST):
                (BuildStore(build).shared_path("vectors") / name).unlink(missing_ok=True)
        res = run_stage(build, data, "exact", force=True, hybrid_score="title")
        tv = res["title_vectors"] or {}
        out += (f"\n    hybrid_score title ({run} the titles file: reused {tv.get('reused')}): "
                f"{res['seconds']:.1f} s wall / {res['cpu']:.1f} s CPU, peak RSS {res['rss_mb']:.0f} MB "
                f"({res['rss_mb'] - passage['rss_mb']:+.0f} MB against the passage score); {tv.get('rows', 0):,} "
                f"title rows of {tv.get('dim')}-d, at most {tv.get('rows_held_max', 0):,} at once, "
                f"{tv.get('rows_read', 0):,} read; {res['pairs']:,} pairs (digest {res['digest'][:12]})")
    return out


def prepare(build: Path, data: Path) -> None:
    """ingest + index (not timed)."""
    from babelrag.config import config_from_dict
    from babelrag.pipeline import Pipeline

    Pipeline(config_from_dict(config(build, data, "exact"))).run(until="index")


def topk(scores: np.ndarray, k: int) -> np.ndarray:
    """Each row's k best columns, unordered, ties broken anyhow: the cheapest bare-numpy way this bench knows, so
    the bound is no looser than the stage's own top-k (construct/exactsearch._top_rows, which also orders them and
    applies the tie rule): a floor per row, the k-th largest of ``4k`` column-group maxima (at least k scores reach
    it), then an ``argpartition`` of the few columns at or above it. (A whole-row ``argpartition``, the bound before
    2026-11-27 evening, costs more than the stage's threshold top-k.)"""
    m, n = scores.shape
    k = min(k, n)
    if k == n:
        return np.arange(k)[None, :].repeat(m, 0)
    group = max(1, n // (4 * k))
    groups = n // group
    maxima = scores[:, :groups * group].reshape(m, group, groups).max(axis=1)
    floor = np.partition(maxima, groups - k, axis=1)[:, groups - k]
    flat = np.flatnonzero(scores >= floor[:, None])  # (row, column) from flat indices: a 2-D nonzero is ~10x slower
    rows = flat // n
    cols = flat - rows * n
    counts = np.bincount(rows, minlength=m)
    pos = np.arange(len(rows)) - (np.cumsum(counts) - counts)[rows]
    width = int(counts.max())
    vals = np.full((m, width), -np.inf, dtype=scores.dtype)
    short = np.zeros((m, width), dtype=np.intp)
    vals[rows, pos], short[rows, pos] = scores[rows, cols], cols
    return np.take_along_axis(short, np.argpartition(vals, width - k, axis=1)[:, width - k:], axis=1)


def exact_bound(days: np.ndarray, langs: np.ndarray, vecs: np.ndarray, window: int = 14,
                block: int = 64) -> tuple[float, float, int]:
    """The stage's searches as bare numpy: every de article's top-K among en articles of its batch's date span,
    the back-check (every en article's top-K among de articles), every en article's top-K+1 among en articles
    (same-language pairs are mined in the pivot language only: ``pairs.same_language_in: pivot``)."""
    t, c = time.perf_counter(), time.process_time()
    products = 0  # query x candidate dot products: the work a projection scales
    by = {}
    for lang in ("en", "de"):
        rows = np.flatnonzero(langs == lang)
        rows = rows[np.argsort(days[rows], kind="stable")]
        by[lang] = (days[rows], vecs[rows])
    for q_lang, c_lang, k in (("de", "en", K), ("en", "de", K), ("en", "en", K + 1)):
        qd, qv = by[q_lang]
        cd, cv = by[c_lang]
        for s in range(0, len(qd), block):
            lo = np.searchsorted(cd, qd[s] - window, "left")
            hi = np.searchsorted(cd, qd[min(s + block, len(qd)) - 1] + window, "right")
            if hi > lo:
                topk(qv[s:s + block] @ cv[lo:hi].T, k)
                products += len(qv[s:s + block]) * int(hi - lo)
    return time.perf_counter() - t, time.process_time() - c, products


def planted_arrays(data: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    days, langs, vecs = [], [], []
    start = np.datetime64("2026-01-01")
    for line in data.open(encoding="utf-8"):
        r = json.loads(line)
        dim, story, art = (int(x) for x in TAG.search(r["title"]).groups())
        days.append(int((np.datetime64(r["date_publish"]) - start).astype(int)))
        langs.append(r["language"])
        vecs.append(planted_vector(dim, story, art))
    return np.asarray(days), np.asarray(langs), np.stack(vecs)


def hnsw_recall(data: Path, queries: int = 500, k: int = K, ef: int = 64) -> None:
    """recall@k of a Milvus server's HNSW index on the stage's windowed searches, against exact search."""
    import milvus

    from babelrag.construct.exactsearch import WindowIndex
    from babelrag.construct.vectorstore import VectorStore

    import fcntl

    days, langs, vecs = planted_arrays(data)
    ids = [f"a{i:07d}" for i in range(len(days))]
    # one Milvus server per machine at a time (its etcd binds port 2380): the tests' lock (test_construct_vectorstore)
    lock = open(os.path.join(tempfile.gettempdir(), "babelrag-milvus-server.lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    srv = milvus.MilvusServer()
    srv.set_base_dir(tempfile.mkdtemp(prefix="bench-milvus-server-"))
    srv.start()
    try:
        uri = f"http://127.0.0.1:{srv.config.configurable_items['proxy_port'][1]}"
        vs = VectorStore(uri, "bench_hnsw", vecs.shape[1], index_type="HNSW")
        vs.upsert(ids, vecs, langs.tolist(), days.tolist(), [""] * len(ids), [""] * len(ids), batch=2000)
        built = vs.seal()  # what the index stage does: flush, then wait until HNSW covers every row
        print(f"server rows: {vs.count():,} of {len(ids):,}; index {built}", flush=True)
        exact = WindowIndex(ids, langs.tolist(), days.tolist(), vecs)
        rng = np.random.default_rng(0)
        pick = rng.choice(np.flatnonzero(langs == "de"), size=min(queries, int((langs == "de").sum())), replace=False)
        got, want = 0, 0
        t_h = t_e = 0.0
        for i in pick:
            where = {"languages": ["en"], "published_from": int(days[i]) - 14, "published_to": int(days[i]) + 14}
            t = time.perf_counter()
            h = {x.id for x in vs.search(vecs[i], top_k=k, search_params={"ef": ef}, **where)[0]}
            t_h += time.perf_counter() - t
            t = time.perf_counter()
            e = {x.id for x in exact.search(vecs[i], top_k=k, **where)[0]}
            t_e += time.perf_counter() - t
            got += len(h & e)
            want += len(e)
        print(f"HNSW (M 16, efConstruction 200, ef {ef}) on a Milvus {milvus.__version__} server, {len(ids):,} vectors: "
              f"recall@{k} {got / max(1, want):.4f} over {len(pick)} windowed queries; "
              f"{t_h / len(pick) * 1e3:.1f} ms/query one at a time vs exact {t_e / len(pick) * 1e3:.1f} ms/query")
        vs.drop()
        vs.close()
    finally:
        srv.stop()
        srv.cleanup()
        lock.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    ap.add_argument("--per-day", type=int, default=550)
    ap.add_argument("--dense", type=int, default=12_000, help="dense-window corpus size (0: none)")
    ap.add_argument("--dense-days", type=int, default=12)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--milvus", action="store_true", help="also time dense.search: milvus (Milvus Lite's search)")
    ap.add_argument("--milvus-max", type=int, default=12_000)
    ap.add_argument("--hnsw", action="store_true", help="recall@k of HNSW on a Milvus server (PyPI milvus)")
    ap.add_argument("--hnsw-ef", type=int, nargs="+", default=[64], help="HNSW search ef values to measure")
    ap.add_argument("--keep", type=Path, default=None, help="build folder to keep (default: a temporary one)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run the stage and the bound this many times per corpus, one after the other (a shared box's "
                         "load moves CPU seconds too): one ratio per round")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="another checkout (with its .venv, e.g. main's): its stage runs on the same build in every "
                         "round, right after this one's, and must write the same pairs")
    ap.add_argument("--hybrid-score", choices=["passage", "title"], default="passage",
                    help="title: also run the stage with pairs.hybrid_score title (its titles file written, then "
                         "reused) and print its peak RSS against the passage score's")
    args = ap.parse_args()
    register_planted()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-pairs-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    cases = [(f"{n:,} articles at {args.per_day}/day", n, args.per_day) for n in args.sizes]
    if args.dense:
        cases.append((f"dense window: {args.dense:,} articles at {args.dense // args.dense_days}/day",
                      args.dense, args.dense // args.dense_days))
    rows = []
    try:
        for label, n, per_day in cases:
            data = root / f"c{n}-{per_day}.jsonl"
            build = root / f"b{n}-{per_day}"
            corpus(data, n, per_day, args.dim)
            t = time.perf_counter()
            prepare(build, data)
            prep = time.perf_counter() - t
            res = run_stage(build, data, "exact", force=True)
            days, langs, vecs = planted_arrays(data)
            bound, bound_cpu, products = exact_bound(days, langs, vecs)
            line = (f"{label} ({args.dim}-d): pairs stage {res['seconds']:.1f} s wall / {res['cpu']:.1f} s CPU, peak "
                    f"RSS {res['rss_mb']:.0f} MB ({res['rss_start_mb']:.0f} MB at its start; vectors "
                    f"{vecs.nbytes / 2**20:.0f} MB, read from the {res['source']} in {res['read_seconds']} s), "
                    f"{res['pairs']:,} pairs; exact "
                    f"bound {bound:.2f} s wall / {bound_cpu:.2f} s CPU; ratio {res['seconds'] / bound:.2f}x wall, "
                    f"{res['cpu'] / bound_cpu:.2f}x CPU; {products:,} query x candidate products, "
                    f"{bound_cpu / products * 1e9:.0f} ns CPU each in the bound  [ingest+index {prep:.0f} s, not timed]")
            for round_ in range(1, args.repeat + 1) if args.repeat > 1 or args.baseline else ():
                if round_ > 1:
                    res = run_stage(build, data, "exact", force=True)
                    bound, bound_cpu, _ = exact_bound(days, langs, vecs)
                line += (f"\n    round {round_}: stage {res['cpu']:.2f} s CPU / {res['seconds']:.2f} s wall (peak RSS "
                         f"{res['rss_mb']:.0f} MB), bound {bound_cpu:.2f} s CPU / {bound:.2f} s wall, ratio "
                         f"{res['cpu'] / bound_cpu:.2f}x CPU, {res['seconds'] / bound:.2f}x wall; "
                         f"load {os.getloadavg()[0]:.1f}")
                if args.baseline:
                    base = run_stage(build, data, "exact", force=True, checkout=args.baseline)
                    base_wall, base_bound, _ = exact_bound(days, langs, vecs)
                    alike = (base["digest"], base["output_fingerprint"]) == (res["digest"], res["output_fingerprint"])
                    same = "same pairs and output fingerprint" if alike else "PAIRS DIFFER"
                    line += (f"; baseline {base['cpu']:.2f} s CPU / {base['seconds']:.2f} s wall (peak RSS "
                             f"{base['rss_mb']:.0f} MB), bound {base_bound:.2f} s CPU / {base_wall:.2f} s wall, ratio "
                             f"{base['cpu'] / base_bound:.2f}x CPU, {base['seconds'] / base_wall:.2f}x wall "
                             f"({same}, load {os.getloadavg()[0]:.1f})")
                    if not alike:
                        raise SystemExit(line)
            if args.milvus and n <= args.milvus_max:
                mil = run_stage(build, data, "milvus", force=True)
                same = "same pairs" if mil["digest"] == res["digest"] else "PAIRS DIFFER"
                line += (f"\n    dense.search milvus: {mil['seconds']:.1f} s wall / {mil['cpu']:.1f} s CPU, peak RSS "
                         f"{mil['rss_mb']:.0f} MB ({mil['cpu'] / res['cpu']:.1f}x the exact search's CPU; {same})")
                if mil["digest"] != res["digest"]:
                    raise SystemExit(line)
            if args.hybrid_score == "title":
                line += title_score_line(build, data, res)
            print(line, flush=True)
            rows.append((label, n, per_day, res, bound_cpu))
        steady = [r for r in rows if r[2] == args.per_day]
        for (la, na, _, ra, ba), (lb, nb, _, rb, bb) in zip(steady, steady[1:]):
            per10 = (rb["cpu"] / ra["cpu"]) ** (np.log(10) / np.log(nb / na))
            bound10 = (bb / ba) ** (np.log(10) / np.log(nb / na))
            print(f"growth {na:,} -> {nb:,} articles at {args.per_day}/day: stage CPU x{rb['cpu'] / ra['cpu']:.2f} "
                  f"for x{nb / na:.2f} articles = x{per10:.2f} per 10x ({per10 / 10:.2f}x linear); exact bound "
                  f"x{bound10:.2f} per 10x; peak RSS {ra['rss_mb']:.0f} -> {rb['rss_mb']:.0f} MB (above the "
                  f"stage's start: {ra['rss_mb'] - ra['rss_start_mb']:.0f} -> {rb['rss_mb'] - rb['rss_start_mb']:.0f} MB)")
        if args.hnsw:
            big = max(cases, key=lambda c: c[1])
            for ef in args.hnsw_ef:
                hnsw_recall(root / f"c{big[1]}-{big[2]}.jsonl", ef=ef)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        stage_child(sys.argv[2], sys.argv[3])
    else:
        main()
