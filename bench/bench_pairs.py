"""Entity-graph pair mining: 1M synthetic titles (Zipf entities, 6 months) and a networkx baseline.

Prints the 1M run's time and peak RSS, then on a 100k subset the speed ratio of the sparse miner over a
networkx neighbour walk (same hub rule, same pairs: checked), both measured in this run.

    python bench/bench_pairs.py [--n 1000000] [--subset 100000]
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from babelrag.construct.graph import Incidence, canonical_pairs, mine_pairs, networkx_walk_pairs


def synthetic(n: int, vocab: int = 300_000, days: int = 182, s: float = 1.0, seed: int = 0):
    """n titles about n/5 stories. A story has 4 entities drawn from a finite Zipf(s) law and a start day;
    each title names 2-3 of its story's entities plus, half of the time, one more Zipf entity, and is
    published 0-9 days after the story starts. So related titles share entities, and frequent entities
    (the Zipf head) become hubs."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1) ** s
    p /= p.sum()
    n_stories = max(1, n // 5)
    story_ents = rng.choice(vocab, size=(n_stories, 4), p=p)
    story_day = rng.integers(0, days - 9, size=n_stories)
    story = rng.integers(0, n_stories, size=n)
    pick = np.argsort(rng.random((n, 4)), axis=1)  # a random order of the story's 4 entities
    ents = np.take_along_axis(story_ents[story], pick, axis=1)
    n_story = rng.integers(2, 4, size=n)
    extra = np.where(rng.random(n) < 0.5, rng.choice(vocab, size=n, p=p), -1)
    table = np.concatenate([ents, extra[:, None]], axis=1)
    keep = np.concatenate([np.arange(4)[None, :] < n_story[:, None], (extra >= 0)[:, None]], axis=1)
    lengths = keep.sum(axis=1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    indices = table[keep].astype(np.int64)
    return story_day[story] + rng.integers(0, 10, size=n), Incidence(indptr, indices, vocab)


def subset(days: np.ndarray, inc: Incidence, m: int):
    lists = [inc.indices[inc.indptr[i]:inc.indptr[i + 1]].tolist() for i in range(m)]
    return days[:m], lists


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--subset", type=int, default=100_000)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--max-days", type=int, default=14)
    ap.add_argument("--hub-max", type=int, default=200)
    args = ap.parse_args()

    t = time.perf_counter()
    days, inc = synthetic(args.n)
    gen = time.perf_counter() - t
    t = time.perf_counter()
    mined = mine_pairs(days, inc, k=args.k, max_days=args.max_days, hub_policy="cap", hub_max=args.hub_max)
    full = time.perf_counter() - t
    print(f"1) {args.n:,} titles (generated in {gen:.1f}s): {len(mined):,} pairs, {len(mined.hubs):,} hub "
          f"entities capped; mining {full:.1f}s (target < 60s), peak RSS {rss_gb():.2f} GB (target < 4 GB)")
    for policy in ("downweight",):
        t = time.perf_counter()
        alt = mine_pairs(days, inc, k=args.k, max_days=args.max_days, hub_policy=policy, hub_max=args.hub_max)
        print(f"   hub_policy={policy}: {len(alt):,} pairs in {time.perf_counter() - t:.1f}s, "
              f"peak RSS {rss_gb():.2f} GB")

    sdays, lists = subset(days, inc, args.subset)
    sub_inc = Incidence.from_lists(lists, inc.n_entities)
    t = time.perf_counter()
    fast = mine_pairs(sdays, sub_inc, k=args.k, max_days=args.max_days, hub_policy="cap", hub_max=args.hub_max)
    t_fast = time.perf_counter() - t
    t = time.perf_counter()
    slow = networkx_walk_pairs(sdays, lists, k=args.k, max_days=args.max_days, hub_max=args.hub_max)
    t_slow = time.perf_counter() - t
    same = canonical_pairs(fast) == slow
    print(f"2) {args.subset:,}-title subset: sparse {t_fast:.2f}s vs networkx neighbour walk {t_slow:.2f}s "
          f"-> {t_slow / t_fast:.1f}x faster (target >= 20x); same {len(slow):,} pairs: {same}")
    if not same:
        raise SystemExit("sparse miner and networkx walk disagree")


if __name__ == "__main__":
    main()
