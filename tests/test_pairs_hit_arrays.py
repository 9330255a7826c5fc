"""Mining's hits as arrays of ``DocTable`` rows (issue 34): the cross-language query loop and its mutual back-check
(``crosslingual.mutual_candidates``) and the same-language batches (``samelang.neighbours`` + ``_WindowPairs.add_rows``)
keep exactly what the per-hit Python loops over ``hits_in_window``'s lists kept, in the same order, with the same
skips and densities: on clustered planted vectors in three languages, some articles undated, some queries without a
match, some hits not mutual."""
from __future__ import annotations

from collections import Counter, defaultdict
from types import SimpleNamespace

import numpy as np
import pytest

from babelrag.construct.crosslingual import mutual_candidates
from babelrag.construct.dense import hits_in_window
from babelrag.construct.doctable import Doc, DocTable, RowValues
from babelrag.construct.exactsearch import WindowIndex
from babelrag.construct.samelang import _Scorer, _WindowPairs, neighbours
from babelrag.records import UNDATED_DAY
from tests.helpers.mining_oracles import add_list


def clustered(n=420, dim=24, stories=70, seed=11):
    """Articles of ``stories`` stories (a story's articles near its centre), en/de/fr, days within the story's
    week; a few undated. Ids shuffled against the day order."""
    rng = np.random.default_rng(seed)
    story = rng.integers(0, stories, size=n)
    centres = rng.normal(size=(stories, dim))
    v = (centres[story] + rng.normal(scale=0.9, size=(n, dim))).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    ids = [f"a{i:04d}" for i in rng.permutation(n)]
    langs = rng.choice(["en", "de", "fr"], size=n).tolist()
    days = (story * 3 + rng.integers(0, 7, size=n)).tolist()
    for i in rng.choice(n, size=12, replace=False):
        days[i] = UNDATED_DAY
    docs = DocTable(Doc(i, langs[n], days[n]) for n, i in enumerate(ids))
    return WindowIndex(ids, langs, days, v, block=5), docs


def skip_counter():
    counts = Counter()
    return counts, lambda reason, n=1: counts.update({reason: n})


def query_rows(docs, pivot):
    rows = docs.rows_not_in(pivot)
    return rows[np.argsort(np.frombuffer(docs.days, dtype=np.int64)[rows], kind="stable")]


def per_hit_loop(ctx, store, docs, queries, pivot, margin, batch):
    """article_pairs' query loop before the arrays: hits_in_window's lists, a Doc per hit, dicts for the back-check."""
    cfg, out = ctx.config.dense, []
    for s in range(0, len(queries), batch):
        chunk = [docs.doc(r) for r in queries[s:s + batch].tolist()]
        hits = hits_in_window(store, chunk, [pivot], docs, cfg)
        found = []
        for q in chunk:
            mine = hits.get(q.id, [])
            if not mine:
                ctx.skip("dense-no-match")
                continue
            top = mine[0][1]
            keep = mine[:1] if margin is None else [h for h in mine if h[1] >= top - margin]
            found.extend((q, docs[i], score, i == mine[0][0]) for i, score in keep)
        if margin is not None and found:
            by_lang = defaultdict(dict)
            for q, en, _, _ in found:
                by_lang[q.language].setdefault(en.id, en)
            back = {lang: hits_in_window(store, list(ens.values()), [lang], docs, cfg) for lang, ens in by_lang.items()}
            mutual = [(q, en, score, best and b[0][0] == q.id) for q, en, score, best in found
                      if (b := back[q.language].get(en.id)) and score >= b[0][1] - margin]
            if len(mutual) < len(found):
                ctx.skip("dense-not-mutual", len(found) - len(mutual))
            found = mutual
        out.extend((docs.row(q.id), docs.row(en.id), score, margin is not None and best) for q, en, score, best in found)
    return out


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("margin", [None, 0.0, 0.06])
def test_cross_language_candidates_are_those_of_the_per_hit_loop(margin, threads):
    """Also with the batches searched on three threads (``executor.processes``): taken in order, the same."""
    store, docs = clustered()
    cfg = SimpleNamespace(min_score=0.35, max_days_apart=4, top_k=10, search_device="cpu")
    queries = query_rows(docs, "en")
    got_skips, skip = skip_counter()
    ctx = SimpleNamespace(config=SimpleNamespace(dense=cfg, executor=SimpleNamespace(processes=threads)), skip=skip,
                          progress=lambda it, **kw: it)
    cands = mutual_candidates(ctx, store, docs, queries, "en", margin, batch=16)
    want_skips, skip = skip_counter()
    want = per_hit_loop(SimpleNamespace(config=ctx.config, skip=skip), store, docs, queries, "en", margin, 16)
    got = list(zip(cands.x.tolist(), cands.pivot.tolist(), cands.cosine.tolist(), cands.strict().tolist()))
    assert got == want and got_skips == want_skips
    assert len(want) > 40 and want_skips["dense-no-match"] > 0
    if margin is not None:
        assert want_skips["dense-not-mutual"] > 0 and 0 < sum(s for *_, s in want) <= len(want)
        assert margin == 0.0 or sum(s for *_, s in want) < len(want)  # within a margin: not all strict best
        assert any(docs.days[x] >= UNDATED_DAY for x, *_ in want)  # undated queries paired too


