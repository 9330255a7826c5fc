"""Undated articles on purpose (issue 33 item 4): ``corpus.undated: drop | keep | infer``.

Real pages without a publication date (``tests/fixtures/undated_pages``, from trafilatura's evaluation set; source
and licence in its README) go through the ingest stage as an HTML folder and inside a WARC file written with
warcio; the date source is recorded per article and counted in the run report; undated articles are mined without
a window (entity graph, dense search in Milvus Lite) and freshness (the distractors' date filter) never lets them
or inferred dates through.
"""
from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import numpy as np
import pytest

from babelrag.config import config_from_dict
from babelrag.construct.dense import Doc, hits_in_window as _hits_in_window
from babelrag.construct.graph import Incidence, canonical_pairs, mine_pairs, networkx_walk_pairs
from babelrag.construct.ingest.dates import url_date
from babelrag.construct.vectorstore import VectorStore, build_filter
from babelrag.pipeline import Pipeline
from babelrag.records import UNDATED_DAY, Article
from babelrag.store import BuildStore
from tests.test_construct_ingest import EN, EN2, row, write_jsonl

FIXTURES = Path(__file__).parent / "fixtures"
UNDATED = FIXTURES / "undated_pages"
PAGES = json.loads((UNDATED / "expected.json").read_text(encoding="utf-8"))
# a real page with a publication date (tests/fixtures/realpages: flowfx.de, 2020-01-16 in its JSON-LD)
DATED = next(p for p in json.loads((FIXTURES / "realpages" / "expected.json").read_text(encoding="utf-8"))
             if p["file"] == "flowfx.de.tmux.html")
EARLY, LATE = dt.date(1995, 1, 1), dt.date(2099, 12, 31)


# ------------------------------------------------------------------ dates in URLs (real URLs of trafilatura's set)

@pytest.mark.parametrize("url, expected", [
    ("https://www.paginasiete.bo/seguridad/2022/5/3/policia-anuncia-coordinacion-con-carabineros-para-investigar-otro"
     "-caso-de-robo-de-vehiculos-326161.html", dt.date(2022, 5, 3)),
    ("http://www.exlibris-deg.de/2019/10/24/balsamo-stella-guido/", dt.date(2019, 10, 24)),
    ("https://www.she-works.de/aktuelles/5-inspirierende-frauen-aus-der-sportwelt/2022/12/29/", dt.date(2022, 12, 29)),
    # the archive's own timestamp (14 digits) is no date of the article; the archived URL's path is
    ("https://web.archive.org/web/20080731095558/http://www.dimido.de/2008/07/29/was-ist-virales-marketing/",
     dt.date(2008, 7, 29)),
    ("https://web.archive.org/web/20160526181643/http://ordnungsrausch.com/orga-life-das-leben-organisieren/", None),
    ("https://1337kultur.de/2020/folge-70-star-trek-picard/", None),  # a year alone dates nothing
    ("https://www.vogelwarte.ch/de/vogelwarte/news/avinews/dezember-2021/zielartenfoerderung", None),
    ("https://www.wbf.admin.ch/wbf/de/home/dokumentation/nsb-news_list.msg-id-14093.html", None),
    ("https://news.example/2020/03/", dt.date(2020, 3, 1)),  # a year and month: the month's first day
    ("https://news.example/story?date=2020/03/15/", None),  # query strings are not read
])
def test_url_date(url, expected):
    assert url_date(url, EARLY, LATE) == expected


def test_url_date_respects_bounds():
    assert url_date("http://www.exlibris-deg.de/2019/10/24/x/", EARLY, dt.date(2019, 10, 1)) is None


# ------------------------------------------------------------------ ingest: HTML folder with real undated pages

