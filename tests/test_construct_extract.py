"""HTML -> article on real pages (tests/fixtures/realpages: public test pages of trafilatura/htmldate with
their published expected titles, dates and text segments; sources in that folder's README.md)."""
import datetime as dt
import io
import json
import os
from pathlib import Path

import pytest

from babelrag.construct.ingest.extract import Page, article_from_html, extract_item
from babelrag.construct.ingest.html import canonical_url, decode_html
from babelrag.construct.ingest.readers import RawArticle, Skip, read_warc
from babelrag.executor import LocalExecutor

REAL = Path(__file__).parent / "fixtures" / "realpages"
EXPECTED = {row["file"]: row for row in json.loads((REAL / "expected.json").read_text(encoding="utf-8"))}


def real(name: str) -> tuple[bytes, dict]:
    return (REAL / "pages" / name).read_bytes(), EXPECTED[name]


def norm(text: str) -> str:
    return " ".join((text or "").split())


def test_fixture_set_is_what_its_readme_says():
    assert 60 <= len(EXPECTED) <= 80
    langs = {r["language"] for r in EXPECTED.values()}
    assert {"de", "en", "fr", "es"} <= langs
    assert all((REAL / "pages" / name).is_file() for name in EXPECTED)
    assert sum(p.stat().st_size for p in (REAL / "pages").iterdir()) < 6_000_000
    features = {f for r in EXPECTED.values() for f in r["features"]}
    assert {"charset-iso-8859-1", "relative-canonical", "entity-encoded-canonical", "ng-href", "jsonld-date",
            "modified-date", "date-in-url", "og-title-differs", "hyphen-in-title"} <= features


@pytest.mark.parametrize("name", ["cnet.de.schutz.html", "en.wikipedia.org.tsne.html", "der-farang.com-Grab-Bote.html",
                                  "auto-presse.de-minisuv.html", "bondyblog.fr.paris-8.html"])
def test_hyphenated_headlines_stay_whole(name):
    """news-please cut these at the first hyphen ('Internet-User' -> 'User ...', 't-distributed' -> 'distributed')."""
    body, exp = real(name)
    art = article_from_html(body, exp["url"])
    assert isinstance(art, RawArticle)
    assert norm(art.title) == norm(exp["title"])


@pytest.mark.parametrize("name", ["harpers.org.justice.html", "Tageswoche.ch-weg.html", "rosalux.de-quarantaene.html",
                                  "arteradio.com-nuls.html", "lastampa.it.temperature.html"])
def test_site_name_is_not_part_of_the_headline(name):
    body, exp = real(name)
    assert norm(article_from_html(body, exp["url"]).title) == norm(exp["title"])


@pytest.mark.parametrize("name", ["kyffhaeuser-nachrichten.de-Regen.html", "die-tagespost.de.Demut.html",
                                  "mix1.de-clio.html", "wordsmith.org.maudlin.html"])
def test_iso_8859_1_and_cp1252_pages_decode_without_replacement_characters(name):
    body, exp = real(name)
    text, codec = decode_html(body)
    assert codec == "cp1252"
    assert "\ufffd" not in text
    art = article_from_html(body, exp["url"])
    assert "\ufffd" not in art.title + art.text
    assert norm(exp["last"]) in norm(art.text)


def test_http_header_charset_wins_over_a_missing_meta_and_over_utf8_guessing():
    body = "<html><head><title>Grüße aus Köln</title></head><body><p>Straße</p></body></html>".encode("latin-1")
    assert decode_html(body, "text/html; charset=ISO-8859-1")[0].count("ü") == 1
    utf8 = "<html><head><meta charset='utf-8'></head><body>Grüße</body></html>".encode()
    assert decode_html(utf8, None)[0].endswith("Grüße</body></html>")
    assert decode_html(utf8, "text/html; charset=utf-8")[1] == "utf-8"


