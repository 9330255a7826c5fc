"""Dataset versions: data hashes, the bump rule and the CHANGELOG.

Rule: a change that can alter any score is a new version. Scores depend only on the released rows, so the
test is a hash of each config/split's rows (canonical JSON, sorted by id — independent of parquet writer
versions). Same version + same hashes: a rebuild (allowed, identical). Same version + different hashes:
refused. Data changed: the version must be new and higher than every existing release; removing a config or
changing the schema version needs a major bump. A card-only change may keep or bump the version.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from babelrag.errors import BabelragError
from babelrag.release.layout import read_info



class VersionError(BabelragError):
    """The release version does not follow the bump rule."""


class VersionTaken(VersionError):
    """The version exists with other data. ``latest``: the highest existing version, to bump from;
    ``same_data_as``: an existing version holding exactly the new data, if any."""

    def __init__(self, message: str, latest: str, same_data_as: Optional[str] = None) -> None:
        super().__init__(message)
        self.latest = latest
        self.same_data_as = same_data_as


def next_patch(version: str) -> str:
    major, minor, patch = parse_version(version)
    return f"{major}.{minor}.{patch + 1}"


def rows_hash(rows: list[dict[str, Any]]) -> str:
    digest = hashlib.sha256()
    for row in sorted(rows, key=lambda r: r["id"]):
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def overall_hash(hashes: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()


def parse_version(version: str) -> tuple[int, int, int]:
    try:
        parts = [int(p) for p in version.split(".")]
    except ValueError:
        parts = []
    if len(parts) != 3:
        raise VersionError(f"release.version {version!r} is not MAJOR.MINOR.PATCH (e.g. 0.2.0)")
    return parts[0], parts[1], parts[2]


def existing_releases(out_root: Path, name: Optional[str] = None) -> dict[str, dict[str, Any]]:
    """version -> release info for every finished release folder under ``out_root`` (of dataset ``name``)."""
    out = {}
    if out_root.is_dir():
        for child in sorted(out_root.iterdir()):
            if child.is_dir() and not child.name.startswith("."):
                info = read_info(child)
                if info and "version" in info and (name is None or info.get("name") == name):
                    info["_folder"] = str(child)
                    out[info["version"]] = info
    return out


@dataclass
class Change:
    """What changed relative to the previous release, and whether the version is acceptable."""

    version: str
    previous: Optional[str] = None
    rebuild: bool = False  # same version, same data
    data_changed: bool = True
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        if self.previous is None:
            return ["First release."]
        if not self.data_changed:
            return [f"Data unchanged from {self.previous} (card / metadata only); scores stay comparable."]
        out = [f"Data changed since {self.previous}: scores are not comparable across versions."]
        out += [f"- added: {', '.join(self.added)}"] if self.added else []
        out += [f"- removed: {', '.join(self.removed)}"] if self.removed else []
        out += [f"- changed: {', '.join(self.changed)}"] if self.changed else []
        return out


def check_version(version: str, hashes: dict[str, str], schema_version: str,
                  releases: dict[str, dict[str, Any]]) -> Change:
    """Apply the bump rule against the existing releases; raise VersionError when it is broken."""
    new = parse_version(version)
    same = releases.get(version)
    if same is not None:
        if same.get("data_hashes") == hashes:
            return Change(version, previous=version, rebuild=True, data_changed=False)
        diff = sorted(k for k in set(hashes) | set(same.get("data_hashes", {}))
                      if hashes.get(k) != same.get("data_hashes", {}).get(k))
        latest = max(releases, key=parse_version)
        same_data = [v for v, info in releases.items() if info.get("data_hashes") == hashes]
        raise VersionTaken(f"release {version} already exists in {same['_folder']} with different data "
                           f"({', '.join(diff[:6])}{' ...' if len(diff) > 6 else ''}): a change that alters scores "
                           f"is a new version — bump release.version", latest,
                           max(same_data, key=parse_version) if same_data else None)
    older = sorted((parse_version(v), v) for v in releases if parse_version(v) < new)
    newer = sorted(v for v in releases if parse_version(v) > new)
    if newer:
        raise VersionError(f"release.version {version} is lower than the existing release {newer[-1]}; "
                           f"use a higher version")
    if not older:
        return Change(version)
    prev_version = older[-1][1]
    prev = releases[prev_version]
    old_hashes: dict[str, str] = prev.get("data_hashes", {})
    old_cfgs = {k.split("/")[0] for k in old_hashes}
    new_cfgs = {k.split("/")[0] for k in hashes}
    change = Change(
        version, previous=prev_version, data_changed=old_hashes != hashes,
        added=sorted(new_cfgs - old_cfgs), removed=sorted(old_cfgs - new_cfgs),
        changed=sorted(c for c in new_cfgs & old_cfgs
                       if {k: v for k, v in hashes.items() if k.split("/")[0] == c}
                       != {k: v for k, v in old_hashes.items() if k.split("/")[0] == c}),
    )
    major_needed = change.removed or prev.get("schema_version") != schema_version
    if change.data_changed and major_needed and new[0] <= parse_version(prev_version)[0]:
        why = f"config(s) {change.removed} removed" if change.removed else "the schema version changed"
        raise VersionError(f"{why} since {prev_version}: that breaks loaders, bump the MAJOR version "
                           f"(release.version {version} -> {parse_version(prev_version)[0] + 1}.0.0)")
    return change


def _entries(changelog_text: str) -> list[str]:
    """The ``## <version> (<date>)`` entries of a CHANGELOG, newest first, without their ``## ``."""
    return changelog_text.split("\n## ")[1:] if changelog_text.startswith("# Changelog") else []


def recorded_entry(changelog_text: str, version: str) -> Optional[list[str]]:
    """The lines recorded for ``version`` in a CHANGELOG (None when it has no entry for it)."""
    for entry in _entries(changelog_text):
        if entry.startswith(f"{version} "):
            return [line for line in entry.split("\n")[1:] if line.strip()]
    return None


def changelog(previous_text: str, version: str, date: str, lines: list[str]) -> str:
    """Prepend this version's entry. An entry is never rewritten: when ``previous_text`` already has one for
    ``version`` (a rebuild of the same data), the CHANGELOG is returned as it was."""
    entries = _entries(previous_text)
    if any(e.startswith(f"{version} ") for e in entries):
        return previous_text
    entry = f"{version} ({date})\n\n" + "\n".join(lines) + "\n"
    body = "\n## ".join([entry.rstrip("\n") + "\n"] + [e.rstrip("\n") + "\n" for e in entries])
    return ("# Changelog\n\nA change that can alter any score is a new version (see the dataset card, "
            "\"Versioning\").\n\n## " + body)
