"""Every byte of an HTML or WARC page decoded or the page refused (issue 32, item 3), through the ingest stage.

Real pages: tests/fixtures/realpages (public pages from trafilatura's evaluation corpus; sources and licence in
its README), re-encoded or damaged here the way a wrong server header or a mixed-up CMS leaves them. Before
the fix every case below stored U+FFFD ("Rheinmetall-Mitarbeiter m�ssen") with exit 0 and nothing counted.
"""
import io
import json
from pathlib import Path

import pytest

from babelrag.config import config_from_dict
from babelrag.construct.ingest.extract import article_from_html
from babelrag.construct.ingest.html import UndecodablePage, decode_html, decode_page
from babelrag.construct.ingest.readers import read_warc
from babelrag.pipeline import Pipeline
from babelrag.records import Article
from babelrag.store import BuildStore
from tests.helpers.killed_ingest import kill_ingest_when

REAL = Path(__file__).parent / "fixtures" / "realpages"
NTREX = Path(__file__).parent / "fixtures" / "ntrex_samelang" / "articles.jsonl"
PAGE = "tagesschau.de.rheinmetall.html"  # declares <meta ... charset=utf-8>, German text with umlauts
URL = "https://www.tagesschau.de/investigativ/ndr/rheinmetall-datenleck-101.html"
URL2 = "https://www.lopinion.fr/edition/economie/glyphosate-radiographie-d-intoxication-collective-186859"
FRENCH = "lopinion.fr.glyphosate.html"  # URL2's page: UTF-8, declared so in its <meta>


def original(name: str) -> bytes:
    return (REAL / "pages" / name).read_bytes()


def as_cp1252(name: str) -> bytes:
    """The page saved in windows-1252 while its <meta> (and the server) still say UTF-8."""
    return original(name).decode("utf-8").encode("cp1252")


def with_stray_byte(name: str) -> bytes:
    """A UTF-8 page with one windows-1252 'é' (0xe9) pasted into its article text."""
    body = original(name)
    at = body.index("Mitarbeiter".encode())
    return body[:at] + b"caf\xe9 " + body[at:]


def expected_text(name: str, url: str) -> str:
    art = article_from_html(original(name), url)
    assert "\ufffd" not in art.text and not art.text.isascii()
    return art.text


def ingest(tmp_path, inputs, languages=("en", "de", "fr")):
    config = config_from_dict({
        "project": {"build_dir": str(tmp_path / "build"), "languages": list(languages)},
        "corpus": {"inputs": inputs, "min_tokens": 20, "language_confidence": 0.0},
        "executor": {"processes": 1}})
    report = Pipeline(config).run(until="ingest")
    store = BuildStore(config.build_dir)
    return {a.url: a for a in store.read("ingest", Article)}, store.manifest("ingest"), report


def test_decode_html_is_strict_and_says_why_it_refuses():
    body = with_stray_byte(PAGE)
    with pytest.raises(UndecodablePage, match=r"mostly UTF-8 .* the first at offset \d+ \(0xe9\)"):
        decode_html(body)
    text, codec = decode_html(as_cp1252(PAGE), "text/html; charset=utf-8")
    assert (text, codec) == (original(PAGE).decode("utf-8"), "cp1252")
    with pytest.raises(UndecodablePage, match="declared utf-8 \\(HTTP header\\), but byte 0xe9"):
        decode_html(body, "text/html; charset=utf-8")


def test_html_pages_in_a_wrong_charset_are_decoded_and_damaged_ones_refused_by_name(tmp_path):
    html = tmp_path / "html"
    html.mkdir()
    (html / "recoded.html").write_bytes(as_cp1252(PAGE))
    (html / "damaged.html").write_bytes(with_stray_byte(PAGE))
    (tmp_path / "urls.tsv").write_text(f"recoded.html\t{URL}\ndamaged.html\t{URL}#damaged\n", encoding="utf-8")
    stored, manifest, report = ingest(tmp_path, [{"path": str(html), "format": "html",
                                                  "url_map": str(tmp_path / "urls.tsv")}])
    assert set(stored) == {URL}
    assert stored[URL].text == expected_text(PAGE, URL)  # every umlaut as on the page, no U+FFFD
    assert manifest.counts["skipped"] == {"undecodable-page": 1}
    note = next(n for n in manifest.extra["notes"] if n.startswith("undecodable-page"))
    assert f"first {html / 'damaged.html'}" in note and "mostly UTF-8" in note and "0xe9" in note


