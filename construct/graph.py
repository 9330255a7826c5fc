"""Same-language related pairs from title entities: sparse co-occurrence blocked by date windows.

Articles are sorted by day and cut into blocks of ``max_days`` days, so two articles at most ``max_days``
apart always sit in the same or adjacent blocks. For each block ``b`` one sparse product
``A[b] @ A[b ∪ b+1].T`` counts shared entities for every candidate pair at once (scipy, C speed); pairs with
``>= k`` shared entities and ``<= max_days`` apart survive. Work is bounded by the blocks, never by the
whole corpus squared.

Hub entities (in more than ``hub_max`` articles) dominate the cost and mostly produce junk pairs:
``cap`` ignores them, ``downweight`` lets them count towards ``k`` only for pairs that already share a
non-hub entity (and with a small weight in the score), ``none`` treats them like any entity.

The bipartite networkx graph is built only for inspection (GraphML export) and for the baseline.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from babelrag.atomic import atomic_path
from babelrag.records import UNDATED_DAY, within_days


@dataclass
class Incidence:
    """Article x entity incidence in CSR form (``indices[indptr[i]:indptr[i+1]]`` = entities of article i)."""

    indptr: np.ndarray
    indices: np.ndarray
    n_entities: int

    @classmethod
    def from_lists(cls, entity_lists: Sequence[Sequence[int]], n_entities: int | None = None) -> Incidence:
        lengths = np.fromiter((len(e) for e in entity_lists), dtype=np.int64, count=len(entity_lists))
        indptr = np.zeros(len(entity_lists) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        indices = np.fromiter((x for e in entity_lists for x in e), dtype=np.int64, count=int(indptr[-1]))
        n = int(indices.max()) + 1 if n_entities is None and len(indices) else (n_entities or 0)
        return cls(indptr, indices, n)

    def matrix(self) -> Any:
        from scipy import sparse

        data = np.ones(len(self.indices), dtype=np.int32)
        m = sparse.csr_matrix((data, self.indices, self.indptr), shape=(len(self.indptr) - 1, self.n_entities))
        m.sum_duplicates()
        m.data[:] = 1
        return m


@dataclass
class MinedPairs:
    i: np.ndarray  # article index (smaller publication day first, ties by index)
    j: np.ndarray
    shared: np.ndarray  # shared entities counted towards k
    score: np.ndarray
    days: np.ndarray  # |day_i - day_j|; -1 when either is undated
    hubs: np.ndarray  # entity ids treated as hubs

    def __len__(self) -> int:
        return len(self.i)


def entity_weights(df: np.ndarray) -> np.ndarray:
    """Score weight of a shared entity: rarer entities say more (1 / log2(1 + df))."""
    return 1.0 / np.log2(1.0 + np.maximum(df, 1))


def mine_pairs(days: np.ndarray, inc: Incidence, k: int = 2, max_days: int = 14, hub_policy: str = "cap",
               hub_max: int = 200, max_pairs: int | None = None) -> MinedPairs:
    """All article pairs sharing >= k title entities and published <= max_days apart; an article without a
    date for windows (``days`` = ``UNDATED_DAY``) pairs with any article sharing them (``days`` -1)."""
    n = len(days)
    empty = MinedPairs(*(np.zeros(0, dtype=np.int64) for _ in range(3)), np.zeros(0), np.zeros(0, dtype=np.int64),
                       np.zeros(0, dtype=np.int64))
    if n < 2 or inc.n_entities == 0:
        return empty
    A = inc.matrix()
    df = np.asarray(A.sum(axis=0)).ravel()
    hubs = np.flatnonzero(df > hub_max) if hub_policy != "none" else np.zeros(0, dtype=np.int64)
    weights = entity_weights(df)
    if hub_policy == "downweight" and len(hubs):
        weights[hubs] *= hub_max / df[hubs]
    keep_cols = np.ones(inc.n_entities, dtype=bool)
    keep_cols[hubs] = False
    A_main = _mask_columns(A, keep_cols) if len(hubs) else A
    A_hub = _mask_columns(A, ~keep_cols) if hub_policy == "downweight" and len(hubs) else None

    order = np.argsort(days, kind="stable")
    sdays = days[order]
    A_main = A_main[order]
    if A_hub is not None:
        A_hub = A_hub[order]
    n_dated = int(np.searchsorted(sdays, UNDATED_DAY))  # undated articles (UNDATED_DAY) sort last
    width = max(1, max_days)
    blocks = (sdays[:n_dated] - sdays[0]) // width if n_dated else np.zeros(0, dtype=np.int64)
    bounds = np.searchsorted(blocks, np.arange(int(blocks[-1]) + 2)) if n_dated else np.zeros(0, dtype=np.int64)
    min_main = 1 if A_hub is not None else k
    out_i, out_j, out_s = [], [], []
    if n_dated < n:  # an undated article (corpus.undated keep/infer) is mined against every article, no window
        C = (A_main[n_dated:] @ A_main.T).tocoo()
        r = C.row.astype(np.int64) + n_dated
        c = C.col.astype(np.int64)
        keep = ((c < n_dated) | (c > r)) & (C.data >= min_main)
        r, c = r[keep], c[keep]
        out_i.append(np.minimum(r, c))
        out_j.append(np.maximum(r, c))
        out_s.append(C.data[keep].astype(np.int64))
    for b in range(len(bounds) - 1):
        lo, mid = bounds[b], bounds[b + 1]
        hi = bounds[b + 2] if b + 2 < len(bounds) else mid
        if mid <= lo:
            continue
        C = (A_main[lo:mid] @ A_main[lo:hi].T).tocoo()
        r = C.row.astype(np.int64) + lo
        c = C.col.astype(np.int64) + lo
        keep = (c > r) & (C.data >= min_main)
        r, c, s = r[keep], c[keep], C.data[keep].astype(np.int64)
        keep = (sdays[c] - sdays[r]) <= max_days
        out_i.append(r[keep])
        out_j.append(c[keep])
        out_s.append(s[keep])
    if not out_i:
        return empty
    r, c, s = np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_s)
    if A_hub is not None and len(r):
        s = s + _rowwise_overlap(A_hub, r, c)
        keep = s >= k
        r, c, s = r[keep], c[keep], s[keep]
    # score: weighted count of shared entities, computed for survivors only
    W = A_main if A_hub is None else (A_main + A_hub)
    score = _rowwise_overlap(W, r, c, weights)
    i, j = order[r], order[c]
    d = np.where((days[i] >= UNDATED_DAY) | (days[j] >= UNDATED_DAY), -1, np.abs(days[i] - days[j]))
    if max_pairs is not None and len(i) > max_pairs:
        top = np.lexsort((j, i, -score))[:max_pairs]
        i, j, s, score, d = i[top], j[top], s[top], score[top], d[top]
    return MinedPairs(i, j, s, score, d, hubs)


def _mask_columns(A: Any, keep: np.ndarray) -> Any:
    """Copy of CSR ``A`` with the columns where ``keep`` is False removed from its entries."""
    M = A.copy()
    M.data = keep[M.indices].astype(M.data.dtype)
    M.eliminate_zeros()
    return M


def _rowwise_overlap(M: Any, r: np.ndarray, c: np.ndarray, weights: np.ndarray | None = None,
                     chunk: int = 500_000) -> np.ndarray:
    """sum(M[r] * M[c] * weights) per pair, in chunks to bound memory."""
    out = np.zeros(len(r), dtype=np.float64 if weights is not None else np.int64)
    for s in range(0, len(r), chunk):
        prod = M[r[s:s + chunk]].multiply(M[c[s:s + chunk]])
        if weights is not None:
            out[s:s + chunk] = np.asarray(prod @ weights).ravel()
        else:
            out[s:s + chunk] = np.asarray(prod.sum(axis=1)).ravel()
    return out


# --- networkx: inspection graph and the baseline the benchmark compares against ---------------------

def bipartite_graph(article_ids: Sequence[str], entity_lists: Sequence[Sequence[str]],
                    attrs: Sequence[dict[str, Any]] | None = None) -> Any:
    """Article-entity bipartite graph (``bipartite`` = 0 for articles, 1 for entities)."""
    import networkx as nx

    G = nx.Graph()
    for n, (aid, ents) in enumerate(zip(article_ids, entity_lists)):
        G.add_node(f"a:{aid}", bipartite=0, kind="article", **(attrs[n] if attrs else {}))
        for e in ents:
            if f"e:{e}" not in G:
                G.add_node(f"e:{e}", bipartite=1, kind="entity", label=e)
            G.add_edge(f"a:{aid}", f"e:{e}")
    for node, data in G.nodes(data=True):
        if data.get("kind") == "entity":
            data["degree"] = G.degree(node)
    return G


def write_graphml(G: Any, path: Path) -> None:
    import networkx as nx

    with atomic_path(path) as tmp:
        nx.write_graphml(G, tmp)


def networkx_walk_pairs(days: np.ndarray, entity_lists: Sequence[Sequence[int]], k: int = 2, max_days: int = 14,
                        hub_max: int = 200) -> set[tuple[int, int]]:
    """Baseline: walk article -> entity -> article in a networkx graph, counting shared entities.

    Same hub rule as ``mine_pairs(hub_policy='cap')`` (entities with more than hub_max articles ignored).
    """
    import networkx as nx

    G = nx.Graph()
    for a, ents in enumerate(entity_lists):
        G.add_node(("a", a))
        for e in ents:
            G.add_edge(("a", a), ("e", e))
    pairs: set[tuple[int, int]] = set()
    for a in range(len(entity_lists)):
        counts: Counter[int] = Counter()
        for ent in G.neighbors(("a", a)):
            if G.degree(ent) > hub_max:
                continue
            for other in G.neighbors(ent):
                b = other[1]
                if b != a and within_days(int(days[a]), int(days[b]), max_days):
                    counts[b] += 1
        for b, cnt in counts.items():
            if cnt >= k and a < b:
                pairs.add((a, b))
    return pairs


def canonical_pairs(mined: MinedPairs) -> set[tuple[int, int]]:
    return {(min(a, b), max(a, b)) for a, b in zip(mined.i.tolist(), mined.j.tolist())}


__all__ = ["Incidence", "MinedPairs", "mine_pairs", "bipartite_graph", "write_graphml", "networkx_walk_pairs",
           "canonical_pairs", "entity_weights"]
