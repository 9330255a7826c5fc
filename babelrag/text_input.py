"""Decoding the text files a user hands over: every byte decoded, or the file refused.

JSONL corpora, ``--answers`` files, event lists, gazetteers, reviewed records, URL maps and qrels all come
through here, so a file is read the same way whichever command meets it:

- UTF-8, with or without a byte-order mark, is read as UTF-8 (the mark is not part of the first line);
- UTF-16 / UTF-32 with a byte-order mark are read as such and named in ``Encoding.describe()``;
- UTF-16 without a mark, compressed or binary files are refused, naming what they look like;
- anything else is decoded with the encoding charset-normalizer detects (a maintained detector; among
  equally good guesses windows-1252, the legacy encoding of Western news text and HTML's default), and
  refused when the guesses disagree or the detected encoding does not fit a later line.

Decoding is always strict (never ``errors="replace"``): a U+FFFD in a build was in the source. A refusal is
an ``InputError`` naming file, line, byte and the fix (re-save as UTF-8, e.g. with ``iconv``).

Why streaming and lazy detection: corpora can be many gigabytes. Lines are read as bytes; until the first
line with a non-ASCII byte every ASCII-compatible encoding gives the same text, so the choice is made there,
from the bytes that follow (``SAMPLE_BYTES``).
"""
from __future__ import annotations

import codecs
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Optional

from babelrag.errors import BabelragError, InputError

SAMPLE_BYTES = 256 * 1024  # what the detector sees from the first non-ASCII line on
TIE_CHAOS = 0.01  # detector guesses within this "chaos" of the best count as equally good
_PREFERRED = "cp1252"
# WHATWG: these labels mean windows-1252 (ISO-8859-1 files use 0x80-0x9f for curly quotes, dashes, euro)
_LATIN1_LABELS = {"iso-8859-1", "iso8859-1", "iso8859_1", "latin1", "latin-1", "latin_1", "us-ascii", "ascii",
                  "l1", "cp819"}
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32", "UTF-32 (little-endian byte-order mark)"),
         (codecs.BOM_UTF32_BE, "utf-32", "UTF-32 (big-endian byte-order mark)"),
         (codecs.BOM_UTF8, "utf-8", "UTF-8 with a byte-order mark"),
         (codecs.BOM_UTF16_LE, "utf-16", "UTF-16 (little-endian byte-order mark)"),
         (codecs.BOM_UTF16_BE, "utf-16", "UTF-16 (big-endian byte-order mark)"))
_MAGIC = ((b"\x1f\x8b", "gzip-compressed", "decompress it first (gunzip)"),
          (b"BZh", "bzip2-compressed", "decompress it first (bunzip2)"),
          (b"\xfd7zXZ\x00", "xz-compressed", "decompress it first (unxz)"),
          (b"\x28\xb5\x2f\xfd", "zstd-compressed", "decompress it first (unzstd)"),
          (b"PK\x03\x04", "a zip archive", "unzip it first"),
          (b"PAR1", "a parquet file", "pass it where parquet is accepted, or export it as JSONL"))
_ASCII_PROBE = bytes(range(0x20, 0x7F)) + b"\t\r\n"
# WHATWG: one decoder serves each of these families (GB2312 and GBK text is read with the GB18030 decoder,
# Big5 with HKSCS, EUC-KR with windows-949, Shift_JIS with windows-31J): tied guesses within a family that
# decode a few marks differently are the family's decoder, not an ambiguity
_FAMILY_DECODER = {"gb2312": "gb18030", "gbk": "gb18030", "gb18030": "gb18030", "big5": "big5hkscs",
                   "big5hkscs": "big5hkscs", "euc_kr": "cp949", "cp949": "cp949", "shift_jis": "cp932",
                   "cp932": "cp932"}


@dataclass(frozen=True)
class Encoding:
    """How a file was decoded: the Python codec and why it was chosen."""

    codec: str
    how: str  # "utf-8" | "bom" | "detected"
    label: str = ""  # what to tell the user: "UTF-16 (little-endian byte-order mark)", "cp1252 (detected ...)"

    @property
    def is_plain_utf8(self) -> bool:
        return self.codec == "utf-8"

    def describe(self) -> str:
        return self.label or self.codec