def test_an_undeclared_gbk_page_is_read_with_the_gb18030_decoder(tmp_path):
    """A Chinese page saved in GBK, its <meta> still saying UTF-8: the detector's tied guesses (GB2312,
    GB18030) are one family, read with its WHATWG decoder (before: refused as ambiguous, or earlier U+FFFD)."""
    name, url = "xinhuanet.com.c_1125597921.html", "http://www.xinhuanet.com/local/2020-02/19/c_1125597921.htm"
    text, codec = decode_html(original(name).decode("utf-8").encode("gbk"))
    assert (text, codec) == (original(name).decode("utf-8"), "gb18030")
    html = tmp_path / "html"
    html.mkdir()
    (html / "page.html").write_bytes(original(name).decode("utf-8").encode("gbk"))
    (tmp_path / "urls.tsv").write_text(f"page.html\t{url}\n", encoding="utf-8")
    stored, manifest, _ = ingest(tmp_path, [{"path": str(html), "format": "html", "url_map": str(tmp_path / "urls.tsv")}],
                                 languages=("en", "zh"))
    assert stored[url].text == expected_text(name, url)


def _warc(records, content_type: str = "text/html; charset=utf-8") -> bytes:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    for url, body in records:
        headers = StatusAndHeaders("200 OK", [("Content-Type", content_type)], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=headers))
    return buf.getvalue()


def test_warc_records_in_a_wrong_charset_are_decoded_and_damaged_ones_refused_naming_record_and_url(tmp_path):
    path = tmp_path / "crawl.warc.gz"
    path.write_bytes(_warc([(URL, as_cp1252(PAGE)), (URL2 + "?v=2", with_stray_byte(PAGE))]))
    stored, manifest, report = ingest(tmp_path, [{"path": str(path), "format": "warc"}])
    assert set(stored) == {URL}
    assert stored[URL].text == expected_text(PAGE, URL)
    assert manifest.counts["skipped"] == {"undecodable-page": 1}
    note = next(n for n in manifest.extra["notes"] if n.startswith("undecodable-page"))
    assert f"first {path}@" in note and "<urn:uuid:" in note and f"{URL2}?v=2" in note
    assert "declared utf-8 (HTTP header), but byte 0xe9" in note


