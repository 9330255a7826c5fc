"""Where ``babelrag evaluate run`` reads a release from: a local folder / .jsonl file, or a Hub id.

A Hub id (``org/name``, ``org/name@revision`` or ``hf://datasets/org/name[@revision]``) is fetched
with ``huggingface_hub.snapshot_download`` (repo type ``dataset``) into the Hugging Face cache —
only ``README.md``, ``release.json`` and the parquet files of the requested configs — and then read
exactly like a local release folder. The endpoint is ``HF_ENDPOINT`` (or ``endpoint=``), the token
``HF_TOKEN``. With ``HF_HUB_OFFLINE=1`` a snapshot already in the cache is used; otherwise every
failure (offline, unreachable endpoint, unknown repo or revision, refused token) is one line that
names the id and says how to fix it — never a traceback.

A local path always wins: ``release/my-bench-0.1.0`` is read from disk when it exists, and only
looked up on the Hub when it does not.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from babelrag.errors import InputError
from babelrag.hf_errors import hf_offline, http_status, is_network_failure
from babelrag.release import layout

_HUB_ID = re.compile(r"^(?:hf://datasets/)?(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:@(?P<rev>[\w./-]+))?$")
_FIX = ("connect to the network (and unset HF_HUB_OFFLINE), point HF_ENDPOINT at a reachable Hub mirror, "
        "or download the release folder and pass its path")


@dataclass(frozen=True)
class ReleaseSource:
    """A release resolved to a local folder (or .jsonl file); Hub fields are empty for local paths."""

    path: Path
    hub_id: str = ""
    revision: str = ""  # the revision asked for (branch, tag or commit); "" = main
    commit: str = ""  # the commit the snapshot was taken from

    def settings(self) -> dict[str, str]:
        """What to record in results.json about where the data came from."""
        if not self.hub_id:
            return {"source": str(self.path)}
        return {"source": f"hf://datasets/{self.hub_id}", "hub_revision": self.revision or "main",
                "hub_commit": self.commit}


def parse_hub_id(ref: str) -> Optional[tuple[str, str]]:
    """``(repo_id, revision)`` when ``ref`` is written as a Hub dataset id, else None."""
    m = _HUB_ID.match(ref.strip())
    if not m:
        return None
    return m.group("repo"), m.group("rev") or ""


def _patterns(configs: Sequence[str]) -> list[str]:
    return layout.hub_patterns(configs)


def fetch_hub_release(
    repo_id: str,
    revision: str = "",
    configs: Sequence[str] = (),
    endpoint: Optional[str] = None,
    cache_dir: Optional[str | Path] = None,
    token: Optional[str] = None,
) -> ReleaseSource:
    """Download (or find in the cache) a release published on the Hub; one-line InputError on failure."""
    from huggingface_hub import constants, snapshot_download

    endpoint = (endpoint or constants.ENDPOINT).rstrip("/")
    where = f"dataset '{repo_id}'" + (f" at revision '{revision}'" if revision else "")
    offline = hf_offline()
    try:
        folder = snapshot_download(repo_id, repo_type="dataset", revision=revision or None, endpoint=endpoint,
                                   cache_dir=str(cache_dir) if cache_dir else None,
                                   token=token or os.environ.get("HF_TOKEN") or None,
                                   allow_patterns=_patterns(configs), local_files_only=offline)
    except Exception as exc:  # noqa: BLE001 - every failure becomes one actionable line
        name = type(exc).__name__
        if offline:
            raise InputError(f"cannot fetch {where} from the Hub: offline (HF_HUB_OFFLINE=1) and it is not in "
                             f"the local Hugging Face cache; {_FIX}") from None
        if name in ("RevisionNotFoundError",):
            raise InputError(f"{where} was found at {endpoint} but the revision does not exist; "
                             "pass an existing branch, tag or commit after '@'") from None
        status = http_status(exc)
        if name == "GatedRepoError":
            raise InputError(f"{where} at {endpoint} is gated; accept its terms on the Hub and set HF_TOKEN to a "
                             "token of that account, or download the release folder and pass its path") from None
        if status in (401, 403):
            raise InputError(f"{where} is private or does not exist at {endpoint} (HTTP {status}); check the id, "
                             "set HF_TOKEN to a token that can read it, or download the release folder and pass "
                             "its path") from None
        if name == "RepositoryNotFoundError" or status == 404:
            raise InputError(f"{where} does not exist at {endpoint} (and '{repo_id}' is no local path either); "
                             "check the id, or pass the path of a release folder") from None
        if is_network_failure(exc) or name in ("LocalEntryNotFoundError", "OfflineModeIsEnabled"):
            raise InputError(f"cannot fetch {where}: the Hub at {endpoint} is unreachable and the dataset is not "
                             f"in the local cache; {_FIX}") from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else name
        raise InputError(f"cannot fetch {where} from {endpoint}: {first[:300]}; {_FIX}") from None
    path = Path(folder)
    if not layout.has_data(path):
        wanted = f" for config(s) {list(configs)}" if configs else ""
        raise InputError(f"{where} at {endpoint} holds no data/<config>/<split>.parquet files{wanted}; "
                         "is it a babelrag release (babelrag release push)?")
    return ReleaseSource(path=path, hub_id=repo_id, revision=revision, commit=path.name)


def resolve_release(
    ref: str | Path,
    configs: Sequence[str] = (),
    endpoint: Optional[str] = None,
    cache_dir: Optional[str | Path] = None,
) -> ReleaseSource:
    """A local path if it exists; else a Hub id if ``ref`` looks like one; else a clear InputError."""
    path = Path(ref).expanduser()
    if path.exists():
        return ReleaseSource(path=path)
    text = str(ref)
    hub = parse_hub_id(text)
    if hub is None:
        raise InputError(f"{text} does not exist; pass a release folder, an instances .jsonl file, or a Hub "
                         "dataset id like org/name[@revision]")
    return fetch_hub_release(hub[0], hub[1], configs=configs, endpoint=endpoint, cache_dir=cache_dir)
