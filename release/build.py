"""``babelrag release build``: finished build -> validated, split, Hub-layout release folder.

Layout of ``<release.out_dir>/<release.name>-<version>/``::

    README.md                      dataset card (YAML header lists every config's data files)
    CHANGELOG.md
    release.json                   version, schema version, per config/split row counts and data hashes
    schema/instance.schema.json    JSON Schemas of the row types
    data/<config>/<split>.parquet  rows sorted by id, datasets features in the parquet metadata
    disk/<config>/                 the same config as ``DatasetDict.save_to_disk`` (load_from_disk)

Everything is written into a hidden temporary folder and renamed into place, so a release folder only
ever exists complete; validation and the version rule run before anything is written.

The folder name carries the dataset name and version because ``datasets`` caches a local folder under its
folder name and config name only: two different releases in folders of the same name would share (stale)
cache entries.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from babelrag.annotate.summary import dataset_annotation_summary
from babelrag.atomic import atomic_dir, atomic_write_text
from babelrag.console import track
from babelrag.errors import IncompleteRunError, StageError
from babelrag.freshness import DateWindow, date_range, select
from babelrag.parquet_io import read_rows
from babelrag.records import Instance, QAItem
from babelrag.release import card, layout, schema, versioning
from babelrag.release.naming import config_name
from babelrag.release.splits import assign_splits
from babelrag.release.validate import Rules, ValidationReport, validate
from babelrag.stage import stage_names, stages
from babelrag.store import RECORDS_FILE, BuildStore


@dataclass
class ReleaseResult:
    folder: Path
    version: str
    configs: dict[str, dict[str, int]]
    data_hash: str
    report: ValidationReport
    change_lines: list[str] = field(default_factory=list)
    slices: list["ReleaseResult"] = field(default_factory=list)  # release.time_slices, one release each

    def __fspath__(self) -> str:  # usable wherever a path to the release folder is expected
        return str(self.folder)

    def __str__(self) -> str:
        return str(self.folder)


def read_instance_rows(store: Any) -> list[dict[str, Any]]:
    """The instances stage's rows as plain dicts (validated by the release rules, not on read)."""
    import pyarrow.parquet as pq


    store.require("instances")
    return pq.read_table(store.stage_dir("instances") / RECORDS_FILE).to_pylist()


def corpus_stats(store: Any) -> dict[str, Any]:
    """Article counts per language and the date range, read from two ingest columns only."""
    import pyarrow.parquet as pq


    path = store.stage_dir("ingest") / RECORDS_FILE
    if store.manifest("ingest") is None or not path.exists():
        return {}
    table = pq.read_table(path, columns=["language", "published"]).to_pydict()
    dates = sorted(str(d) for d in table["published"] if d)
    return {"articles": len(table["language"]), "languages": dict(Counter(table["language"])),
            "date_min": dates[0] if dates else "?", "date_max": dates[-1] if dates else "?"}


def instance_table(rows: list[dict[str, Any]]) -> Any:
    """Instance rows as one Arrow table with the release features (in its schema metadata): the one
    conversion of a split's rows, shared by its parquet file and its ``save_to_disk`` copy."""
    import pyarrow as pa


    return pa.Table.from_pylist(schema.arrow_rows(rows), schema=schema.instance_features().arrow_schema)


def write_table(path: Path, table: Any) -> None:
    """Deterministic parquet (same rows + library versions => same bytes) with datasets features."""
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    write_table(path, instance_table(rows))


def table_dataset(table: Any, features: Any) -> Any:
    """A ``datasets.Dataset`` over ``table``'s columns (no per-row conversion); column by column, as
    ``Dataset.from_list`` builds its table, so the saved copy (fingerprint included) is the same."""
    import datasets

    return datasets.Dataset.from_dict({c: table.column(c) for c in table.column_names}, features=features)


def group_instances(instances: list[Instance], split_of_qa: dict[str, str]) -> dict[str, dict[str, list[Instance]]]:
    groups: dict[str, dict[str, list[Instance]]] = defaultdict(lambda: defaultdict(list))
    for inst in instances:
        groups[config_name(inst.setting, inst.language)][split_of_qa.get(inst.qa_id, "test")].append(inst)
    return {c: {s: sorted(v, key=lambda i: i.id) for s, v in sp.items()} for c, sp in groups.items()}


def _provenance(qas: list[QAItem], released_qa: set[str]) -> dict[tuple[str, str, str], int]:
    out: Counter[tuple[str, str, str]] = Counter()
    for qa in qas:
        if qa.id in released_qa:
            p = qa.provenance
            out[(p.model, p.prompt_id, p.prompt_version)] += 1
    return dict(out)


