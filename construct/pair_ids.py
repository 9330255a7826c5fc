"""Pair ids: one prefix per mining method (``ArticlePair.method``), then the two article ids.

Its own module because every miner names its pairs this way (the pairs stage's entity graph,
``crosslingual.py``'s dense pairs, ``samelang.py``'s hybrid pairs) and the pairs stage imports those miners.
"""
from __future__ import annotations

PAIR_ID_PREFIX = {"entity_graph": "eg", "dense": "xl", "hybrid": "hy"}


def pair_id(method: str, a: str, b: str) -> str:
    return f"{PAIR_ID_PREFIX[method]}:{a}|{b}"
