"""Locate WARC records in a (gzipped) WARC file and survive damage: resume after it, count it.

warcio's ``ArchiveIterator`` stops at the first broken gzip member, so one flipped byte used to drop
every later record of the file. This module does the framing itself and hands each intact record's
bytes to warcio for HTTP parsing:

* gzipped files (Common Crawl writes one gzip member per record): each member is inflated on its own
  and checked (deflate stream + CRC). A member that fails is one ``corrupt-warc-member`` naming the
  file offset and the bytes skipped; reading resumes at the next intact member.
* uncompressed files: records are read by their ``Content-Length``; bytes that are no record are
  one ``corrupt-warc-record`` region; reading resumes at the next ``WARC/1.x`` header line.
* a record whose block is shorter than its ``Content-Length`` (file cut short, or the next record
  starts early) is ``truncated-record``, never an article.

Every record written to a file therefore ends up as a ``WarcRecord`` or inside a counted ``WarcDamage``
whose ``offset``/``length`` cover it.
"""
from __future__ import annotations

import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Union

GZIP_MAGIC = b"\x1f\x8b\x08"
CHUNK = 1 << 16
MAX_MEMBER_BYTES = 256 << 20  # inflated size of one gzip member; CC members hold one record (< 2 MB)
MAX_HEADER_BYTES = 64 << 10
_RECORD_START = re.compile(rb"(?:^|\n)(WARC/1\.[01]\r?\n)")


@dataclass
class WarcRecord:
    offset: int  # file offset of the record (of its gzip member in a gzipped file)
    raw: bytes  # the whole record (WARC headers + block), uncompressed: warcio parses it


@dataclass
class WarcDamage:
    reason: str  # corrupt-warc-member | corrupt-warc-record | truncated-record | oversized-warc-member
    offset: int
    length: int  # bytes skipped from offset (0: unknown / to the end of the file)
    detail: str = ""
    url: str = ""  # WARC-Target-URI when the damaged record's header could still be read


WarcItem = Union[WarcRecord, WarcDamage]


def is_gzipped(fh: BinaryIO) -> bool:
    """Gzip magic at the start, or (damaged start) no WARC header there but a gzip member soon after."""
    fh.seek(0)
    head = fh.read(MAX_HEADER_BYTES)
    fh.seek(0)
    if head.startswith(GZIP_MAGIC):
        return True
    if head.lstrip(b"\r\n").startswith(b"WARC/"):
        return False
    start = _resync_gzip(fh, 0)
    fh.seek(0)
    return start is not None and start < MAX_HEADER_BYTES


def iter_warc(fh: BinaryIO) -> Iterator[WarcItem]:
    """Records and counted damage of a seekable WARC stream, gzipped (per member) or not."""
    if is_gzipped(fh):
        yield from _iter_gzip(fh)
    else:
        yield from iter_plain(fh, base=0)


# -- gzip members --------------------------------------------------------------------------------

@dataclass
class _Member:
    data: bytes
    end: int | None  # offset just after the member; None when it failed or the file ended inside it
    error: str = ""
    oversized: bool = False


def _inflate_member(fh: BinaryIO, offset: int) -> _Member:
    """Inflate the gzip member starting at ``offset`` (zlib checks the deflate stream and the CRC)."""
    fh.seek(offset)
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    pos = offset
    oversized = False
    while not d.eof:
        chunk = fh.read(CHUNK)
        if not chunk:
            return _Member(bytes(out), None, "the file ends inside this gzip member", oversized)
        pos += len(chunk)
        buf = chunk
        try:
            while buf and not d.eof:
                data = d.decompress(buf, CHUNK * 16)
                if len(out) + len(data) > MAX_MEMBER_BYTES:
                    oversized = True  # keep checking the stream, stop keeping the bytes
                else:
                    out += data
                buf = d.unconsumed_tail
        except zlib.error as exc:
            return _Member(_sound_prefix(fh, offset), None, f"zlib: {exc}", oversized)
    return _Member(bytes(out), pos - len(d.unused_data), "", oversized)


