"""Exports of a release folder: RAGE/BEIR retrieval folders and XRAG-compatible JSONL.

BEIR/RAGE, one folder per config::

    corpus.jsonl              {"_id", "title", "text", "language", "published"} (each document once)
    queries.jsonl             {"_id", "text", "language", "metadata"}  (query id = instance id; metadata holds
                              the instance's other fields, so ``release convert --format beir`` rebuilds it)
    qrels/<split>.tsv         query-id  corpus-id  score   (supporting documents, score 1)
    irrelevant.json           {query id: [corpus ids]}  RAGE's random irrelevant distractors
    seemingly_relevant.json   {query id: [corpus ids]}  nearest-by-embedding, not relevant
    related.json              {query id: [corpus ids]}  topically related older articles

A machine-translated copy of an article is a different text, so it gets its own corpus id
(``<article_id>#mt-<language>``). XRAG: ``<config>/xrag.<split>.jsonl`` with XRAG's field names.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from babelrag.atomic import atomic_dir
from babelrag.errors import BabelragError
from babelrag.records import Document, Instance
from babelrag.release.build import read_release_rows
from babelrag.release.export_formats import FORMATS, ExportFormat, ReleaseRef, write_files
from babelrag.release.external import converted_from, export_source
from babelrag.release.layout import read_info
from babelrag.release.loaders.beir import DOC_ORDER, MAPPING_FILES, QUERY_METADATA
from babelrag.release.loaders.xrag import N_SUPPORTING
from babelrag.release.protocol import Protocol
from babelrag.release.schema import to_xrag



def corpus_id(doc: Document) -> str:
    return f"{doc.article_id}#mt-{doc.language}" if doc.machine_translated else doc.article_id


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def beir_files(by_split: dict[str, list[Instance]]) -> dict[str, str]:
    """Relative path -> file text for one config (pure: easy to test, written atomically by the caller)."""
    corpus: dict[str, dict[str, Any]] = {}
    queries = []
    qrels: dict[str, list[str]] = defaultdict(list)
    maps: dict[str, dict[str, list[str]]] = {k: {} for k in MAPPING_FILES}
    for split, insts in sorted(by_split.items()):
        for inst in sorted(insts, key=lambda i: i.id):
            queries.append({"_id": inst.id, "text": inst.question, "language": inst.language,
                            "metadata": {**{k: getattr(inst, k) for k in QUERY_METADATA},
                                         DOC_ORDER: [corpus_id(d) for d in inst.documents]}})
            for d in inst.documents:
                cid = corpus_id(d)
                corpus.setdefault(cid, {"_id": cid, "title": d.title, "text": d.text, "language": d.language,
                                        "published": d.published, "article_id": d.article_id,
                                        "machine_translated": d.machine_translated})
                if d.role == "supporting":
                    qrels[split].append(f"{inst.id}\t{cid}\t1")
                elif d.kind in maps:
                    maps[d.kind].setdefault(inst.id, []).append(cid)
    files = {"corpus.jsonl": _jsonl([corpus[k] for k in sorted(corpus)]), "queries.jsonl": _jsonl(queries)}
    for split in sorted(by_split):
        files[f"qrels/{split}.tsv"] = "query-id\tcorpus-id\tscore\n" + "".join(l + "\n" for l in qrels[split])
    for kind, name in MAPPING_FILES.items():
        files[name] = json.dumps({q: sorted(v) for q, v in sorted(maps[kind].items())}, indent=1,
                                 ensure_ascii=False) + "\n"
    return files


def xrag_files(by_split: dict[str, list[Instance]]) -> dict[str, str]:
    return {f"xrag.{split}.jsonl": "".join(json.dumps(to_xrag(i), ensure_ascii=False) + "\n"
                                           for i in sorted(insts, key=lambda i: i.id))
            for split, insts in sorted(by_split.items())}


@FORMATS.register
class BeirExport(ExportFormat):
    name = "beir"
    description = "RAGE/BEIR retrieval folder per config (corpus, queries, qrels, distractor mappings)"

    def cannot_hold(self, instances: Sequence[Instance]) -> Optional[str]:
        if not any(d.role == "supporting" for i in instances for d in i.documents):
            return "no supporting document to put in qrels (a retrieval folder needs relevance judgements)"
        return None

    def config_files(self, config: str, by_split: dict[str, list[Instance]], release: ReleaseRef) -> dict[str, str]:
        return {f"{config}/{rel}": text for rel, text in beir_files(by_split).items()}


@FORMATS.register
class XragExport(ExportFormat):
    name = "xrag"
    description = "XRAG JSONL per config and split (two supporting articles and their distractors per row)"

    def cannot_hold(self, instances: Sequence[Instance]) -> Optional[str]:
        bad = sum(sum(d.role == "supporting" for d in i.documents) != N_SUPPORTING for i in instances)
        if bad:
            return (f"{bad} instance(s) without exactly {N_SUPPORTING} supporting articles (an XRAG row has "
                    f"{N_SUPPORTING})")
        return None

    def config_files(self, config: str, by_split: dict[str, list[Instance]], release: ReleaseRef) -> dict[str, str]:
        return {f"{config}/{rel}": text for rel, text in xrag_files(by_split).items()}


@dataclass
class ExportResult:
    written: list[Path]  # one entry per exported config (or the converted source's files)
    skipped: dict[str, str] = field(default_factory=dict)  # config -> why the format cannot hold it

    def notes(self) -> list[str]:
        return [f"skipped {cfg}: {why}" for cfg, why in sorted(self.skipped.items())]


def export_release(folder: Path, out: Path, fmt: str, seed: int = 0) -> ExportResult:
    """Export every config of a release folder that the format can hold; the output folder appears complete
    or not at all. A config the format cannot hold is skipped and named (never an empty folder).

    A folder made by ``release convert`` from the same format is written back in that format record for
    record (see ``babelrag.release.external``)."""
    if converted_from(Path(folder)) == fmt:
        return ExportResult(export_source(Path(folder), Path(out)))
    if fmt == "garage":
        raise BabelragError(f"{folder} was not converted from GaRAGe (`babelrag release convert FILE --format "
                            "garage`); GaRAGe's passage labels cannot be made from other releases")
    exporter = FORMATS.get(fmt)
    rows, splits, configs = read_release_rows(Path(folder))
    grouped: dict[str, dict[str, list[Instance]]] = defaultdict(lambda: defaultdict(list))
    for row, split, cfg in zip(rows, splits, configs):
        grouped[cfg][split].append(Instance.model_validate(row))
    info = read_info(Path(folder)) or {}
    ref = ReleaseRef(Path(folder).resolve(), str(info.get("name") or Path(folder).name), Protocol.from_info(info), seed)
    result = ExportResult([])
    files: dict[str, str] = {}
    for cfg, by_split in sorted(grouped.items()):
        why = exporter.cannot_hold([i for insts in by_split.values() for i in insts])
        if why:
            result.skipped[cfg] = why
            continue
        files.update(exporter.config_files(cfg, {s: list(v) for s, v in by_split.items()}, ref))
        result.written.append(Path(out) / cfg)
    if not result.written:
        raise BabelragError(f"no config of {folder} can be exported as {fmt}: "
                            + "; ".join(f"{c}: {w}" for c, w in sorted(result.skipped.items())))
    files.update(exporter.shared_files([p.name for p in result.written], ref))
    with atomic_dir(Path(out)) as tmp:
        write_files(tmp, files)
    return result
