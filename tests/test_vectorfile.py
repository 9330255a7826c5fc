"""The index stage's sorted vector file and mining that streams by date window (issue 34): the exact search over
the file a window at a time answers what the in-memory search answers while holding a few windows of rows; the
numpy window filter keeps the hits the per-hit loop keeps; the streamed same-language candidates are the ones
of walking every neighbour list at the end."""
from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest

from babelrag.construct.dense import _listed_rows
from babelrag.construct.doctable import Doc, DocTable
from babelrag.construct.exactsearch import WindowIndex
from babelrag.construct.samelang import _Scorer, _WindowPairs, csls, densities
from babelrag.construct.vectorfile import MIN_WINDOW_ROWS, VectorFileWriter, row_order
from babelrag.records import UNDATED_DAY, within_days
from tests.helpers.planted_rows import planted_rows
from tests.helpers.mining_oracles import add_list


def corpus(n=900, dim=12, seed=5, undated=20):
    return planted_rows(n, dim, seed, max_day=400, id_digits=5, undated=undated)


def write_file(folder, ids, langs, days, v, blocks=7):
    writer = VectorFileWriter(folder)
    for part in np.array_split(np.arange(len(ids)), blocks):  # the index stage's blocks, in encoding order
        writer.add([ids[i] for i in part], v[part], [langs[i] for i in part], [days[i] for i in part])
    return writer.finish()


def from_file(tmp_path, ids, langs, days, v, **kw):
    info = write_file(tmp_path, ids, langs, days, v)
    return WindowIndex.from_file(tmp_path / info.file, info, ids, langs, days, **kw), info


@pytest.mark.parametrize("chunk_rows", [None, 37])
def test_the_file_holds_the_rows_sorted_by_language_day_and_id(tmp_path, monkeypatch, chunk_rows):
    from babelrag.construct import vectorfile

    ids, langs, days, v = corpus()
    if chunk_rows:  # sorted a few rows at a time (memory bounded by the chunk, not the file)
        monkeypatch.setattr(vectorfile, "SORT_CHUNK_BYTES", chunk_rows * v.shape[1] * 4)
    info = write_file(tmp_path, ids, langs, days, v)
    rows = np.fromfile(tmp_path / info.file, dtype=np.float32).reshape(-1, v.shape[1])
    order = sorted(range(len(ids)), key=lambda i: (langs[i], days[i], ids[i]))
    assert np.array_equal(rows, v[order]) and (info.rows, info.dim) == (len(ids), v.shape[1])
    assert row_order(ids, langs, days).tolist() == order
    assert not list(tmp_path.glob(".*unsorted*"))  # the encoding-order copy is gone


def test_file_search_answers_what_the_in_memory_search_answers_window_by_window(tmp_path):
    ids, langs, days, v = corpus()
    memory = WindowIndex(ids, langs, days, v, block=5)
    disk, _ = from_file(tmp_path, ids, langs, days, v, block=5)
    assert disk is not None and len(disk) == len(ids)
    en = sorted((i for i in range(len(ids)) if langs[i] == "en" and days[i] < UNDATED_DAY), key=lambda i: days[i])
    # mining's pattern: date-sorted batches, each searching its span +-14 days (and the undated rows), then a
    # second pass from the start; plus searches across languages, without dates and with ids left out
    calls = []
    for _ in range(2):
        for s in range(0, len(en), 16):
            batch = en[s:s + 16]
            calls.append((v[batch], {"languages": ["en"], "published_from": days[batch[0]] - 14,
                                     "published_to": days[batch[-1]] + 14, "or_undated": True}))
            calls.append((v[batch], {"languages": ["de", "fr"], "published_from": days[batch[0]] - 14,
                                     "published_to": days[batch[-1]] + 14}))
    calls += [(v[:9], {}), (v[:9], {"languages": ["fr"], "published_to": 100, "exclude_ids": ids[:300]})]
    for q, where in calls:
        assert disk.search_columns(q, top_k=11, **where) == memory.search_columns(q, top_k=11, **where), where
        picked = [ids[i] for i in random.Random(len(q)).sample(range(len(ids)), 30)] + ["missing"]
        got, want = disk.vectors(picked), memory.vectors(picked)
        assert list(got) == list(want) and all(np.array_equal(got[i], want[i]) for i in want)
    # memory: each language holds at most two windows of rows (a span and its read-ahead, the undated tail)
    en_rows = disk._by_language["en"].rows
    span = max(memory._by_language["en"].span(days[b[0]] - 14, days[b[-1]] + 14)[1]
               - memory._by_language["en"].span(days[b[0]] - 14, days[b[-1]] + 14)[0]
               for b in (en[s:s + 16] for s in range(0, len(en), 16)))
    assert len(en_rows._held) <= 2
    assert sum(len(r) for _, r in en_rows._held) <= 2 * (2 * span + MIN_WINDOW_ROWS)
    disk.close()