def html_corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "pages"
    folder.mkdir()
    lines = ["file\turl"]
    for p in [*PAGES, DATED]:
        src = (UNDATED if p in PAGES else FIXTURES / "realpages") / "pages" / p["file"]
        (folder / p["file"]).write_bytes(src.read_bytes())
        lines.append(f"{p['file']}\t{p['url']}")
    (tmp_path / "urls.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def ingest(tmp_path: Path, inputs: list[dict], **corpus):
    config = config_from_dict({"project": {"build_dir": str(tmp_path / "build"), "languages": ["en", "de"]},
                               "corpus": {"inputs": inputs, "min_tokens": 20, **corpus}})
    report = Pipeline(config).run(until="ingest")
    manifest = BuildStore(config.build_dir).require("ingest")
    return {a.url: a for a in BuildStore(config.build_dir).read("ingest", Article)}, report.stages[0], manifest


def html_input(tmp_path: Path) -> list[dict]:
    return [{"path": str(html_corpus(tmp_path)), "format": "html", "url_map": str(tmp_path / "urls.tsv")}]


def test_real_undated_pages_are_undated_to_the_extractor():
    from babelrag.construct.ingest.extract import article_from_html

    for p in PAGES:
        art = article_from_html((UNDATED / "pages" / p["file"]).read_bytes(), p["url"], infer_dates=True)
        assert art.title and art.text and art.published is None, p["file"]
        assert art.hints.modified is None and art.hints.fetched is None  # nothing else in the page either


def test_drop_is_the_default_and_counts_missing_date(tmp_path):
    arts, stage, manifest = ingest(tmp_path, html_input(tmp_path))
    assert list(arts) == [DATED["url"]] and arts[DATED["url"]].date_source == "published"
    assert arts[DATED["url"]].published == dt.date(2020, 1, 16)
    assert stage.skipped == {"missing-date": len(PAGES)}
    assert manifest.extra["date_sources"] == {"undated_policy": "drop", "inferred_dates_in_windows": False,
                                              "published": 1, "modified": 0, "url": 0, "fetched": 0, "none": 0}


def test_keep_keeps_undated_pages_outside_date_windows(tmp_path):
    # the window leaves the dated page (2020) out; the undated ones cannot be placed in it and are kept
    arts, stage, manifest = ingest(tmp_path, html_input(tmp_path), undated="keep", date_from="2025-01-01")
    assert sorted(arts) == sorted(p["url"] for p in PAGES)
    assert stage.skipped == {"before-date-window": 1}
    for p in PAGES:
        a = arts[p["url"]]
        assert (a.published, a.date_source, a.windowed) == (None, "none", False)
        assert a.day == UNDATED_DAY and a.fresh_day is None and a.real_published is None
        assert a.language == p["language"] and a.date_label == "unknown"
    assert manifest.extra["date_sources"]["none"] == len(PAGES)
    assert stage.kept_with_note.get("date-none") == len(PAGES)


# ------------------------------------------------------------------ ingest: infer, from a WARC and news-please JSON

FETCHED = dt.date(2026, 3, 4)


def write_warc(path: Path, last_modified_for: str) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for p in PAGES:
            http = [("Content-Type", "text/html; charset=utf-8")]
            if p["file"] == last_modified_for:
                http.append(("Last-Modified", "Tue, 03 Feb 2026 10:00:00 GMT"))
            record = writer.create_warc_record(
                p["url"], "response", payload=io.BytesIO((UNDATED / "pages" / p["file"]).read_bytes()),
                http_headers=StatusAndHeaders("200 OK", http, protocol="HTTP/1.1"),
                warc_headers_dict={"WARC-Date": f"{FETCHED.isoformat()}T08:30:00Z"})
            writer.write_record(record)


def infer_inputs(tmp_path: Path) -> list[dict]:
    modified = PAGES[0]["file"]
    write_warc(tmp_path / "crawl.warc.gz", last_modified_for=modified)
    rows = [row(1, "Harbour council approves ferry budget", EN, date="", url="https://news.example/2026/02/27/ferry"),
            row(2, "Wetlands store more carbon than thought", EN2, date="", date_download="2026-03-01 07:00:00"),
            row(3, "Council budget debate continues", EN + EN2, date="")]
    for r in rows:
        r["date_publish"] = None
    rows[2]["url"] = "https://news.example/council"
    write_jsonl(tmp_path / "news.jsonl", rows)
    return [{"path": str(tmp_path / "crawl.warc.gz"), "format": "warc"},
            {"path": str(tmp_path / "news.jsonl"), "format": "jsonl"}]


def test_infer_records_the_source_of_each_date(tmp_path):
    arts, stage, manifest = ingest(tmp_path, infer_inputs(tmp_path), undated="infer")
    got = {url: (a.published, a.date_source, a.windowed) for url, a in arts.items()}
    lm, *fetched = PAGES
    assert got == {lm["url"]: (dt.date(2026, 2, 3), "modified", False),  # HTTP Last-Modified of the response
                   **{p["url"]: (FETCHED, "fetched", False) for p in fetched},  # WARC-Date
                   "https://news.example/2026/02/27/ferry": (dt.date(2026, 2, 27), "url", False),
                   "https://news.example/2": (dt.date(2026, 3, 1), "fetched", False),  # news-please date_download
                   "https://news.example/council": (None, "none", False)}  # nothing to infer from: kept undated
    assert manifest.extra["date_sources"] == {"undated_policy": "infer", "inferred_dates_in_windows": False,
                                              "published": 0, "modified": 1, "url": 1, "fetched": 3, "none": 1}
    assert {k: v for k, v in stage.kept_with_note.items() if k.startswith("date-")} == \
        {"date-modified": 1, "date-url": 1, "date-fetched": 3, "date-none": 1}
    for a in arts.values():  # freshness never trusts an inferred date; windows only when asked
        assert a.fresh_day is None and a.real_published is None and a.day == UNDATED_DAY
    assert arts["https://news.example/2026/02/27/ferry"].date_label == "2026-02-27 (approximate: url date)"


def test_inferred_dates_in_windows_only_when_asked(tmp_path):
    arts, stage, _ = ingest(tmp_path, infer_inputs(tmp_path), undated="infer", inferred_dates_in_windows=True,
                            date_from="2026-03-01")
    # the window now applies to inferred dates: the URL date (27 Feb) and Last-Modified (3 Feb) fall out
    assert stage.skipped == {"before-date-window": 2}
    assert {a.date_source for a in arts.values()} == {"fetched", "none"}
    fetched = [a for a in arts.values() if a.date_source == "fetched"]
    assert all(a.windowed and a.day == (a.published - dt.date(1970, 1, 1)).days for a in fetched)
    assert all(a.fresh_day is None for a in fetched)  # still never fresh


# ------------------------------------------------------------------ mining without a window

def test_entity_graph_pairs_undated_articles_without_a_window():
    # 0 and 1 share two entities but are 400 days apart: no pair; 2 (undated) shares them with both: two pairs
    days = np.array([100, 500, UNDATED_DAY, 110, UNDATED_DAY], dtype=np.int64)
    ents = [[0, 1], [0, 1], [0, 1, 2], [3, 4], [3, 4]]
    mined = mine_pairs(days, Incidence.from_lists(ents, 5), k=2, max_days=14)
    pairs = canonical_pairs(mined)
    assert pairs == {(0, 2), (1, 2), (3, 4)}
    assert pairs == networkx_walk_pairs(days, ents, k=2, max_days=14)
    assert set(mined.days.tolist()) == {-1}


def test_entity_graph_dated_only_is_unchanged():
    rng = np.random.default_rng(3)
    days = rng.integers(0, 60, size=80)
    ents = [sorted(set(rng.integers(0, 25, size=3).tolist())) for _ in range(80)]
    assert canonical_pairs(mine_pairs(days, Incidence.from_lists(ents, 25), k=2, max_days=7)) == \
        networkx_walk_pairs(days, ents, k=2, max_days=7)


@pytest.fixture()
def store(tmp_path):
    vs = VectorStore.lite(tmp_path / "milvus", "articles", 4)
    v = np.array([[1, 0, 0, 0], [0.9, 0.1, 0, 0], [0.8, 0.2, 0, 0], [0.7, 0.3, 0, 0]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    # q (de, day 100); en articles: near in time, far in time, undated
    vs.upsert(["q", "near", "far", "undated"], v, ["de", "en", "en", "en"], [100, 105, 900, UNDATED_DAY],
              ["q", "near", "far", "undated"], ["s"] * 4)
    yield vs
    vs.close()


def test_dense_search_finds_undated_articles_and_undated_queries_search_everything(store):
    from types import SimpleNamespace

    cfg = SimpleNamespace(min_score=0.0, max_days_apart=14, top_k=10)
    docs = {"q": Doc("q", "de", 100), "near": Doc("near", "en", 105), "far": Doc("far", "en", 900),
            "undated": Doc("undated", "en", UNDATED_DAY, fresh=False)}
    hits = _hits_in_window(store, [docs["q"]], ["en"], docs, cfg)
    assert [i for i, _ in hits["q"]] == ["near", "undated"]  # "far" is out of the 14-day window
    hits = _hits_in_window(store, [docs["undated"]], ["en"], docs, cfg)  # no window for an undated query
    assert {i for i, _ in hits["undated"]} == {"near", "far", "undated"}


def test_freshness_filter_leaves_undated_articles_out(store):
    # the distractors' filter: published at most `latest`; an undated article is never "old enough"
    expr = build_filter(["en"], published_to=1000)
    assert {h.id for h in store.search(np.array([1, 0, 0, 0], dtype=np.float32), top_k=10, filter_expr=expr)[0]} \
        == {"near", "far"}
    expr = build_filter(["en"], published_from=0, published_to=1000, or_undated=True)  # pair windows only
    assert len(store.search(np.array([1, 0, 0, 0], dtype=np.float32), top_k=10, filter_expr=expr)[0]) == 3