def test_canonical_links_resolved_unescaped_and_templates_ignored():
    body, exp = real("schimmverband.at-weltmeisterschaft.html")
    html, _ = decode_html(body)
    url = canonical_url(html, "https://www.schwimmverband.at/news")
    assert url.startswith("https://www.schwimmverband.at/news-artikel?tx_news_pi1%5Baction%5D=detail&tx_news_pi1")
    assert "&amp;" not in url
    html, _ = decode_html(real("ethify.org.vegetarier.html")[0])
    assert canonical_url(html, "https://ethify.org/x") == \
        "https://ethify.org/content/vegetarier-zu-sein-bedarf-trend-oder-eigene-entscheidung"
    html, _ = decode_html(real("rosalux.de-quarantaene.html")[0])  # scheme-relative //www.rosalux.de/...
    assert canonical_url(html, "https://www.rosalux.de/") == \
        "https://www.rosalux.de/news/id/45292/wir-waren-fast-40-tage-in-quarantaene"
    html, _ = decode_html(real("lanouvellerepublique.fr.martin.html")[0])  # only ng-href="{{...}}"
    assert canonical_url(html) == ""
    assert canonical_url('<link rel="canonical" href="{{ page.url }}"><link rel=canonical href="/a?b=1&amp;c=2">',
                         "https://x.org/z") == "https://x.org/a?b=1&c=2"


def test_angular_page_without_url_or_text_is_a_skip_not_an_article():
    body, _ = real("lanouvellerepublique.fr.martin.html")
    item = article_from_html(body, "")
    assert isinstance(item, Skip) and item.reason == "no-url"
    assert isinstance(article_from_html(body, EXPECTED["lanouvellerepublique.fr.martin.html"]["url"]), Skip)


@pytest.mark.parametrize("name", ["blog.python.org.html", "cnet.de.schutz.html", "en.wikipedia.org.tsne.html",
                                  "aoc.media.archaisme.html", "thenervousbreakdown.com.loneliest.html"])
def test_published_date_not_modified_date_and_from_url_or_jsonld(name):
    body, exp = real(name)
    art = article_from_html(body, exp["url"])
    assert art.published is not None
    assert abs((art.published - dt.date.fromisoformat(exp["date"])).days) <= 1


def test_output_does_not_depend_on_the_day_it_runs(monkeypatch):
    """A page showing only '5:11 AM' (blog.python.org) got the run's date from news-please. Run the real
    extraction with the clock at two other days: same articles, and no date equal to the fake today."""
    import datetime as real_dt

    names = ["blog.python.org.html", "world.kbs.co.kr-Temperatures.html", "pythonspeed.com.docker.html",
             "mdavis.xyz.supermarket.html", "kyffhaeuser-nachrichten.de-Regen.html"]

    def run_at(day: real_dt.date):
        class FakeDate(real_dt.date):
            @classmethod
            def today(cls):
                return cls(day.year, day.month, day.day)

        class FakeDateTime(real_dt.datetime):
            @classmethod
            def now(cls, tz=None):
                return cls(day.year, day.month, day.day, 12, 0, tzinfo=tz)

            @classmethod
            def utcnow(cls):
                return cls(day.year, day.month, day.day, 12, 0)

            @classmethod
            def today(cls):
                return cls(day.year, day.month, day.day, 12, 0)

        import htmldate.core
        import htmldate.extractors
        import htmldate.validators

        for module in (htmldate.core, htmldate.extractors, htmldate.validators):
            if hasattr(module, "datetime"):
                monkeypatch.setattr(module, "datetime", FakeDateTime)
            if hasattr(module, "date"):
                monkeypatch.setattr(module, "date", FakeDate)
        out = []
        for name in names:
            body, exp = real(name)
            art = article_from_html(body, exp["url"])
            out.append((art.title, art.published, art.text))
        monkeypatch.undo()
        return out

    a = run_at(real_dt.date(2031, 7, 14))
    b = run_at(real_dt.date(2044, 2, 29))
    assert a == b
    assert all(p not in (real_dt.date(2031, 7, 14), real_dt.date(2044, 2, 29)) for _, p, _ in a)