def _annotation_summary(build_dir: Path, settings: Any) -> Optional[dict[str, Any]]:
    """What the card says about annotation: ``annotate/summary.json`` if a curator wrote one, else what the
    pulled responses of the dataset-annotation projects say (``annotate.summary``: agreement over the
    final responses, with items and annotators, and how records were decided; never model judgement)."""
    folder = BuildStore(build_dir).annotate_dir
    path = folder / "summary.json"
    if path.exists():
        data = _read_json(path)
        return data if isinstance(data, dict) else {"summary": data}
    return dataset_annotation_summary(folder, settings)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise StageError(f"{path}: unreadable annotation summary ({exc}); re-run `babelrag annotate` or remove it") \
            from None


def _tracker(console: Any, desc: str) -> Any:
    """``babelrag.console.track`` bound to a label, for long loops (None without a console)."""
    if console is None:
        return None

    return lambda items, total: track(items, total, desc, console)


def plan(config: Any, console: Any = None) -> tuple[list[Instance], dict[str, str], ValidationReport, list[QAItem]]:
    """Read the build, assign splits and run every rule (no writes). Used by build and validate."""
    store = BuildStore(config.build_dir)
    rows = read_instance_rows(store)
    qas = store.read("filters", QAItem) if store.manifest("filters") else []
    extra = {q.id: list(q.article_ids) for q in qas}
    assignment: dict[str, str] = {}

    def split_for(instances: list[Instance]) -> dict[str, str]:
        assignment.update(assign_splits(instances, config.project.seed, config.release.dev_fraction, extra))
        return assignment

    instances, report = validate(rows, Rules.from_config(config), split_for=split_for,
                                 progress=_tracker(console, "release: validating"))
    return instances, assignment, report, qas


def refuse_failed_items(store: Any) -> None:
    """A build whose stages still hold failed items (LLM calls that got no answer) is not released: the
    release would silently lack them. A plain `babelrag run` retries them first."""
    failed = {name: n for name in stage_names() if (n := sum(store.failed_items(name).values()))}
    if failed:
        where = ", ".join(f"{name}: {n}" for name, n in failed.items())
        raise IncompleteRunError(f"the build still has failed items ({where}); run `babelrag run` again to retry "
                            "them, then build the release")


def build_release(config: Any, out_root: Optional[Path] = None, console: Any = None) -> ReleaseResult:
    """Validate, split and write the release; then each ``release.time_slices`` window as a release of its own
    (``<name>-<slice>``: the instances whose supporting articles were all published inside the window, with
    the same splits). Returns the full release; ``slices`` on it lists the sliced ones."""
    store = BuildStore(config.build_dir)
    refuse_failed_items(store)
    instances, split_of_qa, report, qas = plan(config, console)
    report.raise_if_failed()
    if not instances:
        raise StageError(f"the instances stage in {store.stage_dir('instances')} has no records: nothing to release")
    out_root = Path(out_root) if out_root else config.resolve(config.release.out_dir)
    slices = []
    for sl in config.release.time_slices:  # every slice is checked before anything is written
        window = DateWindow.parse(sl.after, sl.before, f"release.time_slices {sl.name!r}")
        kept = select(instances, window).kept
        if not kept:
            raise StageError(f"release.time_slices {sl.name!r}: no instance has all its supporting articles "
                             f"{window.describe()}; widen the window or remove the slice")
        slices.append((sl.name, window, kept))
    result = _write_release(config, store, instances, split_of_qa, report, qas, config.release.name, out_root,
                            console)
    for name, window, kept in slices:
        result.slices.append(_write_release(config, store, kept, split_of_qa, report, qas,
                                            f"{config.release.name}-{name}", out_root, console, window))
    return result


