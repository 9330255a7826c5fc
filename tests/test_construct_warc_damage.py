"""WARC damage: every record written is kept or counted, and reading resumes after the damage.

Files are written with warcio's own ``WARCWriter`` (gzipped: one gzip member per record, as Common Crawl
writes them; and uncompressed), then damaged the ways real files get damaged: a flipped byte inside a
member, a flipped gzip header, a file cut short, a record shorter than its Content-Length (re-compressed,
so the member itself is sound) and garbage between members/records.
"""
from __future__ import annotations

import gzip
import io
import zlib
from dataclasses import dataclass

import pytest

from babelrag.config import config_from_dict
from babelrag.construct.ingest.readers import RawArticle, Skip, read_warc
from babelrag.pipeline import Pipeline
from tests.test_construct_ingest import EN, EN2, page

RECORD_REASONS = {"non-html-record", "corrupt-warc-member", "truncated-record", "corrupt-warc-record",
                  "no-article-text", "no-title"}
TOPICS = ["Harbour council approves ferry budget", "Wetlands store more carbon than thought",
          "Rail operator orders new night trains", "Library reopens after flood repairs",
          "Court rules on river water rights", "Museum returns bronze statues",
          "Wind farm doubles winter output"]


@dataclass
class Written:
    data: bytes
    offsets: list[int]  # offset of each record (gzip member) written, warcinfo first
    urls: list[str]  # response record URLs, in file order (offsets[1:])


def write_warc(gzipped: bool) -> Written:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=gzipped)
    offsets = [0]
    writer.write_record(writer.create_warcinfo_record("t.warc", {"software": "test"}))
    urls = []
    bodies = [(f"https://news.example/{i}", page(t, (EN if i % 2 else EN2) * 2), "text/html; charset=utf-8")
              for i, t in enumerate(TOPICS)]
    bodies.insert(3, ("https://news.example/logo.png", "PNGDATA", "image/png"))
    for url, body, ctype in bodies:
        offsets.append(buf.tell())
        headers = StatusAndHeaders("200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body.encode()),
                                                      http_headers=headers))
        urls.append(url)
    return Written(buf.getvalue(), offsets, urls)


def read(tmp_path, data: bytes, name: str) -> tuple[list[RawArticle], list[Skip]]:
    path = tmp_path / name
    path.write_bytes(data)
    items = list(read_warc(path))
    kept = [i for i in items if isinstance(i, RawArticle)]
    skips = [i for i in items if isinstance(i, Skip)]
    assert all(s.where.startswith(f"{path}@") for s in skips)
    return kept, skips


def offset_of(skip: Skip) -> int:
    return int(skip.where.rsplit("@", 1)[1])


def assert_adds_up(w: Written, kept, skips, junk_regions: int = 0):
    """Every response record written is kept or counted; junk regions (no record lost) are extra."""
    assert {s.reason for s in skips} <= RECORD_REASONS, skips
    assert len(kept) + len(skips) == len(w.urls) + junk_regions, (len(kept), [(s.reason, s.where) for s in skips])


@pytest.fixture(scope="module")
def gz():
    return write_warc(gzipped=True)


@pytest.fixture(scope="module")
def plain():
    return write_warc(gzipped=False)


def test_intact_files_keep_every_html_record(tmp_path, gz, plain):
    for w, name in ((gz, "ok.warc.gz"), (plain, "ok.warc")):
        kept, skips = read(tmp_path, w.data, name)
        assert [a.url for a in kept] == [u for u in w.urls if not u.endswith(".png")]
        assert [s.reason for s in skips] == ["non-html-record"]