def test_page_without_any_date_is_skipped_as_missing_date_in_ingest(tmp_path):
    from babelrag.config import config_from_dict
    from babelrag.pipeline import Pipeline

    body, exp = real("harpers.org.justice.html")
    html = decode_html(body)[0]
    import re
    undated = re.sub(r"20\d\d", "", html)  # every year gone: no date anywhere, not in the URL either
    folder = tmp_path / "html"
    folder.mkdir()
    (folder / "a.html").write_text(undated, encoding="utf-8")
    (tmp_path / "urls.tsv").write_text("a.html\thttps://harpers.org/a-letter-on-justice-and-open-debate/\n")
    assert article_from_html(undated, "https://harpers.org/a-letter-on-justice-and-open-debate/").published is None
    # an image upload path dates the picture, not the article
    with_image = undated.replace("</h1>", '</h1><img src="https://harpers.org/wp-content/uploads/2015/03/l.jpg">', 1)
    assert with_image != undated
    assert article_from_html(with_image, "https://harpers.org/a-letter-on-justice-and-open-debate/").published is None
    # times and relative expressions never become a date (they would be dated from the day of the run)
    relative = undated.replace("</h1>", "</h1><p>5:11 AM</p><p>vor 3 Tagen</p><p>yesterday</p><p>hace 2 días</p>", 1)
    assert relative != undated
    assert article_from_html(relative, "https://harpers.org/a-letter-on-justice-and-open-debate/").published is None
    config = config_from_dict({"project": {"build_dir": str(tmp_path / "b"), "languages": ["en"]},
                               "corpus": {"inputs": [{"path": str(folder), "format": "html",
                                                      "url_map": str(tmp_path / "urls.tsv")}], "min_tokens": 20},
                               "executor": {"processes": 1}})
    with pytest.raises(Exception, match="missing-date=1"):
        Pipeline(config).run(until="ingest")


def test_real_page_set_meets_the_targets_of_the_extraction_path():
    """The whole page set through the chosen path meets issue 15's targets: titles >= 95 % exact,
    dates >= 95 % within a day, lead/last paragraphs >= 95 % found (bench_extraction prints the figures)."""
    titles = dates = segs = n_dates = n_segs = n = 0
    for name, exp in EXPECTED.items():
        if exp.get("expect_skip"):
            continue
        n += 1
        art = article_from_html((REAL / "pages" / name).read_bytes(), exp["url"])
        assert isinstance(art, RawArticle), (name, art)
        titles += norm(art.title) == norm(exp["title"])
        if exp["date"]:
            n_dates += 1
            dates += art.published is not None and abs((art.published - dt.date.fromisoformat(exp["date"])).days) <= 1
        for key in ("lead", "last"):
            if exp[key]:
                n_segs += 1
                segs += norm(exp[key]) in norm(f"{art.title} {art.text}")  # headline kept as the title
    assert titles / n >= 0.95
    assert dates / n_dates >= 0.95
    assert segs / n_segs >= 0.95


def test_pool_output_equals_inline_output_in_input_order():
    names = sorted(EXPECTED)[:24]
    items = [Page(body=(REAL / "pages" / n).read_bytes(), url=EXPECTED[n]["url"], where=n) for n in names]
    items.insert(5, Skip("unreadable-file", "x", "passes through"))
    one = list(LocalExecutor(processes=1).map(extract_item, items))
    two = list(LocalExecutor(processes=2, chunk_size=3, prefetch=1).map(extract_item, items))
    assert one == two
    assert [getattr(a, "where", None) or getattr(a, "source", None) for a in one] == \
        [getattr(i, "where", None) for i in items]


def test_warc_record_charset_comes_from_its_http_header(tmp_path):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    body, exp = real("nnz-online.de-Quantensprung.html")
    no_meta = body.replace(b"charset=iso-8859-1", b"").replace(b"charset=ISO-8859-1", b"")
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=ISO-8859-1")], protocol="HTTP/1.1")
    writer.write_record(writer.create_warc_record(exp["url"], "response", payload=io.BytesIO(no_meta),
                                                  http_headers=headers))
    path = tmp_path / "x.warc.gz"
    path.write_bytes(buf.getvalue())
    [art] = list(read_warc(path))
    assert isinstance(art, RawArticle)
    assert norm(art.title) == norm(exp["title"]) and "\ufffd" not in art.text
    assert norm(exp["lead"]) in norm(art.text)


