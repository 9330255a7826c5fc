"""Ingest memory does not grow with the corpus: peak RSS of a small and a 10x larger synthetic corpus.

Each size runs the real ``ingest`` stage (JSONL reader, filters, lingua, MinHash dedupe, spaCy title NER,
resumable shards, streaming commit) in a fresh process and reports its peak RSS, the peak reached before
the commit (so the commit's own share is visible) and its speed. For scale it also measures what the
records would take loaded whole (what the former commit held at the end: every record in memory).

    python bench/bench_ingest_memory.py [--sizes 20000,200000] [--words 250]

Targets: peak RSS ratio large/small close to 1 (not close to the size ratio), commit adds ~nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WORDS = """the a of to and in that is was for on with as by at from it his her their said after
before about over new city council government minister company market report police court school
water energy price prices people year years week month plan budget law trade bank health hospital
workers union strike election vote party leader president director officials residents students
study research scientists data climate weather storm flood fire road bridge train airport border
river coast farm farmers food crops museum art music festival team match season coach players
league club fans ticket tickets stadium film book author museum visitors tourists hotel village
region province state national local public private new old large small high low early late first
last major minor rising falling record growth decline increase decrease support opposition
agreement talks deal contract project construction repair network service services system power
grid plant factory jobs wages costs tax taxes funding grants program investment investors shares
announced approved rejected delayed opened closed launched reported warned expected confirmed
denied planned proposed signed agreed argued claimed described estimated found showed measured""".split()
NAMES = """Alder Brisk Corvane Dunmore Elstree Farrow Glenholt Harwick Ivel Jessop Kelland Larrow Mardale
Norrvik Ostrand Pellow Quarry Rendell Sable Thorne Ulvik Varden Westby Yarrow Zenner""".split()
ORGS = ["Energy", "Bank", "Council", "University", "Airlines", "Motors", "Group", "Institute", "Union"]


def make_corpus(path: Path, n: int, words: int, seed: int = 0) -> int:
    """n distinct English articles (random sentences over a common vocabulary: no near-duplicates)."""
    rng = random.Random(seed)
    size = 0
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            sentences, left = [], words
            while left > 0:
                k = min(left, rng.randint(8, 18))
                sentences.append(" ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + ".")
                left -= k
            a, b = rng.sample(NAMES, 2)
            title = f"{a} {rng.choice(ORGS)} {rng.choice(WORDS)} {rng.choice(WORDS)} in {b}"
            day = 1 + i % 28
            row = {"id": f"syn-{i:07d}", "title": title, "maintext": " ".join(sentences), "language": "en",
                   "date_publish": f"2026-02-{day:02d} 10:00:00", "url": f"https://news.example/{i}",
                   "source_domain": "news.example"}
            line = json.dumps(row) + "\n"
            size += len(line)
            fh.write(line)
    return size


CHILD = r"""
import json, resource, sys, time
from babelrag.config import config_from_dict
from babelrag.pipeline import Pipeline
from babelrag import shards as shards_mod

def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

corpus, build, mode = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = config_from_dict({"project": {"build_dir": build, "languages": ["en", "de"]},
                        "corpus": {"inputs": [{"path": corpus, "format": "jsonl"}], "min_tokens": 50}})
if mode == "ingest":
    before_commit = {}
    real_finish = shards_mod.ShardWriter.finish
    def finish(self, dest):
        before_commit["peak_mb"] = peak_mb()
        t = time.time()
        out = real_finish(self, dest)
        before_commit["commit_s"] = time.time() - t
        return out
    shards_mod.ShardWriter.finish = finish
    t0 = time.time()
    report = Pipeline(cfg).run(until="ingest")
    s = report.stages[0]
    print(json.dumps({"seconds": time.time() - t0, "in": s.count_in, "out": s.count_out,
                      "skipped": s.skipped, "peak_mb": peak_mb(),
                      "peak_before_commit_mb": before_commit["peak_mb"], "commit_s": before_commit["commit_s"]}))
else:  # the records loaded whole, as the former commit held them
    from babelrag.records import Article
    from babelrag.store import BuildStore
    base = peak_mb()
    records = BuildStore(build).read("ingest", Article)
    print(json.dumps({"records": len(records), "base_mb": base, "peak_mb": peak_mb()}))
"""


def child(corpus: Path, build: Path, mode: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(corpus), str(build), mode], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"child failed ({mode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20000,200000", help="comma-separated corpus sizes, smallest first")
    ap.add_argument("--words", type=int, default=250, help="words per article body")
    ap.add_argument("--keep", action="store_true", help="keep the temporary corpus and build folders")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    results = {}
    try:
        for n in sizes:
            corpus = tmp / f"corpus-{n}.jsonl"
            t = time.time()
            nbytes = make_corpus(corpus, n, args.words)
            print(f"corpus {n:,} articles, {nbytes / 1e6:.0f} MB JSONL ({time.time() - t:.0f} s to generate)",
                  flush=True)
            r = child(corpus, tmp / f"build-{n}", "ingest")
            results[n] = r
            print(f"  ingest: {r['out']:,} kept of {r['in']:,} in {r['seconds']:.0f} s "
                  f"({r['in'] / r['seconds']:.0f} articles/s; commit {r['commit_s']:.1f} s), "
                  f"peak RSS {r['peak_mb']:.0f} MB (before the commit {r['peak_before_commit_mb']:.0f} MB)",
                  flush=True)
        big = sizes[-1]
        whole = child(tmp / f"corpus-{big}.jsonl", tmp / f"build-{big}", "read-all")
        print(f"  for scale: the {whole['records']:,} records of the {big:,} run loaded whole take "
              f"{whole['peak_mb'] - whole['base_mb']:.0f} MB on top of the interpreter "
              f"(the former commit held at least that)")
        small = sizes[0]
        ratio = results[big]["peak_mb"] / results[small]["peak_mb"]
        print(f"\npeak RSS ratio {big:,} / {small:,} articles: {ratio:.2f} (size ratio {big / small:.0f}); "
              f"speed {results[small]['in'] / results[small]['seconds']:.0f} vs "
              f"{results[big]['in'] / results[big]['seconds']:.0f} articles/s")
        print(json.dumps({"results": results, "read_all": whole, "ratio": ratio}))
    finally:
        if not args.keep:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
