"""Which errors are worth retrying, and how long to wait.

Transient: 429 rate limits, 408/409, 5xx, timeouts, connection resets, unparseable HTTP bodies.
Permanent: 401/403 (auth), 429 with ``insufficient_quota`` (no money left: retrying burns time),
400/404/422 (the request itself is wrong). The openai SDK's own retries are switched off
(``max_retries=0``) and the lean ``aiohttp`` transport never retries, so this is the only retry loop.
"""
from __future__ import annotations

import email.utils
import random
import sys
import time
from dataclasses import dataclass
from typing import Optional

from babelrag.llm.transport import HTTPStatusError


@dataclass(frozen=True)
class Failure:
    """A classified error: ``reason`` is a short stable category used in counts and reports."""

    reason: str
    transient: bool
    message: str
    retry_after: Optional[float] = None  # seconds the server asked us to wait


def _retry_after(headers) -> Optional[float]:
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(parsed.timestamp() - time.time(), 0.0)


def _body_code(body) -> str:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("code") or err.get("type") or "")
    return ""


def _chain(exc: BaseException) -> list[BaseException]:
    out, seen = [], set()
    cur: Optional[BaseException] = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _is_disconnect(exc: BaseException) -> bool:
    """The aiohttp transport reports a dropped connection as ConnectTimeout: look underneath."""
    for e in _chain(exc)[1:]:
        name = type(e).__name__
        if isinstance(e, TimeoutError) or "Timeout" in name and "Connect" not in name:
            return False
        if isinstance(e, ConnectionError) or name in ("ServerDisconnectedError", "ClientOSError",
                                                      "ClientConnectionError", "RemoteProtocolError",
                                                      "ClientConnectorError", "ConnectError"):
            return True
        if "disconnected" in str(e).lower() or "connection reset" in str(e).lower():
            return True
    return False


def _status_failure(status: int, headers, body, text: str, msg: str) -> Failure:
    code = _body_code(body)
    if status == 429:
        if "insufficient_quota" in code or "insufficient_quota" in text:
            return Failure("quota", False, msg)
        return Failure("rate_limit", True, msg, _retry_after(headers))
    if status in (401, 403):
        return Failure("auth", False, msg)
    if status in (408, 409):
        return Failure(f"http_{status}", True, msg, _retry_after(headers))
    if status >= 500:
        return Failure("server_error", True, msg, _retry_after(headers))
    if status == 404:
        return Failure("not_found", False, msg)
    return Failure("bad_request", False, msg)


def _aiohttp_failure(exc: BaseException, msg: str) -> Optional[Failure]:
    """Timeouts, and network errors raised by aiohttp itself (the lean ``aiohttp`` transport), or None."""
    if isinstance(exc, TimeoutError):  # aiohttp's ServerTimeoutError (socket read / connect), asyncio's
        return Failure("timeout", True, msg)
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is None:
        return None
    if isinstance(exc, aiohttp.ClientPayloadError):  # body cut off mid-transfer
        return Failure("bad_body", True, msg)
    if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientResponseError)):
        # ServerDisconnectedError, ClientOSError, ClientConnectorError (refused, DNS), bad status line
        return Failure("connection", True, msg)
    return None


def _sdk_failure(openai, exc: BaseException, msg: str) -> Optional[Failure]:
    """Errors raised by the openai SDK (transports ``openai`` and ``openai-aiohttp``), or None."""
    if isinstance(exc, openai.APITimeoutError):  # subclass of APIConnectionError: check first
        return Failure("connection" if _is_disconnect(exc) else "timeout", True, msg)
    if isinstance(exc, openai.APIConnectionError):
        return Failure("connection", True, msg)
    if isinstance(exc, openai.APIResponseValidationError):
        return Failure("bad_body", True, msg)
    if isinstance(exc, openai.APIStatusError):
        return _status_failure(exc.status_code, getattr(exc.response, "headers", None), exc.body,
                               str(exc), msg)
    return None


def classify(exc: BaseException) -> Failure:
    """Map an exception from our transports (aiohttp / the openai SDK, or the network below) to a Failure."""
    msg = f"{type(exc).__name__}: {exc}"[:500]
    if isinstance(exc, HTTPStatusError):
        return _status_failure(exc.status_code, exc.headers, exc.body, str(exc), msg)
    aio = _aiohttp_failure(exc, msg)
    if aio is not None:
        return aio
    openai = sys.modules.get("openai")  # not imported: no SDK exception can exist
    if openai is not None:
        sdk = _sdk_failure(openai, exc, msg)
        if sdk is not None:
            return sdk
    if isinstance(exc, (ValueError, KeyError, TypeError, AttributeError)):
        # a 200 whose body is not the JSON we expect (truncated, HTML error page, ...)
        return Failure("bad_body", True, msg)
    if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
        return Failure("connection", True, msg)
    return Failure("unexpected", False, msg)


def backoff_delay(attempt: int, base: float, cap: float, retry_after: Optional[float],
                  rng: random.Random) -> float:
    """Full-jitter exponential backoff; a server's Retry-After is a floor (plus a little jitter)."""
    delay = rng.uniform(0, min(cap, base * (2 ** attempt)))
    if retry_after is not None:
        delay = max(delay, min(retry_after, 600.0) + rng.uniform(0, base / 4))
    return delay