def test_ingest_stage_output_is_the_same_for_one_and_two_processes(tmp_path):
    from babelrag.config import config_from_dict
    from babelrag.pipeline import Pipeline
    from babelrag.records import Article
    from babelrag.store import BuildStore

    folder = tmp_path / "html"
    folder.mkdir()
    names = [n for n, r in sorted(EXPECTED.items()) if r["language"] in ("en", "de") and not r.get("expect_skip")][:10]
    lines = []
    for i, name in enumerate(names):
        (folder / f"p{i:02d}.html").write_bytes((REAL / "pages" / name).read_bytes())
        lines.append(f"p{i:02d}.html\t{EXPECTED[name]['url']}")
    (tmp_path / "urls.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    outputs = []
    for processes in (1, 2):
        config = config_from_dict({
            "project": {"build_dir": str(tmp_path / f"b{processes}"), "languages": ["en", "de"]},
            "corpus": {"inputs": [{"path": str(folder), "format": "html", "url_map": str(tmp_path / "urls.tsv")}],
                       "min_tokens": 20},
            "executor": {"processes": processes, "chunk_size": 2}})
        report = Pipeline(config).run(until="ingest")
        arts = BuildStore(config.build_dir).read("ingest", Article)
        outputs.append(([a.model_dump() if hasattr(a, "model_dump") else a.__dict__ for a in arts],
                        report.stages[0].skipped))
    assert len(outputs[0][0]) >= 6
    assert outputs[0] == outputs[1]


def test_shipped_sample_html_extracts_to_the_articles_of_its_jsonl():
    """The sample corpus ships each article as JSONL and as an HTML page: the extraction path must give
    back exactly the JSONL's title, date and text (as news-please did) for every page."""
    from babelrag.construct.ingest.readers import parse_date, read_url_map
    from babelrag.data import sample_corpus_dir

    sample = sample_corpus_dir()
    truth = {}
    for line in (sample / "articles.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        truth[str(row["id"])] = row
    urls = read_url_map(sample / "html" / "urls.tsv")
    pages = sorted((sample / "html").glob("*.html"))
    assert len(pages) >= 100
    for page in pages:
        exp = truth[page.stem]
        art = article_from_html(page.read_bytes(), urls[page.name])
        assert isinstance(art, RawArticle), page.name
        assert (norm(art.title), art.published, norm(art.text)) == \
            (norm(exp["title"]), parse_date(exp["date_publish"]), norm(exp["maintext"])), page.name


def test_executor_runs_small_inputs_inline_and_large_ones_in_workers():
    ex = LocalExecutor(processes=2, chunk_size=4)
    assert set(ex.map(_pid, range(7))) == {os.getpid()}  # fewer items than one chunk per worker
    many = list(ex.map(_pid, range(40)))
    assert os.getpid() not in many and len(many) == 40


def _pid(_: int) -> int:
    return os.getpid()


def test_a_dying_worker_is_a_clear_stage_error_not_a_pool_traceback():
    from babelrag.errors import StageError

    with pytest.raises(StageError, match="executor.processes: 1"):
        list(LocalExecutor(processes=2, chunk_size=2).map(_die_on_seven, range(20)))


def _die_on_seven(i: int) -> int:
    if i == 7:
        os._exit(1)  # what the kernel's OOM killer or a segfault in lxml looks like to the pool
    return i


def test_fetch_day_bounds_the_date_with_a_day_for_time_zones():
    """WARC records: a page cannot be published after it was fetched (WARC-Date, UTC); a page dated the
    next day in its own time zone is still accepted."""
    body, exp = real("cnet.de.schutz.html")  # published 2014-05-14T15:40:14+02:00
    fetched_same_day = article_from_html(body, exp["url"], fetched=dt.date(2014, 5, 14))
    fetched_day_before = article_from_html(body, exp["url"], fetched=dt.date(2014, 5, 13))
    assert fetched_same_day.published == fetched_day_before.published == dt.date(2014, 5, 14)


@pytest.mark.parametrize("name", ["kyffhaeuser-nachrichten.de-Regen.html", "die-tagespost.de.Demut.html"])
def test_undeclared_legacy_charset_is_detected(name):
    """No HTTP header, no <meta charset>, not UTF-8: charset-normalizer's detection decodes the umlauts."""
    import re

    body, exp = real(name)
    undeclared = re.sub(rb"""charset\s*=\s*["']?[-\w]+""", b"", body, flags=re.IGNORECASE)
    assert b"charset" not in undeclared.lower()
    text, codec = decode_html(undeclared)
    assert codec != "utf-8" and "\ufffd" not in text
    assert norm(undeclared.decode("cp1252")) == norm(text)
    art = article_from_html(undeclared, exp["url"])
    assert norm(art.title) == norm(exp["title"]) and norm(exp["last"]) in norm(art.text)


# --- issue 27: residual errors, on public pages of other extraction libraries (tests/fixtures/realpages_residuals)
RESIDUALS = Path(__file__).parent / "fixtures" / "realpages_residuals"
RESIDUAL_ROWS = {row["file"]: row for row in json.loads((RESIDUALS / "expected.json").read_text(encoding="utf-8"))}


def residual(name: str) -> tuple[RawArticle | Skip, dict]:
    exp = RESIDUAL_ROWS[name]
    return article_from_html((RESIDUALS / "pages" / name).read_bytes(), exp["url"]), exp


def test_residual_fixture_set_is_what_its_readme_says():
    readme = (RESIDUALS / "README.md").read_text(encoding="utf-8")
    realpages = {row["source"].split()[-1].rsplit("/", 1)[-1] for row in EXPECTED.values()}
    for name, row in RESIDUAL_ROWS.items():
        assert (RESIDUALS / "pages" / name).is_file() and f"`{name}`" in readme
        assert {"repo", "commit", "path", "licence"} <= set(row["source"]) and row["annotation"] and row["residuals"]
        assert row["source"]["path"].rsplit("/", 1)[-1] not in realpages  # no page of the first set again


@pytest.mark.parametrize("name", sorted(RESIDUAL_ROWS))
def test_residual_page_gives_its_annotated_title_date_and_text(name):
    art, exp = residual(name)
    assert isinstance(art, RawArticle), art
    assert norm(art.title) == norm(exp["title"])
    assert art.published == dt.date.fromisoformat(exp["date"])
    text = norm(art.text)
    for key in ("lead", "last"):
        assert norm(exp[key]) in text, key
    for bad in exp["boilerplate"]:
        assert norm(bad) not in text


def test_photo_credit_is_not_part_of_the_headline():
    """Nikkei's og:title, twitter:title, <title> and JSON-LD headline all end with the photo credit
    "（写真＝ロイター）" (photo: Reuters); the headline is the <h1>'s first span without it."""
    art, _ = residual("nikkei.com-beicho.html")
    assert "写真" not in art.title and "ロイター" not in art.title and "日本経済新聞" not in art.title
    assert art.title == "米朝首脳直通電話 習氏に挑むトランプ戦術の成否"


def test_date_of_a_related_story_is_not_the_publication_date():
    """The Nikkei page lists three related stories dated 2018/6/18, 6/16 and 6/15 under the article;
    its own date (2018/6/19 5:50, JSON-LD 20180619T055000+0900) must win over the older teaser dates."""
    from babelrag.construct.ingest.extract import publication_date

    body = (RESIDUALS / "pages" / "nikkei.com-beicho.html").read_bytes()
    html = decode_html(body)[0]
    assert "（2018/6/18 14:10）" in html
    assert publication_date(html, RESIDUAL_ROWS["nikkei.com-beicho.html"]["url"]) == dt.date(2018, 6, 19)


def test_site_logo_h1_is_not_the_headline():
    """The WordPress theme marks the blog's name up as <h1 class="site-title"> (a link home) before the
    post's <h1>; <title> "Aren't we all …? | Katastrophengebiet" contains both."""
    from babelrag.construct.ingest.html import page_title

    art, exp = residual("andreabottlinger.wordpress.com-arent.html")
    assert art.title == exp["title"] != "Katastrophengebiet"
    # without its logo classes and home link the blog's name is still known as the site (og:site_name)
    html = decode_html((RESIDUALS / "pages" / "andreabottlinger.wordpress.com-arent.html").read_bytes())[0]
    bare = html.replace('<h1 class="site-title"><a href="https://andreabottlinger.wordpress.com/" title="Katastrophengebiet" '
                        'rel="home">Katastrophengebiet</a></h1>', "<h1>Katastrophengebiet</h1>")
    assert bare != html
    from babelrag.construct.ingest.extract import parse_tree

    assert page_title(parse_tree(bare), exp["url"]) == exp["title"]


@pytest.mark.parametrize("name, teaser", [
    # <h4>kicker</h4><h1>headline</h1><h3>teaser</h3>, no class, no <header>
    ("pagina12.com.ar-suprema.html", "La concentración está llamada para las 17 frente al edificio donde funciona la Corte."),
    # <h1 class="Tech-Title">, a read-aloud link with no text, then <p class="Tech-Description">
    ("unocero.com.marcas.html", "Aunque muchas veces crees que el problema de tus aplicaciones es culpa del desarrollador"),
])
def test_unmarked_teaser_right_after_the_h1_is_kept(name, teaser):
    """The teaser the page's own og:description repeats sits right after the <h1> without a lead class;
    trafilatura drops it and lead recovery took only marked blocks or <header> children."""
    body, exp = real(name)
    html = decode_html(body)[0]
    assert teaser in html.split("<body", 1)[0]  # the page's description is this teaser
    art = article_from_html(body, exp["url"])
    assert norm(art.text).startswith(norm(teaser)[:40])
    assert norm(exp["title"]) not in norm(art.text)[:200]  # the headline stays the title only


def test_hidden_separator_and_topline_readings_of_the_h1():
    """Inline markup in the shapes news sites use (the hidden separator is also on a public page, the
    energiezukunft test below; no public page with the headline held in the topline span was found):
    hidden parts never reach the title, and a headline held in the kicker/topline span is found when the
    metadata name it."""
    from lxml import html as lxml_html

    from babelrag.construct.ingest.html import page_title

    def title(markup: str) -> str:
        return page_title(lxml_html.fromstring(markup), "https://example.org/a")

    kicker = ('<h1><span class="article-heading__kicker">Bahnverkehr</span><span class="{hidden}">: </span>'
              '<span class="article-heading__title">Züge fahren schneller</span></h1>')
    for hidden in ("offscreen", "u-offscreen", "visually-hidden", "sr-only", "hidden"):
        page = f'<html><head><meta property="og:title" content="Bahnverkehr: Züge fahren schneller"></head>' \
               f'<body>{kicker.format(hidden=hidden)}</body></html>'
        assert title(page) == "Züge fahren schneller", hidden
    # no metadata title: the heading's own text, the hidden ": " left out and no separator at the edge
    assert title(f"<html><body>{kicker.format(hidden='off-screen')}</body></html>") == "Züge fahren schneller"
    topline = ('<html><head><title>Streik legt Flughafen lahm | Beispiel</title></head><body><h1>'
               '<span class="topline">Streik legt Flughafen lahm</span><span class="subline">Tausende Reisende '
               'warten in den Hallen</span></h1></body></html>')
    assert title(topline) == "Streik legt Flughafen lahm"


def test_lead_recovery_skips_ad_slots_script_text_and_pop_ups():
    """Inline markup in the shapes that lead recovery took before: an ad slot whose class holds "lead"
    (leaderboard) or "intro" with only <script> code as text, a newsletter pop-up inside the article
    <header>; the marked teaser between them is still taken, its own <script> child left out. (Public
    pages: the CNET, diaadia and New York Post tests below.)"""
    from lxml import html as lxml_html

    from babelrag.construct.ingest.html import lead_paragraphs

    body = ("Der Stadtrat hat am Dienstagabend mit großer Mehrheit beschlossen, die Linie 7 bis zum "
            "Hauptbahnhof zu verlängern. Die Bauarbeiten sollen im Frühjahr beginnen.")
    page = f"""<html><body><article><header>
      <h1>Straßenbahn fährt bald bis zum Hauptbahnhof</h1>
      <div class="ad-leaderboard" id="div-gpt-ad-leaderboard"><script>googletag.cmd.push(function() {{
        googletag.display('div-gpt-ad-leaderboard'); }});</script></div>
      <div class="newsletter-popup" role="dialog"><p>Jetzt den Newsletter abonnieren und keine Nachricht aus
        der Stadt mehr verpassen!</p></div>
      <p class="article-lead">Nach jahrelangem Streit ist die Entscheidung gefallen: Die Linie 7 wird
        verlängert.<script>trackLead('article-lead');</script></p>
      <div class="intro-ad"><script>window.adsQueue = window.adsQueue || []; adsQueue.push('intro');</script></div>
    </header><p>{body}</p></article></body></html>"""
    leads = lead_paragraphs(lxml_html.fromstring(page), body, "Straßenbahn fährt bald bis zum Hauptbahnhof")
    assert leads == ["Nach jahrelangem Streit ist die Entscheidung gefallen: Die Linie 7 wird verlängert."]


def test_precision_fallback_refuses_a_sign_up_form():
    """When favor_precision keeps under half of the article paragraphs the default extraction runs too;
    on the Attac page (first page set) it adds a sign-up form's labels and a form notice (the only
    "long" line, inside a <form>) and must be refused."""
    from babelrag.construct.ingest.extract import _trafilatura

    body, exp = real("france.attc.org-privatisations.html")
    html = decode_html(body)[0]
    precise, fuller = _trafilatura(html, exp["url"], precision=True), _trafilatura(html, exp["url"], precision=False)
    assert len(fuller) >= 2 * len(precise) and "Numéro de téléphone portable" in fuller  # the fallback is tried
    art = article_from_html(body, exp["url"])
    assert "Numéro de téléphone portable" not in art.text and norm(exp["lead"]) in norm(art.text)


def test_trailing_teasers_are_cut_but_not_sections_headed_by_anchors():
    """Other columns' teasers at the end of the text (Herald Sun page) go; an article whose sections are
    headed by links to its own anchors (a table of contents) keeps its last section."""
    from lxml import html as lxml_html

    from babelrag.construct.ingest.html import other_stories_text, without_trailing_teasers

    art, _ = residual("heraldsun.com.au-surveillance.html")
    assert art.text.endswith("LAURIE OAKES IS THE NINE NETWORK POLITICAL EDITOR")
    sections = "".join(f'<section><h2><a href="#s{i}">Teil {i} der Reportage</a></h2><p>Der {i}. Abschnitt erzählt, wie '
                       f'die Gemeinde ihren Haushalt aufstellt und wer mitredet.</p></section>' for i in range(3))
    tree = lxml_html.fromstring(f"<html><body><article><h1>Haushalt</h1>{sections}</article></body></html>")
    text = "\n".join(f"Teil {i} der Reportage\nDer {i}. Abschnitt erzählt, wie die Gemeinde ihren Haushalt aufstellt "
                     f"und wer mitredet." for i in range(3))
    assert other_stories_text(tree) == ""
    assert without_trailing_teasers(text, other_stories_text(tree)) == text


@pytest.mark.parametrize("name, prefix", [("wind-energie.de-beschleunigung.html", 'content="Pressemitteilung: '),
                                          ("dvgw.de-heizung.html", "<title>DVGW e.V.: ")])
def test_h1_without_the_prefix_of_the_metadata_headline(name, prefix):
    """og:title or <title> "Prefix: headline", <h1> "headline": the <h1> is the headline, the prefix a label the metadata
    puts before it - a genre, rubric or the publisher shown nowhere else on the page (trafilatura's annotated
    titles of these pages are the <h1>); so are the kicker "Chronik" and the section "Corona-Pandemie" that two
    pages of the first set show beside their <h1>."""
    from lxml import html as lxml_html

    from babelrag.construct.ingest.html import page_title

    html = decode_html((RESIDUALS / "pages" / name).read_bytes())[0]
    art, exp = residual(name)
    assert f'{prefix}{exp["title"]}' in html  # og:title or <title>, the prefix before the <h1>'s text
    assert art.title == exp["title"]
    for first in ("0a6291ebbce449b3b04256b43c73e39d.html", "cicero.de.pandemie.html"):
        body, row = real(first)
        assert norm(article_from_html(body, row["url"]).title) == norm(row["title"])
    head = '<head><meta property="og:title" content="Wahl: Neue Präsidentin gewählt"></head>'
    page = f"<html>{head}<body><h1>Neue Präsidentin gewählt</h1><p>Die Delegierten wählten sie.</p></body></html>"
    assert page_title(lxml_html.fromstring(page), "https://example.org/a") == "Neue Präsidentin gewählt"


def test_hidden_separator_ends_an_unmarked_kicker_and_comments_and_dateline_date_the_page():
    """energiezukunft.eu (trafilatura's eval set): ``<h1><span class="text-lightgreen fake-h5">Kicker</span>
    <span class="invisible">: </span><span class="headline">Headline</span></h1>`` - no kicker class, only the
    hidden ": " tells the kicker from the headline; no date in the markup, readers' comments dated
    02.12.2022, the text opening with its dateline "29.11.2022 – " and citing an older day ("ab dem 1.9.2022")."""
    from babelrag.construct.ingest.extract import parse_tree, publication_date
    from babelrag.construct.ingest.html import _heading_texts

    name = "energiezukunft.eu-bioenergie.html"
    html = decode_html((RESIDUALS / "pages" / name).read_bytes())[0]
    assert '<span class="invisible">: </span>' in html and 'class="comment-date" title="02.12.2022' in html
    assert "29.11.2022 – Mehrfach" in html and "ab dem 1.9.2022" in html
    h1 = parse_tree(html).xpath("//h1")[0]
    assert _heading_texts(h1) == ["Bundesregierung drosselt Bioenergie, Branche protestiert",
                                  "Strompreisbremse – Erlösabschöpfung",
                                  "Strompreisbremse – Erlösabschöpfung: Bundesregierung drosselt Bioenergie, Branche protestiert"]
    art, exp = residual(name)
    assert art.title == exp["title"] and art.published == dt.date(2022, 11, 29)
    assert not art.text.startswith("Strompreisbremse")  # trafilatura's first line, the <h1> with its kicker
    assert publication_date(html, exp["url"]) == dt.date(2022, 11, 29)


def test_h1_with_its_own_roof_line_is_not_given_the_metadata_prefix():
    """mdr.de (trafilatura's eval set): og:title "Corona-Lockerungen: Autohäuser …", the <h1> a dachzeile
    "Nach Corona-Lockerungen" and the headline span: the prefix is the page's label, shown in other words in
    the <h1>'s roof line; trafilatura's first lines (the <h1> with its roof line, a hidden "Hauptinhalt"
    heading) are no article text."""
    name = "mdr.de-autohaeuser.html"
    html = decode_html((RESIDUALS / "pages" / name).read_bytes())[0]
    assert 'content="Corona-Lockerungen: Autohäuser' in html and '<span class="dachzeile ">Nach Corona-Lockerungen' in html
    assert '<h2 class="conHeadline hidden">Hauptinhalt</h2>' in html
    art, exp = residual(name)
    assert art.title == "Autohäuser rechnen mit langsamem Anlaufen des Geschäfts"
    assert art.text.startswith("Thüringens Autohäuser rechnen")


def test_lead_recovery_skips_an_ad_slot_and_the_body_in_summary_marked_fields():
    """diaadia.com.pa (trafilatura's eval set): Drupal marks the body field ``field--type-text-with-summary``;
    a mobile copy of that field holds only an ad slot (a googletag script and the label "COMERCIAL - …"), the
    other one is the body. Neither is a lead: ad slots inside a block are left out of its text, and a block
    that holds the body is no lead; the <h5 class="sumario_node"> teaser is."""
    name = "diaadia.com.pa-ulpiano.html"
    html = decode_html((RESIDUALS / "pages" / name).read_bytes())[0]
    assert html.count("field--type-text-with-summary") >= 2 and "googletag.display('div-gpt-ad" in html
    art, exp = residual(name)
    first, second = art.text.split("\n")[:2]
    assert first == exp["lead"] and second.startswith("Ay, papá; al parecer El Mechi Blanco")
    assert art.text.count("Ay, papá") == 1  # the body once


def test_lead_recovery_skips_an_ad_slot_whose_class_says_leader():
    """CNET (readability's test pages): ``<div class="ad-leader-top">`` with a console.log/googletag script
    between the <h1> and the body; the lead is the ``<p class="article-dek">`` under the <h1>."""
    name = "cnet.com-twitter-lite.html"
    html = decode_html((RESIDUALS / "pages" / name).read_bytes())[0]
    assert 'class="ad-leader-top"' in html and 'console.log("ADS: queuing leader-top-' in html
    art, exp = residual(name)
    assert art.text.split("\n")[0] == exp["lead"]
    assert "console" not in art.text and "leader" not in art.text


def test_precision_fallback_on_a_page_without_paragraphs():
    """Google's security blog (trafilatura's eval set): the post sits in a Blogger ``text/template`` script,
    no article <p> outside it; favor_precision keeps only the date line. A precise text too short to be an
    article is a reason to run the default extraction, which is taken when what it adds is long prose."""
    from babelrag.construct.ingest.extract import _trafilatura

    name = "security.googleblog.com-protection.html"
    html = decode_html((RESIDUALS / "pages" / name).read_bytes())[0]
    exp = RESIDUAL_ROWS[name]
    assert _trafilatura(html, exp["url"], precision=True) == "May 19, 2020"
    art, _ = residual(name)
    text = norm(art.text)
    assert len(text) > 3000 and "May 19, 2020" not in text
    for segment in ("This protocol is designed so that Google cannot", "billions of users are incredibly diverse, with"):
        assert segment in text  # trafilatura's annotated 'with' segments


def test_lead_recovery_skips_a_pop_up_inside_the_article_header():
    """New York Post (htmldate's eval set): an e-mail confirmation modal (role=dialog, aria-modal) inside the
    article <header>, between the <h1> and the body; its paragraph is in the header but is no teaser."""
    name = "nypost.com-haley.html"
    from babelrag.construct.ingest.extract import parse_tree

    tree = parse_tree(decode_html((RESIDUALS / "pages" / name).read_bytes())[0])
    notice = tree.xpath('//p[contains(., "Thanks for contacting us")]')[0]
    assert any(a.tag == "header" and a.get("class") == "article-header" for a in notice.iterancestors())
    assert any(a.get("role") == "dialog" for a in notice.iterancestors())
    art, exp = residual(name)
    assert art.text.startswith(exp["lead"]) and "Thanks for contacting us" not in art.text