def _sound_prefix(fh: BinaryIO, offset: int, limit: int = 1 << 16) -> bytes:
    """What a broken member inflates to before the damage (zlib drops the output of the failing call,
    so feed it small steps): its WARC header tells whether it was a record and which URL it held."""
    fh.seek(offset)
    data = fh.read(limit)
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    for i in range(0, len(data), 64):
        try:
            out += d.decompress(data[i:i + 64])
        except zlib.error:
            break
        if d.eof:
            break
    return bytes(out)


def _next_magic(fh: BinaryIO, start: int) -> int | None:
    """Offset of the next gzip header at or after ``start``, or None."""
    fh.seek(start)
    carry = b""
    base = start
    while True:
        chunk = fh.read(CHUNK)
        if not chunk:
            return None
        buf = carry + chunk
        i = buf.find(GZIP_MAGIC)
        if i >= 0:
            return base + i
        carry = buf[-(len(GZIP_MAGIC) - 1):]
        base += len(buf) - len(carry)


def _file_size(fh: BinaryIO) -> int:
    pos = fh.tell()
    size = fh.seek(0, io.SEEK_END)
    fh.seek(pos)
    return size


def _iter_gzip(fh: BinaryIO) -> Iterator[WarcItem]:
    size = _file_size(fh)
    offset = 0
    while offset < size:
        member = _inflate_member(fh, offset) if _has_magic(fh, offset) else None
        if member is not None and member.end is not None:
            if member.oversized:
                yield WarcDamage("oversized-warc-member", offset, member.end - offset,
                                 f"inflates to more than {MAX_MEMBER_BYTES >> 20} MB; recompress with one gzip "
                                 f"member per record (`warcio recompress in.warc.gz out.warc.gz`)")
            else:
                yield from iter_plain(io.BytesIO(member.data), base=offset, member_offset=offset)
            offset = member.end
            continue
        if member is not None and member.end is None and not member.error.startswith("zlib"):
            # the file ends inside this member: what was inflated is sound, its last record is cut short
            items = list(iter_plain(io.BytesIO(member.data), base=offset, member_offset=offset, cut_short=True))
            yield from items or [WarcDamage("truncated-record", offset, size - offset, member.error)]
            return
        # a damaged member (or bytes that are no member): skip to the next member that inflates
        resume = _resync_gzip(fh, offset + 1)
        end = resume if resume is not None else size
        why = member.error if member is not None else "no gzip header here"
        url = _target_uri(member.data) if member is not None else ""
        yield WarcDamage("corrupt-warc-member", offset, end - offset, why, url)
        if resume is None:
            return
        offset = resume


def _has_magic(fh: BinaryIO, offset: int) -> bool:
    fh.seek(offset)
    return fh.read(3) == GZIP_MAGIC


def _resync_gzip(fh: BinaryIO, start: int) -> int | None:
    """The next offset from ``start`` where a gzip member begins (see below)."""
    pos = start
    while True:
        cand = _next_magic(fh, pos)
        if cand is None:
            return None
        member = _inflate_member(fh, cand)
        # a member that inflates, or one that starts a WARC record before it breaks (a second damaged
        # record: counted on its own); magic bytes inside compressed data inflate to neither
        if member.end is not None or member.data.startswith(b"WARC/"):
            return cand
        pos = cand + 1


# -- uncompressed records ------------------------------------------------------------------------

def _target_uri(head: bytes) -> str:
    m = re.search(rb"\r?\nWARC-Target-URI:[ \t]*<?([^\r\n>]*)", head[:MAX_HEADER_BYTES], re.IGNORECASE)
    # for the damage report only; a byte that is not UTF-8 is shown as \xNN, never as U+FFFD
    return m.group(1).decode("utf-8", "backslashreplace").strip() if m else ""


def _content_length(head: bytes) -> int | None:
    m = re.search(rb"\r?\nContent-Length:[ \t]*(\d+)[ \t]*\r?\n", head, re.IGNORECASE)
    return int(m.group(1)) if m else None


