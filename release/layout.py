"""The release folder layout, written down once: the writers (``release build``, ``release convert``) and
every reader (export, push, validation of a folder, ``evaluate run``, the Hub fetch) use these names::

    README.md                      dataset card (YAML header lists every config's data files)
    CHANGELOG.md
    release.json                   version, schema version, per config/split row counts and data hashes
    schema/<type>.schema.json      JSON Schemas of the row types
    data/<config>/<split>.parquet  rows sorted by id (what ``load_dataset(folder, config)`` reads)
    disk/<config>/                 ``datasets.save_to_disk`` copies (local only, never pushed)
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from babelrag.errors import BabelragError
from babelrag.release.naming import config_aliases

CARD = "README.md"
CHANGELOG = "CHANGELOG.md"
RELEASE_INFO = "release.json"
SCHEMA_DIR = "schema"
DATA_DIR = "data"
DISK_DIR = "disk"
REPAIR = "rebuild the release or download it again"  # the fix for a damaged data file


def split_path(config: str, split: str) -> str:
    """The data file of one config and split, relative to the release folder (POSIX, as the card lists it)."""
    return f"{DATA_DIR}/{config}/{split}.parquet"


def split_file(folder: Path, config: str, split: str) -> Path:
    return Path(folder) / split_path(config, split)


def data_files(folder: Path) -> list[tuple[str, str, Path]]:
    """(config, split, file) of every data file of a release folder, sorted; [] when it has none."""
    return [(p.parent.name, p.stem, p) for p in sorted((Path(folder) / DATA_DIR).glob("*/*.parquet"))]


def has_data(folder: Path) -> bool:
    return bool(data_files(folder))


def hub_patterns(configs: Sequence[str] = ()) -> list[str]:
    """The files a reader needs from a pushed release: card, release info and the configs' data files."""
    # a config under its current and its old name (``multi-de-en_support`` / ``multi-es-de``)
    data = [f"{DATA_DIR}/{a}/*.parquet" for c in configs for a in config_aliases(c)] if configs \
        else [f"{DATA_DIR}/*/*.parquet"]
    return [CARD, RELEASE_INFO, *data]


def read_info(folder: Path) -> Optional[dict[str, Any]]:
    """``release.json`` of a release folder; None when there is none."""
    path = Path(folder) / RELEASE_INFO
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BabelragError(f"{path}: unreadable release info ({exc}); remove or repair that release folder") from None
