"""Deterministic dev/test assignment and config grouping.

A question goes to ``dev`` when ``sha256(f"{seed}|{key}")`` (first 12 hex digits as a fraction) is below
``dev_fraction``, so the assignment depends only on
the seed and the question, never on the order or on other questions: adding questions in a new version
never moves old ones between splits. ``key`` is the smallest QA id among questions that share a supporting
article, so every setting of a question *and* every question on the same article pair land in one split.
"""
from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable

from babelrag.records import Instance

SPLITS = ("dev", "test")


def hash_fraction(seed: int, key: str) -> float:
    return int(hashlib.sha256(f"{seed}|{key}".encode()).hexdigest()[:12], 16) / 16**12


def supporting_articles(instances: Iterable[Instance]) -> dict[str, set[str]]:
    """QA id -> the supporting article ids seen in any of its instances."""
    out: dict[str, set[str]] = defaultdict(set)
    for inst in instances:
        out[inst.qa_id].update(d.article_id for d in inst.documents if d.role == "supporting")
    return out


def question_groups(support: dict[str, set[str]]) -> dict[str, str]:
    """QA id -> group key (smallest QA id of the questions connected through shared supporting articles)."""
    parent = {qa: qa for qa in support}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    by_article: dict[str, str] = {}
    for qa in sorted(support):
        for art in sorted(support[qa]):
            other = by_article.setdefault(art, qa)
            ra, rb = find(qa), find(other)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    return {qa: find(qa) for qa in support}


def assign_splits(instances: list[Instance], seed: int, dev_fraction: float,
                  extra_support: dict[str, list[str]] | None = None) -> dict[str, str]:
    """QA id -> "dev" | "test". ``extra_support`` adds article ids per QA id (e.g. from the filters stage)."""
    support = supporting_articles(instances)
    for qa, arts in (extra_support or {}).items():
        if qa in support:
            support[qa].update(arts)
    groups = question_groups(support)
    return {qa: "dev" if hash_fraction(seed, key) < dev_fraction else "test" for qa, key in groups.items()}