def codec_name(label: Optional[str]) -> Optional[str]:
    """The Python codec for an encoding label (HTTP/meta charset, detector output), or None if unknown.
    Latin-1 labels map to windows-1252 as browsers do."""
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in _LATIN1_LABELS:
        return "cp1252"
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _ascii_compatible(codec: str) -> bool:
    try:
        return _ASCII_PROBE.decode(codec) == _ASCII_PROBE.decode("ascii")
    except (UnicodeDecodeError, LookupError):
        return False


def _fix(path: Path, source: str = "ENCODING") -> str:
    return f"re-save the file as UTF-8, e.g. `iconv -f {source} -t UTF-8 {path} > {path.stem}.utf8{path.suffix}`"


def _utf16_without_bom(head: bytes) -> Optional[str]:
    """'UTF-16LE' / 'UTF-16BE' when the bytes look like mostly-ASCII text in UTF-16 without a mark."""
    pairs = len(head) // 2
    if pairs < 2:
        return None
    even_nul = sum(1 for i in range(0, 2 * pairs, 2) if head[i] == 0)
    odd_nul = sum(1 for i in range(1, 2 * pairs, 2) if head[i] == 0)
    if odd_nul >= 0.6 * pairs and even_nul <= 0.1 * pairs:
        return "UTF-16LE"
    if even_nul >= 0.6 * pairs and odd_nul <= 0.1 * pairs:
        return "UTF-16BE"
    return None


def _refuse_binary(path: Path, head: bytes, error: type[BabelragError]) -> None:
    for magic, what, fix in _MAGIC:
        if head.startswith(magic):
            raise error(f"{path}: {what}, not a text file; {fix}")
    utf16 = _utf16_without_bom(head)
    if utf16:
        raise error(f"{path}: looks like {utf16} (UTF-16 without a byte-order mark), which is not read "
                    f"without one; {_fix(path, utf16)}")
    nul = head.find(b"\x00")
    if nul >= 0:
        lineno = head.count(b"\n", 0, nul) + 1
        raise error(f"{path}:{lineno}: NUL byte at file offset {nul}: a binary file, not text; pass the text "
                    f"(UTF-8) file")


def detect(sample: bytes) -> tuple[Optional[str], list[str]]:
    """(codec, []) for the detector's choice, or (None, candidates) when its equally good guesses decode
    the sample differently (or it has none). windows-1252 wins a tie; guesses within one CJK family
    (GB2312/GBK/GB18030, …) are that family's WHATWG decoder."""
    from charset_normalizer import from_bytes

    matches = list(from_bytes(sample))
    if not matches:
        return None, []
    best = min(matches, key=lambda m: m.chaos)
    ties = [m for m in matches if m.chaos <= best.chaos + TIE_CHAOS]
    for m in ties:
        if _PREFERRED in (m.encoding, *m.could_be_from_charset):
            return _PREFERRED, []
    texts = {str(m) for m in ties}
    names = [codec_name(m.encoding) or m.encoding for m in ties]
    if len(texts) > 1:
        family = {_FAMILY_DECODER.get(n) for n in names}
        if len(family) == 1 and None not in family and _decodes(sample, decoder := family.pop()):
            return decoder, []
        return None, names
    return codec_name(best.encoding), []


