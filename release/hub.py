"""``babelrag release push``: upload a release folder to the Hugging Face Hub (or a compatible endpoint).

Endpoint and token come from the environment (``HF_ENDPOINT``, ``HF_TOKEN``) or the command line. Any
network or auth failure becomes one line that says what to fix; offline mode is refused up front.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from babelrag.errors import BabelragError
from babelrag.hf_errors import hf_offline, is_network_failure
from babelrag.release import layout

# What a push leaves out: the local ``save_to_disk`` copies and hidden files at any depth (upload_folder
# adds its own default ignores, ``.git/`` and ``.cache/huggingface``, on top).
IGNORE = [f"{layout.DISK_DIR}/**", ".*", "**/.*"]


class PushError(BabelragError):
    """The release could not be uploaded."""


def check_release_folder(folder: Path) -> Path:
    folder = Path(folder)
    if not (folder / layout.CARD).exists() or not (folder / layout.DATA_DIR).is_dir():
        raise PushError(f"{folder} is not a release folder (README.md + data/); make one with `babelrag release "
                        "build` or `babelrag release convert`")
    return folder


def planned_files(folder: Path) -> list[tuple[str, int]]:
    """(relative path, bytes) of every file a push uploads. Filtered by huggingface_hub itself, with the
    patterns ``upload_folder`` applies (``IGNORE`` plus its defaults), so the dry run cannot drift from it."""
    from huggingface_hub.utils import DEFAULT_IGNORE_PATTERNS, filter_repo_objects

    folder = check_release_folder(folder)
    files = {p.relative_to(folder).as_posix(): p for p in sorted(folder.glob("**/*")) if p.is_file()}
    kept = filter_repo_objects(files, ignore_patterns=[*IGNORE, *DEFAULT_IGNORE_PATTERNS])
    return [(rel, files[rel].stat().st_size) for rel in kept]


def dry_run(folder: Path, repo_id: str) -> str:
    """What ``release push`` would upload, and the card, without touching the network."""
    files = planned_files(folder)
    width = max((len(f"{n:,}") for _, n in files), default=1)
    listing = "\n".join(f"  {n:>{width},}  {rel}" for rel, n in files)
    card = (Path(folder) / layout.CARD).read_text(encoding="utf-8")
    return (f"dry run: would upload {len(files)} file(s), {sum(n for _, n in files):,} bytes, to dataset "
            f"{repo_id or '<repo>'} (nothing was sent)\n{listing}\n\n--- {layout.CARD} ---\n{card}")


def push_release(folder: Path, repo_id: str, token: Optional[str] = None, endpoint: Optional[str] = None,
                 private: bool = False) -> str:
    """Create the dataset repo if needed and upload the Hub layout (not ``disk/``). Returns the commit URL."""
    folder = check_release_folder(folder)
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    if hf_offline():
        raise PushError(f"cannot push to {endpoint}: HF_HUB_OFFLINE is set (offline mode); unset it on a machine "
                        "with network access, or copy the folder there and push from it")
    token = token or os.environ.get("HF_TOKEN") or None
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        # a copy: upload_folder appends its default ignores to the list it is given
        info = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                                 ignore_patterns=list(IGNORE), commit_message=f"release {folder.name}")
    except Exception as exc:  # noqa: BLE001 - every failure becomes one actionable line
        if is_network_failure(exc):
            raise PushError(f"cannot reach the Hub at {endpoint} ({type(exc).__name__}); check the network or "
                            "HF_ENDPOINT") from None
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status in (401, 403):
            raise PushError(f"the Hub at {endpoint} refused the token (HTTP {status}); set HF_TOKEN to a token "
                            f"with write access to {repo_id}") from None
        if type(exc).__name__ == "OfflineModeIsEnabled":
            raise PushError(f"cannot push to {endpoint}: huggingface_hub is in offline mode") from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PushError(f"push to {endpoint}/{repo_id} failed: {first[:300]}") from None
    return str(getattr(info, "commit_url", info))