def test_gather_reads_scattered_rows_in_runs_and_holds_none(tmp_path):
    """The title score's lookups (construct/titlevectors.py): rows anywhere in a language's range, in any order and
    repeated, read sorted with nearby rows in one pread, the rows asked for and no window kept."""
    import os

    from babelrag.construct.vectorfile import GATHER_GAP, RowWindow, open_vector_file

    v = np.arange(200 * 3, dtype=np.float32).reshape(200, 3)
    (tmp_path / "v.f32").write_bytes(v.tobytes())
    fd = open_vector_file(tmp_path / "v.f32")
    try:
        rows = RowWindow(fd, 3, 50, 150)  # a language's range of the file
        for pos in ([5, 3, 70, 5, 0, 99, 12, 40], [99, 0], list(range(100))[::-1], []):
            assert np.array_equal(rows.gather(np.asarray(pos, dtype=np.int64)),
                                  v[50 + np.asarray(pos, dtype=np.int64)].reshape(-1, 3)), pos
        assert not rows._held
        rows.rows_read = 0
        rows.gather(np.asarray([0, 1 + GATHER_GAP, 60]))  # a gap of GATHER_GAP rows read through; 60 on its own
        assert rows.rows_read == 2 + GATHER_GAP + 1
    finally:
        os.close(fd)


def test_a_file_for_other_rows_is_not_used(tmp_path):
    ids, langs, days, v = corpus(60)
    index, info = from_file(tmp_path, ids, langs, days, v)
    index.close()
    other = list(ids)
    other[3] = "someone-else"
    assert WindowIndex.from_file(tmp_path / info.file, info, other, langs, days) is None
    assert WindowIndex.from_file(tmp_path / info.file, info, ids[:-1], langs[:-1], days[:-1]) is None
    (tmp_path / info.file).write_bytes(b"\0" * 8)
    assert WindowIndex.from_file(tmp_path / info.file, info, ids, langs, days) is None


@pytest.mark.parametrize("entries", ["all", "most"])
@pytest.mark.parametrize("floor", [0.0, 0.3, float("-inf")])
def test_window_rows_keep_what_the_per_hit_loop_keeps(floor, entries):
    """The exact search's arrays and a store's lists turned into arrays (``dense._listed_rows``, the Milvus path)
    hold the hits of the per-hit loop, as rows of the entries' table; "most": every fifth row of the index is no
    entry (a store holding stray rows), left out after the floor as the loop's ``in docs`` did."""
    ids, langs, days, v = corpus(700, seed=floor == 0.3)
    index = WindowIndex(ids, langs, days, v, block=6)
    docs = DocTable(Doc(i, langs[n], days[n]) for n, i in enumerate(ids) if entries == "all" or n % 5)
    queries = [i for i in range(0, 700, 7)]
    qdays = [days[i] for i in queries]
    window, k = 14, 20
    span = {"published_from": 100, "published_to": 200, "or_undated": True}
    lists = index.search_columns(v[queries], k, ["en", "de"], **span)
    want = []
    for qd, (hit_ids, scores, hit_days, _) in zip(qdays, lists):
        kept = []
        for i, score, day in zip(hit_ids, scores, hit_days):
            if score < floor:
                break
            if within_days(day, qd, window) and i in docs:
                kept.append((i, score, day))
        want.append(kept)
    exact = index.window_rows(v[queries], qdays, window, floor, k, docs, ["en", "de"], **span)
    listed = _listed_rows(lists, np.asarray(qdays), floor, window, docs)
    for found in (exact, listed):
        starts = found.starts(len(queries))
        hits = list(zip([docs.ids[r] for r in found.row.tolist()], found.score.tolist(), found.day.tolist()))
        assert [hits[a:b] for a, b in zip(starts[:-1], starts[1:])] == want
    assert any(want) and any(len(w) < k for w in want)  # the filter did something
    if entries == "most":
        assert any(i not in docs for hit_ids, *_ in lists for i in hit_ids)  # stray rows were there to leave out


def _walk_all_lists(hits, docs, k, fill, min_score, threshold, entities, bonus):
    """The same-language loop before issue 34: every list first, the densities, then each list in query order."""
    dens = densities(hits, k, fill)
    seen, out, skipped = set(), [], 0
    for q, found in hits.items():
        for other, cos in found:
            a, b = sorted((q, other))
            if (a, b) in seen:
                continue
            seen.add((a, b))
            if cos < min_score:
                break
            shared = sorted(entities.get(a, set()) & entities.get(b, set()))
            score = csls(cos, dens[a], dens[b]) + bonus * min(len(shared), 2)
            if score < threshold:
                skipped += 1
                continue
            out.append((a, b, round(float(score), 6)))
    return sorted(out), skipped, dens


