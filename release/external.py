"""``babelrag release convert``: external benchmark files -> a release folder ``evaluate run`` reads, and back.

Layout written (the same ``data/`` layout and ``release.json`` as ``release build``)::

    release.json                   name, version "external", source format and file, data hashes, counts,
                                   and the records that could not become instances (with the reason)
    data/<config>/<split>.parquet  the records as babelrag Instances (what ``evaluate run`` reads)
    source/                        every record in its own format, written from the typed records
                                   (GaRAGe: garage.jsonl; XRAG: xrag.<split>.jsonl; BEIR: the BEIR folder)

``release export FOLDER --format <the same format>`` writes ``source/`` back after loading it with the
same strict loader, so convert + export keeps every field of every record (JSON-equal to the input).
Every GaRAGe record becomes an instance (its ``q_type`` carries GaRAGe's own complexity where it is none of our
four question types). Records that are no babelrag instance (a BEIR query without babelrag metadata) are
counted with their reason, kept in ``source/`` and exported back — never dropped silently.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from babelrag.atomic import atomic_dir
from babelrag.errors import InputError
from babelrag.records import Instance
from babelrag.release import external_card, layout, versioning
from babelrag.release.build import write_parquet
from babelrag.release.export_formats import write_files
from babelrag.release.layout import read_info
from babelrag.release.loaders import is_no_date
from babelrag.release.loaders.beir import DOC_ORDER, MAPPING_FILES, QUERY_METADATA, load_beir
from babelrag.release.loaders.garage import load_garage
from babelrag.release.loaders.xrag import language_detector, load_xrag_records
from babelrag.release.naming import config_name
from babelrag.release.protocol import PUBLISHED
from babelrag.release.schema import SCHEMA_VERSION

FORMATS = ("garage", "xrag", "beir")
SOURCE_DIR = "source"
EXTERNAL_VERSION = "external"


@dataclass
class Converted:
    """What a loader made of an external file: instances per split, the source files, skip reasons."""

    instances: dict[str, list[Instance]]  # split -> instances
    source_files: dict[str, str]  # relative path under source/ -> text
    records: int
    skipped: Counter = field(default_factory=Counter)  # records that are no instance: reason -> count
    warnings: Counter = field(default_factory=Counter)  # converted, with a caveat: what -> count


@dataclass
class ConvertResult:
    folder: Path
    fmt: str
    records: int
    configs: dict[str, dict[str, int]]
    skipped: dict[str, int]
    warnings: dict[str, int]

    @property
    def instances(self) -> int:
        return sum(sum(s.values()) for s in self.configs.values())


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _split_of(path: Path, split: Optional[str]) -> str:
    if split:
        return split
    parts = path.name.lower().split(".")
    return next((p for p in ("train", "dev", "validation", "test") if p in parts), "test")


def convert_garage(path: Path, split: Optional[str] = None, **_: Any) -> Converted:
    records = load_garage(path)
    out = Converted(instances={}, source_files={"garage.jsonl": _jsonl([r.to_published() for r in records])},
                    records=len(records))
    insts = []
    for rec in records:
        inst = rec.to_instance()
        for passage in rec.passages:
            if not passage.published:
                reason = ("passages with no date (N/A, not defined, empty; published left empty)"
                          if is_no_date(passage.date) else "passages whose date string is unreadable (published left "
                                                           "empty)")
                out.warnings[reason] += 1
        insts.append(inst)
    out.instances[_split_of(path, split)] = insts
    return out


def convert_xrag(path: Path, split: Optional[str] = None, language: Optional[str] = None,
                 setting: Optional[str] = None) -> Converted:
    records = load_xrag_records(path)
    split = _split_of(path, split)
    out = Converted(instances={}, source_files={f"xrag.{split}.jsonl": _jsonl([r.to_published() for r in records])},
                    records=len(records))
    detect = language_detector() if records else None
    insts = []
    for rec in records:
        lang = language or detect(rec.question)  # type: ignore[misc]
        inst = rec.to_instance(lang, setting or "mono", detect)
        if setting is None and lang != "en" and any(d.language == lang for d in inst.documents):
            inst.setting = "multi"  # articles in the question's language: XRAG's multilingual retrieval
        if rec.is_support is None:
            out.warnings["rows without is_support (supports taken as the first two articles)"] += 1
        insts.append(inst)
    out.instances[split] = insts
    return out


def _beir_files(sets: dict[str, Any]) -> dict[str, str]:
    """The BEIR folder of the loaded splits, written from the loaded (typed) sets."""
    first = next(iter(sets.values()))
    files = {"corpus.jsonl": _jsonl(list(first.corpus.values())), "queries.jsonl": _jsonl(list(first.queries.values()))}
    for split, beir in sets.items():
        files[f"qrels/{split}.tsv"] = "query-id\tcorpus-id\tscore\n" + "".join(
            f"{q}\t{c}\t{s}\n" for q, docs in beir.qrels.items() for c, s in docs.items())
    for kind, name in MAPPING_FILES.items():
        if kind in first.mappings:
            files[name] = json.dumps(first.mappings[kind], indent=1, ensure_ascii=False) + "\n"
    return files


def convert_beir(path: Path, split: Optional[str] = None, **_: Any) -> Converted:
    qrels_dir = path / "qrels"
    splits = [split] if split else sorted(p.stem for p in qrels_dir.glob("*.tsv")) if qrels_dir.is_dir() else []
    if not splits:
        raise InputError(f"{path}: no qrels/<split>.tsv; is it a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)?")
    sets = {s: load_beir(path, s) for s in splits}
    first = sets[splits[0]]
    out = Converted(instances={}, source_files=_beir_files(sets), records=len(first.queries))
    for s, beir in sets.items():
        insts = []
        for qid in beir.qrels:
            query = beir.queries[qid]
            meta = query.get("metadata")
            if not isinstance(meta, dict) or not all(k in meta for k in ("q_type", "answer", "setting")):
                out.skipped["queries without babelrag metadata (q_type, answer, setting): retrieval data only"] += 1
                continue
            try:
                insts.append(Instance.model_validate({
                    **{k: meta[k] for k in QUERY_METADATA if k in meta}, "id": qid, "question": query["text"],
                    "language": query.get("language", "und"),
                    "documents": beir.documents_for(qid, meta.get(DOC_ORDER))}))
            except ValueError as exc:
                raise InputError(f"{path}/queries.jsonl: query {qid!r}: metadata is not a babelrag instance "
                                 f"({str(exc).splitlines()[0]})") from None
        out.instances[s] = insts
    return out


CONVERTERS: dict[str, Callable[..., Converted]] = {"garage": convert_garage, "xrag": convert_xrag, "beir": convert_beir}


def convert_external(source: str | Path, fmt: str, out: str | Path, split: Optional[str] = None,
                     language: Optional[str] = None, setting: Optional[str] = None) -> ConvertResult:
    """Load ``source`` strictly as ``fmt`` and write a release folder at ``out`` (complete or not at all)."""
    if fmt not in CONVERTERS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    source = Path(source)
    if not source.exists():
        raise InputError(f"{source}: not found")
    if (fmt == "beir") != source.is_dir():
        raise InputError(f"{source}: {'a BEIR folder' if fmt == 'beir' else f'a {fmt} .jsonl file'} is expected")
    conv = CONVERTERS[fmt](source, split=split, language=language, setting=setting)
    groups: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for sp, insts in conv.instances.items():
        for inst in sorted(insts, key=lambda i: i.id):
            groups[config_name(inst.setting, inst.language)][sp].append(inst.model_dump(mode="json"))
    hashes = {f"{c}/{s}": versioning.rows_hash(r) for c, sp in groups.items() for s, r in sp.items()}
    counts = {c: {s: len(r) for s, r in sp.items()} for c, sp in groups.items()}
    info = {"name": source.stem if source.is_file() else source.name, "version": EXTERNAL_VERSION,
            "schema_version": SCHEMA_VERSION, "source_format": fmt, "source": source.name,
            "data_hash": versioning.overall_hash(hashes), "data_hashes": hashes, "configs": counts,
            "records": conv.records, "not_converted": dict(conv.skipped), "warnings": dict(conv.warnings),
            "unverified_released": 0,
            **({"protocol": PUBLISHED[fmt].recorded()} if fmt in PUBLISHED else {})}
    out = Path(out)
    with atomic_dir(out) as tmp:
        for cfg, splits in groups.items():
            for sp, rows in splits.items():
                write_parquet(layout.split_file(tmp, cfg, sp), rows)
        write_files(tmp / SOURCE_DIR, conv.source_files)
        languages = sorted({i.language for insts in conv.instances.values() for i in insts}
                           | {d.language for insts in conv.instances.values() for i in insts for d in i.documents})
        write_files(tmp, {layout.RELEASE_INFO: json.dumps(info, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                          layout.CARD: external_card.render(str(info["name"]), fmt, info, languages)})
    return ConvertResult(folder=out, fmt=fmt, records=conv.records, configs=counts, skipped=dict(conv.skipped),
                         warnings=dict(conv.warnings))


def converted_from(folder: Path) -> Optional[str]:
    """The external format a release folder was converted from (None for ``release build`` folders)."""
    info = read_info(folder) or {}
    fmt = info.get("source_format")
    return fmt if fmt in FORMATS and (folder / SOURCE_DIR).is_dir() else None


def export_source(folder: Path, out: Path) -> list[Path]:
    """Write a converted folder's records back in their own format (loaded strictly first)."""
    fmt = converted_from(folder)
    src = folder / SOURCE_DIR
    if fmt == "garage":
        files = {"garage.jsonl": _jsonl([r.to_published() for r in load_garage(src / "garage.jsonl")])}
    elif fmt == "xrag":
        files = {p.name: _jsonl([r.to_published() for r in load_xrag_records(p)]) for p in sorted(src.glob("*.jsonl"))}
    elif fmt == "beir":
        sets = {p.stem: load_beir(src, p.stem) for p in sorted((src / "qrels").glob("*.tsv"))}
        files = _beir_files(sets)
    else:
        raise InputError(f"{folder} was not made by `babelrag release convert`")
    with atomic_dir(Path(out)) as tmp:
        write_files(tmp, files)
    return [Path(out) / name for name in files]
