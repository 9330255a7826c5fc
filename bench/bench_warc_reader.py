"""Cost of damage-tolerant WARC framing: ``warc_records.iter_warc`` + warcio per record vs warcio alone.

Writes a WARC of N HTML responses with warcio (one gzip member per record, as Common Crawl does), then
reads every payload both ways (no article extraction: that costs the same either way) and prints
records/s and the ratio measured in this run. Also reads a copy with one flipped byte: warcio alone
stops there, the framing reader resumes.

    python bench/bench_warc_reader.py [--n 3000] [--kb 30]
"""
from __future__ import annotations

import argparse
import io
import random
import tempfile
import time
from pathlib import Path


def write(path: Path, n: int, kb: int) -> list[int]:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    offsets = []
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for i in range(n):
            body = "<html><body>" + " ".join(rng.choice(words) for _ in range(kb * 170)) + "</body></html>"
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            offsets.append(fh.tell())
            writer.write_record(writer.create_warc_record(f"https://news.example/{i}", "response",
                                                          payload=io.BytesIO(body.encode()), http_headers=headers))
    return offsets


def read_warcio(path: Path) -> int:
    from warcio.archiveiterator import ArchiveIterator

    n = 0
    with open(path, "rb") as fh:
        try:
            for record in ArchiveIterator(fh):
                if record.rec_type == "response":
                    record.content_stream().read()
                    n += 1
        except Exception:  # what the old reader did: the rest of the file is lost
            pass
    return n


def read_framed(path: Path) -> tuple[int, int]:
    from warcio.archiveiterator import ArchiveIterator

    from babelrag.construct.ingest.warc_records import WarcRecord, iter_warc

    n = damaged = 0
    with open(path, "rb") as fh:
        for item in iter_warc(fh):
            if not isinstance(item, WarcRecord):
                damaged += 1
                continue
            record = next(iter(ArchiveIterator(io.BytesIO(item.raw))))
            if record.rec_type == "response":
                record.content_stream().read()
                n += 1
    return n, damaged


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--kb", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "b.warc.gz"
        offsets = write(path, args.n, args.kb)
        size = path.stat().st_size
        n_a, t_a = timed(read_warcio, path)
        (n_b, _), t_b = timed(read_framed, path)
        print(f"{args.n} records, ~{args.kb} KB HTML each, {size / 1e6:.1f} MB gzipped")
        print(f"  warcio ArchiveIterator alone : {n_a} records in {t_a:.2f}s ({n_a / t_a:,.0f}/s)")
        print(f"  iter_warc framing + warcio   : {n_b} records in {t_b:.2f}s ({n_b / t_b:,.0f}/s)")
        print(f"  framing cost: {t_b / t_a:.2f}x warcio alone")
        data = bytearray(path.read_bytes())
        k = len(offsets) // 10
        data[(offsets[k] + offsets[k + 1]) // 2] ^= 0xFF
        bad = Path(tmp) / "bad.warc.gz"
        bad.write_bytes(bytes(data))
        n_a = read_warcio(bad)
        n_b, damaged = read_framed(bad)
        print(f"  one flipped byte in record {k + 1}: warcio alone reads {n_a} records; "
              f"framing reads {n_b} + {damaged} counted corrupt-warc-member")


if __name__ == "__main__":
    main()