def _find_record_start(data: bytes, start: int = 0) -> int | None:
    m = _RECORD_START.search(data, start)
    return m.start(1) if m else None


def iter_plain(fh: BinaryIO, base: int, member_offset: int | None = None,
               cut_short: bool = False) -> Iterator[WarcItem]:
    """Records of an uncompressed WARC stream (a whole file, or one inflated gzip member).

    ``base`` maps stream positions to file offsets; inside a gzip member every item reports the member's
    offset (positions inside the inflated bytes mean nothing in the file)."""

    def where(pos: int) -> int:
        return member_offset if member_offset is not None else base + pos

    pos = 0
    while True:
        fh.seek(pos)
        lead = fh.read(MAX_HEADER_BYTES)
        stripped = lead.lstrip(b"\r\n")
        if not stripped:
            return
        pos += len(lead) - len(stripped)
        header_end = stripped.find(b"\r\n\r\n")
        if not stripped.startswith(b"WARC/"):
            yield from _junk(fh, pos, stripped, where)
            nxt = _scan_plain(fh, pos + 1)
            if nxt is None:
                return
            pos = nxt
            continue
        if header_end < 0:
            reason = "truncated-record" if len(stripped) < MAX_HEADER_BYTES else "corrupt-warc-record"
            yield WarcDamage(reason, where(pos), len(stripped), "the WARC header block never ends",
                             _target_uri(stripped))
            if reason == "truncated-record":
                return
            nxt = _scan_plain(fh, pos + 1)
            if nxt is None:
                return
            pos = nxt
            continue
        head = stripped[:header_end + 4]
        clen = _content_length(head)
        url = _target_uri(head)
        if clen is None:
            yield WarcDamage("corrupt-warc-record", where(pos), len(head), "no Content-Length header", url)
            nxt = _scan_plain(fh, pos + 1)
            if nxt is None:
                return
            pos = nxt
            continue
        fh.seek(pos + len(head))
        block = fh.read(clen)
        trailer = fh.read(4)
        if len(block) < clen:
            yield WarcDamage("truncated-record", where(pos), len(head) + len(block),
                             f"block has {len(block)} of its Content-Length {clen} bytes"
                             + (" (the file ends)" if not cut_short or member_offset is None else
                                " (the file ends inside this gzip member)"), url)
            early = _find_record_start(block)
            if early is None:
                return
            pos = pos + len(head) + early
            continue
        if trailer[:2] != b"\r\n" and trailer:
            # the block ran into bytes that are not its end: a record cut short followed by the next one
            early = _find_record_start(block)
            if early is not None:
                yield WarcDamage("truncated-record", where(pos), len(head) + early,
                                 f"the next record starts {early} bytes into a block of Content-Length {clen}",
                                 url)
                pos = pos + len(head) + early
                continue
        yield WarcRecord(where(pos), head + block)
        pos = pos + len(head) + clen


def _junk(fh: BinaryIO, pos: int, lead: bytes, where) -> Iterator[WarcDamage]:
    nxt = _scan_plain(fh, pos + 1)
    length = (nxt - pos) if nxt is not None else 0
    yield WarcDamage("corrupt-warc-record", where(pos), length,
                     f"bytes that are not a WARC record: {lead[:24]!r}", _target_uri(lead))


def _scan_plain(fh: BinaryIO, start: int) -> int | None:
    """Position of the next ``WARC/1.x`` header line at or after ``start``."""
    fh.seek(max(0, start - 1))
    base = max(0, start - 1)
    carry = b""
    while True:
        chunk = fh.read(CHUNK)
        if not chunk:
            return None
        buf = carry + chunk
        i = _find_record_start(buf)
        while i is not None and (base + i < start or (i == 0 and base > 0)):  # carry: not a line start
            i = _find_record_start(buf, i + 1)
        if i is not None:
            return base + i
        keep = min(len(buf), 16)
        carry = buf[-keep:]
        base += len(buf) - keep
