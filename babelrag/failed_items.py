"""Which item errors are *failed items* (retried by the next plain run) and which are final.

An error whose reason says the answer never came — the endpoint timed out, dropped the connection,
answered 5xx, throttled us, refused the key or the quota, or was given up on as down — depends on the
endpoint's state at the time, not on the item: the item is not done, and the next run retries it.
Every other error (a reply that stayed unreadable after the repair re-ask, a request the endpoint
rejects as malformed, a supporting article missing from ingest, leakage) is the item's final outcome:
it is counted in the run report and kept, and a re-run does not pay for it again (the LLM cache keeps an
unreadable reply as such, ``ResponseCache.put_unreadable``, for calls a re-run makes anyway).

Stage code passes the LLM layer's reason on (``ctx.error(id, result.reason, ...)``), possibly behind a
step prefix (``summary:timeout``); the last ``:``-part decides.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

#: reasons (``babelrag.llm.retry`` categories, plus ``endpoint_down`` and ``budget``: the call did not start
#: because it could pass ``llm.max_cost_usd``) for which a later call may succeed
RETRYABLE_REASONS = frozenset({
    "rate_limit", "timeout", "connection", "server_error", "bad_body", "http_408", "http_409",
    "auth", "quota", "unexpected", "endpoint_down", "budget",
})

#: the final reason of a reply of the right shape that does not line up with its input (a support reply with
#: another number of lists than sentences): the pydantic error type its schema's validator raises
#: (``PydanticCustomError(MISALIGNED, ...)``), which ``llm.client.parse_structured`` reports as the reason
MISALIGNED = "misaligned"


def is_retryable(reason: str | None) -> bool:
    """True when an error with this reason marks a failed item (retried next run), not a final outcome."""
    return bool(reason) and reason.rsplit(":", 1)[-1] in RETRYABLE_REASONS  # type: ignore[union-attr]


def error_reason(error: str | None) -> str:
    """The reason at the head of an LLM result's error text (``"timeout: ..."`` -> ``"timeout"``), for code
    that keeps only the text (a translation's ``error``)."""
    return (error or "").split(":", 1)[0].strip()


def count_failed(reasons: Iterable[str]) -> Counter[str]:
    """Failed items per reason (final errors left out)."""
    return Counter(r for r in reasons if is_retryable(r))