def _write_release(config: Any, store: Any, instances: list[Instance], split_of_qa: dict[str, str],
                   report: ValidationReport, qas: list[QAItem], release_name: str, out_root: Path, console: Any,
                   window: Optional[DateWindow] = None) -> ReleaseResult:
    """One release folder ``<name>-<version>`` of ``instances`` (written atomically, version rule checked)."""
    import datasets


    datasets.disable_progress_bars()
    groups = group_instances(instances, split_of_qa)
    rows = {c: {s: [i.model_dump(mode="json") for i in insts] for s, insts in sp.items()} for c, sp in groups.items()}
    hashes = {f"{c}/{s}": versioning.rows_hash(r) for c, sp in rows.items() for s, r in sp.items()}
    data_hash = versioning.overall_hash(hashes)

    version = config.release.version
    releases = versioning.existing_releases(out_root, release_name)
    change = versioning.check_version(version, hashes, schema.SCHEMA_VERSION, releases)

    manifests = {s.name: m for s in stages() if (m := store.manifest(s.name)) is not None}
    released = card.released_date(manifests)
    previous_changelog = ""
    if change.previous:
        prev_path = Path(releases[change.previous]["_folder"]) / layout.CHANGELOG
        previous_changelog = prev_path.read_text(encoding="utf-8") if prev_path.exists() else ""
    # a rebuild of an existing version keeps that version's recorded entry ("First release." stays)
    change_lines = (versioning.recorded_entry(previous_changelog, version) if change.rebuild else None) \
        or change.lines()
    counts = {c: {s: len(r) for s, r in sp.items()} for c, sp in rows.items()}
    meta = {config_name(i.setting, i.language): (i.setting, i.language) for i in instances}
    inputs = card.CardInputs(
        name=release_name, version=version, license=config.release.license, configs=counts,
        config_meta=meta, manifests=manifests, stage_descriptions={s.name: s.description for s in stages()},
        provenance=_provenance(qas, {i.qa_id for i in instances}),
        annotation=_annotation_summary(store.root, config.annotate), answer_types=dict(Counter(i.a_type for i in instances)),
        corpus=corpus_stats(store),
        validation={"checked": report.checked, "unchecked_language": report.unchecked_language,
                    "unverified_released": report.unverified_released,
                    **({"time_slice": window.recorded()} if window is not None else {})},
        change_lines=change_lines, data_hash=data_hash, seed=config.project.seed,
        dev_fraction=config.release.dev_fraction, questions=len({i.qa_id for i in instances}), released=released,
        languages=card.released_languages(instances, config.project.pivot_language),
        license_chosen="license" in config.release.model_fields_set,
        date_ranges={c: date_range([i for insts in sp.values() for i in insts]) for c, sp in groups.items()},
        window=window,
    )

    final = out_root / release_folder_name(release_name, version)
    with atomic_dir(final) as tmp:
        features = schema.instance_features()
        track = _tracker(console, "release: writing configs") or (lambda items, total: items)
        for cfg, splits in track(sorted(rows.items()), len(rows)):
            tables = {split: instance_table(split_rows) for split, split_rows in sorted(splits.items())}
            for split, table in tables.items():
                write_table(layout.split_file(tmp, cfg, split), table)
            dd = datasets.DatasetDict({s: table_dataset(t, features) for s, t in tables.items()})
            dd.save_to_disk(str(tmp / layout.DISK_DIR / cfg))
        for name, json_schema in schema.json_schemas().items():
            atomic_write_text(tmp / layout.SCHEMA_DIR / f"{name}.schema.json",
                              json.dumps(json_schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        atomic_write_text(tmp / layout.CARD, card.render(inputs))
        atomic_write_text(tmp / layout.CHANGELOG, versioning.changelog(previous_changelog, version, released,
                                                                       change_lines))
        info = {"name": release_name, "version": version, "schema_version": schema.SCHEMA_VERSION,
                "data_hash": data_hash, "data_hashes": hashes, "configs": counts, "released": released,
                "seed": config.project.seed, "dev_fraction": config.release.dev_fraction,
                "build_config_hashes": {s: m.config_hash for s, m in manifests.items()},
                "unverified_released": report.unverified_released,
                **({"time_slice": window.recorded()} if window is not None else {})}
        if config.corpus.undated != "drop":  # documents without a real publication date are released undated
            info["undated_policy"] = config.corpus.undated
        atomic_write_text(tmp / layout.RELEASE_INFO, json.dumps(info, indent=2, sort_keys=True) + "\n")
    if console is not None:
        console.print(f"release {version}: {len(instances)} instances, {len(rows)} configs -> {final}")
    return ReleaseResult(folder=final, version=version, configs=counts, data_hash=data_hash, report=report,
                         change_lines=change_lines)


def release_folder_name(name: str, version: str) -> str:
    return f"{name}-{version}"


def read_release_rows(folder: Path) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """(rows, split per row, config per row) of a release folder's parquet files (a damaged one is named)."""
    if not (Path(folder) / layout.DATA_DIR).is_dir():
        raise StageError(f"{folder} is not a release folder (no {layout.DATA_DIR}/); build one with "
                         "`babelrag release build`")
    rows, splits, configs = [], [], []
    for config, split, path in layout.data_files(folder):
        for row in read_rows(path, layout.REPAIR):
            rows.append(row)
            splits.append(split)
            configs.append(config)
    return rows, splits, configs