@pytest.mark.parametrize("fill", [0.39, None])
def test_streamed_same_language_candidates_are_those_of_walking_every_list(fill):
    rng = random.Random(7)
    ids = sorted((f"a{i:03d}" for i in range(300)), key=lambda i: (int(i[1:]) // 6, i))
    day = {i: (int(i[1:]) // 6 if int(i[1:]) % 50 else UNDATED_DAY) for i in ids}
    ids.sort(key=lambda i: (day[i], i))  # query order
    entities = {i: {f"e{rng.randrange(5)}"} for i in ids if rng.random() < 0.5}
    cos = {}
    hits = {}
    for q in ids:  # symmetric cosines; lists best first, some short (few neighbours in the window)
        near = [o for o in ids if o != q and within_days(day[o], day[q], 3)]
        for o in near:
            cos.setdefault(tuple(sorted((q, o))), round(rng.uniform(-0.2, 0.95), 4))
        found = sorted(((o, cos[tuple(sorted((q, o)))]) for o in near), key=lambda t: (-t[1], t[0]))
        hits[q] = found[: rng.choice([3, 21])]
    want, want_skipped, dens = _walk_all_lists(hits, {i: SimpleNamespace(day=day[i]) for i in ids}, 10, fill,
                                              0.2, 0.05, entities, 0.1)
    skips = []
    ctx = SimpleNamespace(skip=lambda reason, n=1: skips.append(n))
    scorer = _Scorer(entities, 0.1)
    stream = _WindowPairs(ctx, {i: SimpleNamespace(day=day[i]) for i in ids}, "en", scorer, 0.05, 0.2, 10, fill)
    for q in ids:
        add_list(stream, q, hits[q])
    got = sorted((p.article_a, p.article_b, p.score) for p in stream.finish())
    assert got == want and sum(skips) == want_skipped and len(want) > 20
    assert scorer.density == dens  # the densities the entity-graph pairs are scored with afterwards
    assert not stream._reached and not stream._waiting  # nothing held once the language is done
    assert any(len(f) < 10 for f in hits.values())  # short lists were filled (reference or median density)


class _CountingDays(dict):
    """Article id -> SimpleNamespace(day): counts the lookups."""

    looked_up = 0

    def __getitem__(self, key):
        self.looked_up += 1
        return super().__getitem__(key)


def test_hits_with_their_days_need_no_lookup_per_hit():
    """The stage's lists carry each hit's day (``neighbours``: the search has it): the same pairs as looking each
    hit's day up, with lookups only for the pairs made, not for every hit (a dict entry per article held)."""
    rng = random.Random(3)
    ids = [f"a{i:04d}" for i in range(300)]
    day = {i: n // 8 for n, i in enumerate(ids)}
    hits = {q: sorted(((o, round(rng.uniform(0.0, 0.9), 3)) for o in ids if o != q and abs(day[o] - day[q]) <= 2),
                      key=lambda t: (-t[1], t[0]))[:21] for q in ids}
    got = []
    for with_days in (False, True):
        docs = _CountingDays({i: SimpleNamespace(day=day[i]) for i in ids})
        stream = _WindowPairs(SimpleNamespace(skip=lambda *a: None), docs, "en", _Scorer({}, 0.0), -9.0, 0.5, 10, 0.39)
        for q in ids:
            add_list(stream, q, [(o, c, day[o]) for o, c in hits[q]] if with_days else hits[q],
                       day[q] if with_days else None)
        got.append(([(p.article_a, p.article_b, p.score) for p in stream.finish()], docs.looked_up))
    (plain, plain_lookups), (dated, dated_lookups) = got
    assert dated == plain and len(plain) > 50
    assert dated_lookups == 2 * len(dated)  # the pairs' days_apart only
    assert plain_lookups > 10 * len(ids)  # one per hit walked


def test_streamed_candidates_wait_only_for_a_window_ahead():
    """Held state is bounded by the window: after each article's own search, what waits for a density belongs to
    articles within the window ahead, and the reached-by sets only to articles not yet searched."""
    ids = [f"a{i:04d}" for i in range(400)]
    day = {i: n // 10 for n, i in enumerate(ids)}  # 10 a day
    docs = {i: SimpleNamespace(day=day[i]) for i in ids}
    stream = _WindowPairs(SimpleNamespace(skip=lambda *a: None), docs, "en", _Scorer({}, 0.0), -9.0, 0.0, 5, 0.3)
    most = 0
    for n, q in enumerate(ids):
        near = [o for o in ids if o != q and abs(day[o] - day[q]) <= 2]
        add_list(stream, q, [(o, 0.9 - 0.001 * abs(day[o] - day[q])) for o in near][:12])
        assert all(day[x] <= day[q] + 2 for x in stream._waiting) and all(day[x] <= day[q] + 2 for x in stream._reached)
        most = max(most, sum(map(len, stream._waiting.values())) + sum(map(len, stream._reached.values())))
    assert most < 12 * 50  # a few days' lists, not the 400 articles'
    assert stream.finish() and not stream._waiting