@pytest.mark.parametrize("fill", [0.39, None])
def test_same_language_batches_walk_as_the_lists_did_one_by_one(fill):
    """``neighbours`` as arrays holds the lists ``hits_in_window`` gave less the query itself; ``add_rows`` on a
    batch gives what ``add`` gave list by list: the same pairs in the same order, skips, densities (k = 25: more than
    the lists hold, so every list is short and the median fills them where ``fill`` is None)."""
    store, docs = clustered(seed=4)
    dense = SimpleNamespace(min_score=0.45, max_days_apart=4, top_k=10)
    rows = docs.language_rows("de")
    entities = {i: {"e1"} for i in docs.ids[::3]}
    streams = []
    for k in (10, 25):
        for way in ("rows", "lists"):
            pairs, skips = [], Counter()
            ctx = SimpleNamespace(skip=lambda reason, n=1, skips=skips: skips.update({reason: n}))
            scorer = _Scorer(entities, 0.05, density=RowValues(docs))
            stream = _WindowPairs(ctx, docs, "de", scorer, 0.3, 0.45, k, fill, pairs.append)
            for s in range(0, len(rows), 16):
                queries = rows[s:s + 16]
                found = neighbours(store, queries, "de", docs, dense, k)
                if way == "rows":
                    stream.add_rows(queries, found)
                    continue
                lists = hits_in_window(store, [docs.doc(r) for r in queries.tolist()], ["de"], docs, dense,
                                       top_k=max(k, dense.top_k, 20) + 1, min_score=float("-inf"), with_days=True)
                starts = found.starts(len(queries)).tolist()
                for n, q in enumerate(queries.tolist()):
                    listed = [h for h in lists.get(docs.ids[q], []) if h[0] != docs.ids[q]]
                    a, b = starts[n], starts[n + 1]
                    assert listed == list(zip([docs.ids[r] for r in found.row[a:b].tolist()],
                                              found.score[a:b].tolist(), found.day[a:b].tolist()))
                    add_list(stream, docs.ids[q], listed, docs.days[q])
            stream.finish()
            streams.append(([(p.article_a, p.article_b, p.score) for p in pairs], skips,
                            np.frombuffer(scorer.density.values, dtype=np.float64).copy(), list(stream._cosines)))
    for (rows_way, lists_way) in (streams[:2], streams[2:]):
        assert rows_way[0] == lists_way[0] and rows_way[1] == lists_way[1] and rows_way[3] == lists_way[3]
        assert np.array_equal(rows_way[2], lists_way[2], equal_nan=True)
        assert len(rows_way[0]) > 20 and rows_way[1]["hybrid-below-min-score"] > 0
