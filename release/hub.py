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

IGNORE = [f"{layout.DISK_DIR}/**", ".*"]


class PushError(BabelragError):
    """The release could not be uploaded."""


def push_release(folder: Path, repo_id: str, token: Optional[str] = None, endpoint: Optional[str] = None,
                 private: bool = False) -> str:
    """Create the dataset repo if needed and upload the Hub layout (not ``disk/``). Returns the commit URL."""
    folder = Path(folder)
    if not (folder / layout.CARD).exists() or not (folder / layout.DATA_DIR).is_dir():
        raise PushError(f"{folder} is not a release folder (README.md + data/); run `babelrag release build` first")
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    if hf_offline():
        raise PushError(f"cannot push to {endpoint}: HF_HUB_OFFLINE is set (offline mode); unset it on a machine "
                        "with network access, or copy the folder there and push from it")
    token = token or os.environ.get("HF_TOKEN") or None
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        info = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                                 ignore_patterns=IGNORE, commit_message=f"release {folder.name}")
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
