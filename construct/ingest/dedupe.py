"""Exact and near-duplicate detection in bounded memory.

During the streaming pass each article contributes only fixed-size numbers (an id hash, a text hash and
a MinHash signature of ``n_perm`` uint32); texts are spooled to disk. ``duplicate_mask`` then finds
duplicate ids, exact copies and near-duplicates (LSH banding by sorting, verified against the
signatures) with numpy, keeping the first occurrence in input order.
"""
from __future__ import annotations

import hashlib
import re
import zlib

import numpy as np

from babelrag.tokens import NO_SPACE_RANGES

_WS = re.compile(r"\s+")
_NO_SPACE_CHAR = re.compile(f"[{NO_SPACE_RANGES}]")  # CJK, Thai, Lao, Myanmar, Khmer


def hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


def normalise_text(text: str) -> str:
    return _WS.sub(" ", text.lower()).strip()


def shingles(text: str, n_words: int = 3, n_chars: int = 4) -> list[str]:
    """Word n-grams, or character n-grams for scripts written without spaces."""
    norm = normalise_text(text)
    if len(_NO_SPACE_CHAR.findall(norm[:400])) > 40:
        compact = norm.replace(" ", "")
        return [compact[i:i + n_chars] for i in range(max(1, len(compact) - n_chars + 1))]
    words = norm.split()
    if len(words) < n_words:
        return [" ".join(words)]
    return [" ".join(words[i:i + n_words]) for i in range(len(words) - n_words + 1)]


class MinHasher:
    """MinHash with multiply-shift hashing: h_i(x) = high 32 bits of (a_i * x + b_i) mod 2^64, a_i odd.

    (An affine map that never wraps would be monotonic in x, so every "permutation" would pick the
    same minimum; the wrap-around mod 2^64 is what makes the functions independent.)"""

    def __init__(self, n_perm: int = 64, seed: int = 1) -> None:
        rng = np.random.default_rng(seed)
        self.n_perm = n_perm
        self.a = rng.integers(0, 2**63, size=n_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        self.b = rng.integers(0, 2**63, size=n_perm, dtype=np.uint64)

    def signature(self, text: str) -> np.ndarray:
        grams = shingles(text)
        x = np.fromiter((zlib.crc32(g.encode("utf-8")) for g in grams), dtype=np.uint64, count=len(grams))
        with np.errstate(over="ignore"):
            h = x[:, None] * self.a[None, :] + self.b[None, :]  # wraps mod 2^64 by design
        return (h >> np.uint64(32)).min(axis=0).astype(np.uint32)


def _first_occurrence_dups(keys: np.ndarray) -> np.ndarray:
    """Boolean mask: True where an equal key occurred earlier (in index order)."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    dup_sorted = np.zeros(len(keys), dtype=bool)
    dup_sorted[1:] = sorted_keys[1:] == sorted_keys[:-1]
    out = np.zeros(len(keys), dtype=bool)
    out[order] = dup_sorted
    return out


def duplicate_mask(id_hashes: np.ndarray, text_hashes: np.ndarray, signatures: np.ndarray,
                   threshold: float, bands: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Returns (duplicate_id, exact_duplicate, near_duplicate, near_of) for rows in input order.

    Priority: a duplicate id is reported as such; else an exact text copy; else a near-duplicate of an
    earlier kept article (``near_of`` holds its row, -1 otherwise).
    """
    n = len(id_hashes)
    dup_id = _first_occurrence_dups(id_hashes)
    alive = ~dup_id
    exact = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(alive)
    exact[idx] = _first_occurrence_dups(text_hashes[idx])
    alive &= ~exact
    near = np.zeros(n, dtype=bool)
    near_of = np.full(n, -1, dtype=np.int64)
    idx = np.flatnonzero(alive)
    if len(idx) < 2:
        return dup_id, exact, near, near_of
    sig = signatures[idx]
    n_perm = sig.shape[1]
    rows = max(1, n_perm // bands)
    cand_a: list[np.ndarray] = []
    cand_b: list[np.ndarray] = []
    for band in range(bands):
        part = sig[:, band * rows:(band + 1) * rows].astype(np.uint64)
        keys = np.zeros(len(part), dtype=np.uint64)
        for r in range(part.shape[1]):  # polynomial hash of the band (collisions are verified below)
            keys = keys * np.uint64(0x9E3779B97F4A7C15) + part[:, r]
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        starts = np.ones(len(sk), dtype=bool)
        starts[1:] = sk[1:] != sk[:-1]
        group_first = order[np.maximum.accumulate(np.where(starts, np.arange(len(sk)), 0))]
        member = ~starts
        cand_a.append(group_first[member])  # the earliest row of the bucket (stable sort: input order)
        cand_b.append(order[member])
    a = np.concatenate(cand_a)
    b = np.concatenate(cand_b)
    if len(a):
        pairs = np.unique(np.stack([a, b], axis=1), axis=0)
        a, b = pairs[:, 0], pairs[:, 1]
        sim = (sig[a] == sig[b]).mean(axis=1)
        hit = sim >= threshold
        # a later row is a near-duplicate of its earliest similar row
        for ai, bi in sorted(zip(a[hit].tolist(), b[hit].tolist()), key=lambda t: (t[1], t[0])):
            if not near[idx[bi]] and not near[idx[ai]]:
                near[idx[bi]] = True
                near_of[idx[bi]] = idx[ai]
    return dup_id, exact, near, near_of
