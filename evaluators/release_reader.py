"""Reading benchmark instances for evaluation: a release folder (``data/<config>/<split>.parquet``), an
instances ``.jsonl`` file, its release name/revision, and a seeded sample."""
from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from babelrag.errors import InputError
from babelrag.records import Instance


def load_instances(path: str | Path, configs: Sequence[str] = ()) -> list[Instance]:
    """Instances from a JSONL file or a release folder (``data/<config>/<split>.parquet``), deduplicated.

    ``configs`` restricts a release folder to those config names (empty = all).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path} does not exist; pass a release folder or an instances .jsonl file")
    rows: list[tuple[str, dict]] = []
    if path.is_file() and path.suffix == ".jsonl":
        from babelrag.rows import iter_jsonl

        rows = [(f"{path}:{n}", row) for n, row in iter_jsonl(path)]
    else:
        import pyarrow.parquet as pq

        from babelrag.release import layout

        if path.is_dir():  # a release folder, or any folder of parquet files (e.g. one config's)
            files = [f for _, _, f in layout.data_files(path)] or sorted(path.rglob("*.parquet"))
        else:
            files = [path]
        if configs:
            known = sorted({f.parent.name for f in files})
            unknown = sorted(set(configs) - set(known))
            if unknown:
                raise InputError(f"release {path} has no config(s) {unknown}; it has {known}")
            files = [f for f in files if f.parent.name in set(configs)]
        if not files:
            raise InputError(f"{path} holds no parquet files; is it a babelrag release folder?")
        for f in files:
            for n, row in enumerate(pq.read_table(f).to_pylist()):
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
    from babelrag.release.layout import read_info

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
