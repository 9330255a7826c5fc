"""Vector search: Milvus Lite vs exact numpy search on 100k vectors, 384-d and 1024-d.

Vectors are clustered (a Gaussian mixture, like sentence embeddings); queries are noisy copies of stored
vectors. Prints insert rate, recall@10 against exact search, and per-query latency of single-query Lite
calls and of one Lite call carrying a batch of queries, both as ratios to numpy answering the same queries
in blocks of 64 (one matrix product per block: how mining searches since issue 34, construct/exactsearch.py),
all measured in this run. (Until issue 34 the baseline was numpy one query at a time, which flattered Lite.)

    python bench/bench_vectors.py [--n 100000] [--queries 50] [--single 5] [--dims 384 1024] [--indexes FLAT]
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from babelrag.construct.vectorstore import VectorStore


def clustered(n: int, dim: int, clusters: int = 500, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim)).astype(np.float32)
    x = centres[rng.integers(0, clusters, n)] + 0.6 * rng.normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def numpy_top10(data: np.ndarray, q: np.ndarray, block: int = 64) -> tuple[np.ndarray, float]:
    """Exact top-10 of every query, ``block`` queries per matrix product; seconds per query."""
    t = time.perf_counter()
    out = []
    for s in range(0, len(q), block):
        scores = q[s:s + block] @ data.T
        top = np.argpartition(-scores, 10, axis=1)[:, :10]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1)
        out.extend(np.take_along_axis(top, order, axis=1))
    return np.array(out), (time.perf_counter() - t) / len(q)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=64)
    ap.add_argument("--dims", type=int, nargs="+", default=[384, 1024])
    ap.add_argument("--single", type=int, default=5, help="single-query calls timed (each is slow in Lite)")
    ap.add_argument("--indexes", nargs="+", default=["FLAT"])
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    for dim in args.dims:
        data = clustered(args.n, dim)
        qi = rng.choice(args.n, args.queries, replace=False)
        q = data[qi] + 0.05 * rng.normal(size=(args.queries, dim)).astype(np.float32)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        truth, t_np = numpy_top10(data, q)
        ids = [f"a{i}" for i in range(args.n)]
        for index in args.indexes:
            folder = Path(tempfile.mkdtemp(prefix="bench-milvus-"))
            try:
                vs = VectorStore.lite(folder, "bench", dim, index_type=index)
                t = time.perf_counter()
                vs.upsert(ids, data, ["en"] * args.n, [0] * args.n, [""] * args.n, [""] * args.n, batch=2000)
                t_ins = time.perf_counter() - t
                vs.search(q[0], top_k=10)  # warm-up (loads / builds the index)
                t = time.perf_counter()
                for v in q[:args.single]:
                    vs.search(v, top_k=10)
                t_one = (time.perf_counter() - t) / args.single
                t = time.perf_counter()
                res = vs.search(q, top_k=10)
                t_batch = (time.perf_counter() - t) / len(q)
                got = [[int(h.id[1:]) for h in hits] for hits in res]
                recall = np.mean([len(set(g) & set(tr.tolist())) / 10 for g, tr in zip(got, truth)])
                print(f"{args.n:,} x {dim}-d {index:5s}: insert {args.n / t_ins:,.0f}/s; recall@10 {recall:.3f}; "
                      f"numpy in blocks of 64 {t_np * 1e3:.2f} ms/query; Milvus Lite single-query call {t_one * 1e3:.0f} ms "
                      f"(ratio {t_one / t_np:.1f}x), batched {len(q)} per call {t_batch * 1e3:.1f} ms/query "
                      f"(ratio {t_batch / t_np:.1f}x)", flush=True)
                vs.close()
            finally:
                shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