@pytest.mark.parametrize("member", range(1, 9))
def test_flipped_byte_inside_a_member_is_counted_and_reading_resumes(tmp_path, gz, member):
    start, end = gz.offsets[member], (gz.offsets + [len(gz.data)])[member + 1]
    data = bytearray(gz.data)
    data[(start + end) // 2] ^= 0xFF
    kept, skips = read(tmp_path, bytes(data), "flip.warc.gz")
    assert_adds_up(gz, kept, skips)
    [bad] = [s for s in skips if s.reason == "corrupt-warc-member"]
    assert offset_of(bad) == start and f"{end - start} bytes skipped" in bad.detail
    # every later record is still read
    later = [u for u in gz.urls[member:] if not u.endswith(".png")]
    assert set(later) <= {a.url for a in kept} and (later or member == len(gz.urls))
    assert gz.urls[member - 1] not in {a.url for a in kept}


def test_flipped_gzip_header_is_counted(tmp_path, gz):
    data = bytearray(gz.data)
    data[gz.offsets[2] + 1] ^= 0xFF  # the second magic byte: this is no gzip member any more
    kept, skips = read(tmp_path, bytes(data), "hdr.warc.gz")
    assert_adds_up(gz, kept, skips)
    [bad] = [s for s in skips if s.reason == "corrupt-warc-member"]
    assert offset_of(bad) == gz.offsets[2] and "no gzip header" in bad.detail
    assert len(kept) == 6


def test_truncated_file_counts_the_cut_record(tmp_path, gz):
    cut = gz.offsets[-1] + (len(gz.data) - gz.offsets[-1]) * 2 // 3
    kept, skips = read(tmp_path, gz.data[:cut], "cut.warc.gz")
    assert_adds_up(gz, kept, skips)
    [bad] = [s for s in skips if s.reason == "truncated-record"]
    assert offset_of(bad) == gz.offsets[-1] and gz.urls[-1] in bad.detail
    assert gz.urls[-1] not in {a.url for a in kept} and len(kept) == 6


def test_record_shorter_than_its_content_length_is_truncated_not_an_article(tmp_path, gz):
    k = 5
    start, end = gz.offsets[k], gz.offsets[k + 1]
    record = zlib.decompress(gz.data[start:end], 16 + zlib.MAX_WBITS)
    assert record.endswith(b"\r\n\r\n")
    short = gzip.compress(record[:-600] + b"\r\n\r\n")  # a sound member holding a cut record
    kept, skips = read(tmp_path, gz.data[:start] + short + gz.data[end:], "short.warc.gz")
    assert_adds_up(gz, kept, skips)
    [bad] = [s for s in skips if s.reason == "truncated-record"]
    assert offset_of(bad) == start and "Content-Length" in bad.detail
    assert gz.urls[k - 1] not in {a.url for a in kept} and len(kept) == 6


def test_garbage_between_members_loses_nothing(tmp_path, gz):
    junk = b"\x1f\x8b\x08garbage-that-is-not-a-warc-record" + bytes(range(256)) * 3
    data = gz.data[:gz.offsets[4]] + junk + gz.data[gz.offsets[4]:]
    kept, skips = read(tmp_path, data, "junk.warc.gz")
    assert_adds_up(gz, kept, skips, junk_regions=1)
    [bad] = [s for s in skips if s.reason == "corrupt-warc-member"]
    assert offset_of(bad) == gz.offsets[4] and f"{len(junk)} bytes skipped" in bad.detail
    assert len(kept) == 7


def test_two_damaged_members_are_two_counts(tmp_path, gz):
    data = bytearray(gz.data)
    for m in (2, 3):
        data[(gz.offsets[m] + gz.offsets[m + 1]) // 2] ^= 0x55
    kept, skips = read(tmp_path, bytes(data), "two.warc.gz")
    assert_adds_up(gz, kept, skips)
    assert sorted(offset_of(s) for s in skips if s.reason == "corrupt-warc-member") == [gz.offsets[2], gz.offsets[3]]


def test_uncompressed_record_cut_in_the_middle_of_the_file(tmp_path, plain):
    k = 2
    start, end = plain.offsets[k], plain.offsets[k + 1]
    data = plain.data[:end - 700] + plain.data[end - 4:]  # 696 bytes of its block gone; next record follows
    kept, skips = read(tmp_path, data, "mid.warc")
    assert_adds_up(plain, kept, skips)
    [bad] = [s for s in skips if s.reason == "truncated-record"]
    assert offset_of(bad) == start
    assert [a.url for a in kept] == [u for i, u in enumerate(plain.urls) if i != k - 1 and not u.endswith(".png")]


def test_uncompressed_garbage_and_cut_end(tmp_path, plain):
    junk = b"\r\nthis line is not a WARC record\r\n\r\n"
    data = plain.data[:plain.offsets[3]] + junk + plain.data[plain.offsets[3]:-500]
    kept, skips = read(tmp_path, data, "junk.warc")
    assert_adds_up(plain, kept, skips, junk_regions=1)
    assert sorted(s.reason for s in skips) == ["corrupt-warc-record", "non-html-record", "truncated-record"]
    assert len(kept) == 6 and plain.urls[-1] not in {a.url for a in kept}


def test_ingest_stage_reports_the_damage_and_keeps_the_rest(tmp_path, gz):
    data = bytearray(gz.data)
    data[(gz.offsets[1] + gz.offsets[2]) // 2] ^= 0xFF  # the first article's member
    path = tmp_path / "d.warc.gz"
    path.write_bytes(bytes(data))
    config = config_from_dict({"project": {"build_dir": str(tmp_path / "b"), "languages": ["en", "de"]},
                               "corpus": {"inputs": [{"path": str(path), "format": "warc"}], "min_tokens": 20}})
    report = Pipeline(config).run(until="ingest")
    stage = report.stages[0]
    assert stage.skipped["corrupt-warc-member"] == 1 and stage.skipped["non-html-record"] == 1
    assert stage.count_in == 8


def skipped_range(skip: Skip) -> tuple[int, int]:
    start = offset_of(skip)
    n = int(skip.detail.split(" bytes skipped")[0]) if " bytes skipped" in skip.detail else 1
    return start, start + max(n, 1)


@pytest.mark.parametrize("gzipped", [True, False])
def test_any_flipped_byte_never_loses_a_record_silently(tmp_path, gz, plain, gzipped):
    """24 seeded random flips anywhere in the file: each response record written is kept, or its start
    lies inside a counted skip's byte range."""
    import random

    w = gz if gzipped else plain
    ends = w.offsets[1:] + [len(w.data)]
    rng = random.Random(5)
    for trial in range(24):
        data = bytearray(w.data)
        pos = rng.randrange(w.offsets[1], len(data))
        data[pos] ^= 1 << rng.randrange(8)
        kept, skips = read(tmp_path, bytes(data), f"r{trial}.warc" + (".gz" if gzipped else ""))
        kept_urls = {a.url for a in kept}
        ranges = [skipped_range(s) for s in skips]
        for url, start, end in zip(w.urls, w.offsets[1:], ends):
            # (a flip inside a WARC header line may change the URL the kept article carries)
            kept_it = any(k.startswith(url) for k in kept_urls)
            accounted = kept_it or any(lo <= start < hi or start <= lo < end for lo, hi in ranges)
            assert accounted, (trial, pos, url, [(s.reason, s.where, s.detail[:60]) for s in skips])


def test_damaged_record_type_is_counted_not_ignored(tmp_path, plain):
    """warcinfo/request/metadata records are skipped uncounted; a WARC-Type no standard names is damage."""
    data = plain.data.replace(b"WARC-Type: response", b"WARC-Type: respoxse", 1)
    kept, skips = read(tmp_path, data, "type.warc")
    assert_adds_up(plain, kept, skips)
    assert [s.reason for s in skips if "respoxse" in s.detail] == ["corrupt-warc-record"]


def test_damaged_start_of_a_gzipped_file(tmp_path, gz):
    """The first bytes are not a gzip header: still read as gzip (members follow), the start counted."""
    data = b"\x00" * 40 + gz.data[gz.offsets[1]:]  # warcinfo member replaced by 40 zero bytes
    kept, skips = read(tmp_path, data, "start.warc.gz")
    assert_adds_up(gz, kept, skips, junk_regions=1)
    [bad] = [s for s in skips if s.reason == "corrupt-warc-member"]
    assert offset_of(bad) == 0 and "40 bytes skipped" in bad.detail and len(kept) == 7
