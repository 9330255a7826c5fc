"""Reading benchmark instances for evaluation: a release folder (``data/<config>/<split>.parquet``), an
instances ``.jsonl`` file, its release name/revision, and a seeded sample."""
from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from babelrag.errors import InputError
from babelrag.parquet_io import read_rows
from babelrag.records import Instance
from babelrag.release import layout
from babelrag.release.layout import read_info
from babelrag.rows import iter_jsonl
from babelrag.release.naming import resolve_configs

DEFAULT_SPLIT = "test"


def choose_split(path: str | Path, split: Optional[str] = None) -> str:
    """The split ``evaluate run`` scores in a release folder: ``split`` when given (it must exist), else
    ``test``, else the only split; "" for a .jsonl file or a folder without the release layout."""
    path = Path(path)
    splits = sorted({s for _, s, _ in layout.data_files(path)}) if path.is_dir() else []
    if not splits:
        if split:
            raise InputError(f"--split {split}: {path} is not a release folder with data/<config>/<split>.parquet")
        return ""
    if split:
        if split not in splits:
            raise InputError(f"release {path} has no split {split!r}; it has {', '.join(splits)} (pass one with --split)")
        return split
    if DEFAULT_SPLIT in splits:
        return DEFAULT_SPLIT
    if len(splits) == 1:
        return splits[0]
    raise InputError(f"release {path} has the splits {', '.join(splits)} and none is {DEFAULT_SPLIT!r}; choose "
                     "the one to score with --split NAME (scores of different splits are never mixed)")


def scored_configs(path: str | Path, split: str, configs: Sequence[str] = ()) -> list[str]:
    """The configs that hold ``split`` (restricted to ``configs`` when given), for results.json."""
    have = sorted({c for c, s, _ in layout.data_files(Path(path)) if s == split or not split}) \
        if Path(path).is_dir() else []
    if not configs:
        return have
    wanted = set(resolve_configs(configs, have)[0])  # old config names (``multi-es-de``) still select
    return [c for c in have if c in wanted]


def load_instances(path: str | Path, configs: Sequence[str] = (), split: Optional[str] = None) -> list[Instance]:
    """Instances from a JSONL file or a release folder (``data/<config>/<split>.parquet``), deduplicated.

    ``configs`` restricts a release folder to those config names (empty = all); ``split`` to one split
    (None = every split, for tools that read a whole release; ``evaluate run`` always names one).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path} does not exist; pass a release folder or an instances .jsonl file")
    rows: list[tuple[str, dict]] = []
    if path.is_file() and path.suffix == ".jsonl":
        rows = [(f"{path}:{n}", row) for n, row in iter_jsonl(path)]
    else:
        if path.is_dir():  # a release folder, or any folder of parquet files (e.g. one config's)
            laid_out = layout.data_files(path)
            files = [f for _, s, f in laid_out if not split or s == split] if laid_out \
                else sorted(path.rglob("*.parquet"))
        else:
            files = [path]
        if configs:
            known = sorted({f.parent.name for f in files})
            wanted, unknown = resolve_configs(configs, known)  # old config names (``multi-es-de``) still select
            if unknown:
                raise InputError(f"release {path} has no config(s) {sorted(unknown)}; it has {known}")
            files = [f for f in files if f.parent.name in set(wanted)]
        if not files:
            raise InputError(f"{path} holds no parquet files; is it a babelrag release folder?")
        for f in files:
            for n, row in enumerate(read_rows(f, layout.REPAIR)):
                rows.append((f"{f}:row {n}", row))
    keep = set(Instance.model_fields)
    seen: dict[str, Instance] = {}
    for where, row in rows:
        try:
            inst = Instance.model_validate({k: v for k, v in row.items() if k in keep})
        except ValueError as exc:
            raise InputError(f"{where}: not a benchmark instance ({str(exc).splitlines()[0]})") from None
        seen.setdefault(inst.id, inst)
    return list(seen.values())


def release_revision(path: str | Path) -> tuple[str, str]:
    """(dataset name, revision) of a release folder from its release.json; ("", "") if absent."""
    data = read_info(Path(path))
    if data is None:
        return "", ""
    rev = str(data.get("version", ""))
    if data.get("data_hash"):
        rev += f"+{str(data['data_hash'])[:12]}"
    return str(data.get("name", "")), rev


def sample_instances(instances: Sequence[Instance], limit: int | None, seed: int) -> list[Instance]:
    """A seeded subset (all when ``limit`` is None), kept in id order."""
    if limit is None or limit >= len(instances):
        return list(instances)
    picked = random.Random(seed).sample(sorted(instances, key=lambda i: i.id), limit)
    return sorted(picked, key=lambda i: i.id)