def test_a_damaged_records_url_with_a_latin1_byte_is_reported_as_that_byte_not_u_fffd(tmp_path):
    """The URL of a cut-short record, named in the damage report, keeps its byte (\\xe9) visible."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=False)
    headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
    writer.write_record(writer.create_warc_record(URL2 + "-caf-X", "response", payload=io.BytesIO(original(PAGE)),
                                                  http_headers=headers))
    data = buf.getvalue().replace(b"-caf-X", b"-caf\xe9", 1)  # a crawler that wrote the raw Latin-1 byte
    path = tmp_path / "cut.warc"
    path.write_bytes(data[: len(data) // 2])
    [skip] = list(read_warc(path))
    assert skip.reason == "truncated-record"
    assert "\ufffd" not in skip.detail and f"({URL2}-caf\\xe9)" in skip.detail


def test_read_as_notes_of_files_finished_before_a_kill_survive_the_resume(tmp_path):
    """A windows-1252 JSONL file, then 72 real pages: killed during the pages, resumed; the run still says
    how it read the JSONL file (before, the note went with the killed run)."""
    rows = []
    for line in NTREX.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"].startswith("de-") and len(rows) < 4:
            rows.append({k: row[k] for k in ("id", "title", "maintext", "language", "date_publish", "url")})
    corpus = tmp_path / "legacy.jsonl"
    corpus.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("cp1252"))
    expected = json.loads((REAL / "expected.json").read_text(encoding="utf-8"))
    (tmp_path / "html").mkdir()
    for row in expected:
        (tmp_path / "html" / row["file"]).write_bytes(original(row["file"]))
    (tmp_path / "urls.tsv").write_text("".join(f"{r['file']}\t{r['url']}\n" for r in expected), encoding="utf-8")
    raw = {"project": {"build_dir": str(tmp_path / "build"), "languages": ["en", "de", "fr", "es"]},
           "corpus": {"inputs": [{"path": str(corpus), "format": "jsonl"},
                                 {"path": str(tmp_path / "html"), "format": "html", "url_map": str(tmp_path / "urls.tsv")}],
                      "min_tokens": 20},
           "executor": {"processes": 1}}
    checkpoint = kill_ingest_when(raw, lambda done: done["inputs_done"] >= 1 and done["count_in"] >= len(rows) + 5)
    assert checkpoint["inputs_done"] == 1 and not checkpoint["done"]
    config = config_from_dict(raw)
    report = Pipeline(config).run(until="ingest")
    manifest = BuildStore(config.build_dir).manifest("ingest")
    assert manifest.extra["pass1_resumed_items"] >= len(rows)  # the JSONL file was not read again
    assert manifest.extra["input_encodings"] == {str(corpus): "cp1252 (not UTF-8 from line 1; detected by "
                                                              "charset-normalizer)"}
    assert f"{corpus} read as cp1252" in report.stages[0].note


def labelled_latin1(name: str) -> bytes:
    """The UTF-8 page with its <meta> saying ISO-8859-1, as a CMS template's default leaves it."""
    body = original(name)
    assert body.count(b"charset=utf-8") == 1
    return body.replace(b"charset=utf-8", b"charset=iso-8859-1")


def test_a_utf8_page_declaring_a_legacy_charset_is_read_as_utf8_and_counted(tmp_path):
    """Before: ISO-8859-1 / windows-1252 decode any bytes, so the page was stored as mojibake
    ("Der RÃ¼stungskonzern") with exit 0 and nothing counted."""
    page = decode_page(labelled_latin1(PAGE))
    assert (page.text, page.codec, page.declared, page.mislabelled) == (
        original(PAGE).decode("utf-8").replace("charset=utf-8", "charset=iso-8859-1"), "utf-8", "cp1252", True)
    with pytest.raises(UndecodablePage, match=r"declared cp1252 \(HTTP header\), but the bytes are UTF-8 .*mostly UTF-8"):
        decode_page(with_stray_byte(PAGE), "text/html; charset=windows-1252")  # cannot be repaired
    # the real pages that are in ISO-8859-1 / windows-1252 as they declare stay as they were read
    for entry in json.loads((REAL / "expected.json").read_text(encoding="utf-8")):
        if {"charset-iso-8859-1", "charset-windows-1252"} & set(entry["features"]):
            legacy = decode_page(original(entry["file"]))
            assert not legacy.mislabelled and legacy.codec in ("latin-1", "cp1252"), entry["file"]

    html = tmp_path / "html"
    html.mkdir()
    (html / "meta.html").write_bytes(labelled_latin1(PAGE))
    (tmp_path / "urls.tsv").write_text(f"meta.html\t{URL}\n", encoding="utf-8")
    crawl = tmp_path / "crawl.warc.gz"  # a French page as it is, served with a server's default charset header
    crawl.write_bytes(_warc([(URL2, original(FRENCH))], "text/html; charset=ISO-8859-1"))
    stored, manifest, _ = ingest(tmp_path, [{"path": str(html), "format": "html", "url_map": str(tmp_path / "urls.tsv")},
                                            {"path": str(crawl), "format": "warc"}])
    assert stored[URL].text == expected_text(PAGE, URL) and "Ã" not in stored[URL].text
    assert "Rüstungskonzern" in stored[URL].text  # the umlaut, not "RÃ¼stungskonzern"
    assert stored[URL2].text == expected_text(FRENCH, URL2) and "Ã" not in stored[URL2].text
    assert manifest.counts["kept_with_note"]["mislabelled-charset"] == 2
    assert manifest.extra["mislabelled_charsets"] == {"cp1252": 2}  # ISO-8859-1 is read as windows-1252 (WHATWG)