def _decodes(sample: bytes, codec: str) -> bool:
    """Whether ``codec`` decodes ``sample`` (which may end inside a multi-byte character)."""
    try:
        codecs.getincrementaldecoder(codec)().decode(sample, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _bad_byte(path: Path, lineno: int, offset: int, raw: bytes, exc: UnicodeDecodeError, what: str) -> str:
    return (f"{path}:{lineno}: byte 0x{raw[exc.start]:02x} at column {exc.start + 1} (file offset "
            f"{offset + exc.start}) is not {what}")


class TextLines:
    """``(line number, text)`` for each line of a text file, decoded as the module docstring says.

    ``encoding`` is set once the choice is made (``None`` while every line read so far is ASCII);
    ``on_encoding`` is called once with it when the file is not plain UTF-8 (a BOM'd UTF-16 file, a
    detected legacy encoding), so a caller can say how it read the file. Lines keep no line ending.
    """

    def __init__(self, path: str | Path, error: type[BabelragError] = InputError,
                 on_encoding: Optional[Callable[[Path, Encoding], None]] = None) -> None:
        self.path = Path(path)
        self.error = error
        self.on_encoding = on_encoding
        self.encoding: Optional[Encoding] = None

    def _chose(self, enc: Encoding) -> None:
        self.encoding = enc
        if self.on_encoding is not None and not enc.is_plain_utf8:
            self.on_encoding(self.path, enc)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        with self.path.open("rb") as fh:
            head = fh.read(4096)
            for bom, codec, label in _BOMS:
                if head.startswith(bom):
                    fh.seek(len(bom))
                    if codec == "utf-8":
                        self._chose(Encoding("utf-8", "bom", label))
                        yield from self._bytes_lines(fh, len(bom), "utf-8")
                    else:
                        self._chose(Encoding(codec, "bom", label))
                        fh.seek(0)
                        yield from self._wide_lines(fh, codec, label)
                    return
            _refuse_binary(self.path, head, self.error)
            fh.seek(0)
            yield from self._bytes_lines(fh, 0, None)

    def _wide_lines(self, fh: BinaryIO, codec: str, label: str) -> Iterator[tuple[int, str]]:
        text = io.TextIOWrapper(fh, encoding=codec, errors="strict", newline=None)
        lineno = 0
        try:
            for lineno, line in enumerate(text, 1):
                yield lineno, line.rstrip("\n")
        except UnicodeDecodeError as exc:
            raise self.error(f"{self.path}:{lineno + 1}: not valid {label} ({exc.reason}); "
                             f"{_fix(self.path, codec.upper())}") from None

    def _bytes_lines(self, fh: BinaryIO, offset: int, codec: Optional[str]) -> Iterator[tuple[int, str]]:
        """Lines of an ASCII-compatible file; ``codec`` None: choose at the first non-ASCII line."""
        first_utf8 = 0  # the first line that proved the file UTF-8 (for the mixed-encodings message)
        lineno = 0
        while raw := fh.readline():
            lineno += 1
            if codec is None and raw.isascii():
                yield lineno, raw.decode("ascii").rstrip("\r\n")
                offset += len(raw)
                continue
            if codec is None:
                codec = self._choose(fh, raw, lineno, offset)
                first_utf8 = lineno
            try:
                text = raw.decode(codec)
            except UnicodeDecodeError as exc:
                if codec == "utf-8" and self.encoding is not None and self.encoding.how == "utf-8":
                    what = (f"UTF-8, although line {first_utf8} is: the file mixes encodings; convert the lines "
                            f"written in the other encoding to UTF-8")
                elif codec == "utf-8":
                    what = f"UTF-8 (the byte-order mark says UTF-8); {_fix(self.path)}"
                else:
                    what = f"{self.encoding.describe() if self.encoding else codec}; {_fix(self.path)}"
                raise self.error(_bad_byte(self.path, lineno, offset, raw, exc, what)) from None
            yield lineno, text.rstrip("\r\n")
            offset += len(raw)

    def _choose(self, fh: BinaryIO, raw: bytes, lineno: int, offset: int) -> str:
        """The codec of a file whose first non-ASCII line is ``raw`` (the file position is after it)."""
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            pos = fh.tell()
            sample = raw + fh.read(SAMPLE_BYTES)
            fh.seek(pos)
            codec, candidates = detect(sample[:SAMPLE_BYTES])
            where = _bad_byte(self.path, lineno, offset, raw, exc, "UTF-8")
            if codec is None:
                guess = (f"its encoding could be any of {', '.join(dict.fromkeys(candidates))}" if candidates
                         else "its encoding could not be detected")
                raise self.error(f"{where} and {guess}; {_fix(self.path)}") from None
            if not _ascii_compatible(codec):
                raise self.error(f"{where}; it looks like {codec}, which is not read here; "
                                 f"{_fix(self.path, codec)}") from None
            self._chose(Encoding(codec, "detected", f"{codec} (not UTF-8 from line {lineno}; detected by "
                                                    f"charset-normalizer)"))
            return codec
        self._chose(Encoding("utf-8", "utf-8", "UTF-8"))
        return "utf-8"


def read_text(path: str | Path, error: type[BabelragError] = InputError,
              on_encoding: Optional[Callable[[Path, Encoding], None]] = None) -> str:
    """The whole (small) file as one string, decoded like ``TextLines`` (lines joined with ``\\n``)."""
    return "".join(line + "\n" for _, line in TextLines(path, error, on_encoding))
