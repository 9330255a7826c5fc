"""Reading huggingface_hub failures: offline mode, network trouble and HTTP status, whatever wraps them.

The Hub client raises its own errors around httpx/requests ones (and huggingface_hub has changed which
over releases), so both the push (release) and the fetch (evaluate) walk the exception chain by class
name instead of importing one library's types.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Optional

_NETWORK_ERRORS = {"ConnectError", "ConnectionError", "ConnectTimeout", "ReadTimeout", "TimeoutException",
                   "NewConnectionError", "MaxRetryError", "NetworkError", "RemoteProtocolError"}


def hf_offline() -> bool:
    """HF_HUB_OFFLINE set in the environment (or already read by huggingface_hub at import time)."""
    env = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - a core dependency
        return env
    return bool(constants.HF_HUB_OFFLINE) or env


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: Optional[BaseException] = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def is_network_failure(exc: BaseException) -> bool:
    """True when a connection/timeout error is anywhere in the chain."""
    return any(any(c.__name__ in _NETWORK_ERRORS for c in type(e).__mro__) for e in _chain(exc))


def http_status(exc: BaseException) -> Optional[int]:
    """The first HTTP status code a response in the chain carries, if any."""
    for e in _chain(exc):
        status = getattr(getattr(e, "response", None), "status_code", None)
        if isinstance(status, int):
            return status
    return None
