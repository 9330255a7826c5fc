"""Requests-per-minute and tokens-per-minute limiter (async, per endpoint).

A sliding-window log: no window of ``period_s`` seconds ever holds more than ``limit`` units. Token
reservations use an estimate before the call and are corrected to the server-reported usage after it,
so TPM stays honest without knowing the completion length in advance.
"""
from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Optional


class _Entry:
    __slots__ = ("t", "amount", "expired")

    def __init__(self, t: float, amount: float) -> None:
        self.t = t
        self.amount = amount
        self.expired = False


class WindowLimiter:
    """At most ``limit`` units in any ``period_s`` window; ``acquire`` waits for room."""

    def __init__(self, limit: float, period_s: float = 60.0) -> None:
        self.limit = float(limit)
        self.period_s = period_s
        self._log: deque[_Entry] = deque()
        self._used = 0.0
        self._lock = asyncio.Lock()

    def _expire(self, now: float) -> None:
        while self._log and now - self._log[0].t >= self.period_s:
            e = self._log.popleft()
            e.expired = True
            self._used -= e.amount

    async def acquire(self, amount: float = 1.0) -> _Entry:
        """Reserve ``amount`` units (clamped to the limit so one huge request cannot deadlock)."""
        amount = min(float(amount), self.limit)
        async with self._lock:  # FIFO: waiters are served in order
            while True:
                now = time.monotonic()
                self._expire(now)
                if self._used + amount <= self.limit + 1e-9:
                    entry = _Entry(now, amount)
                    self._log.append(entry)
                    self._used += amount
                    return entry
                # wait until enough of the oldest entries expire
                need = self._used + amount - self.limit
                freed, wait = 0.0, 0.0
                for e in self._log:
                    freed += e.amount
                    wait = e.t + self.period_s - now
                    if freed >= need - 1e-9:
                        break
                await asyncio.sleep(max(wait, 0.001))

    def adjust(self, entry: _Entry, actual: float) -> None:
        """Replace a reservation's estimate by the real amount (if it is still in the window)."""
        actual = min(float(actual), self.limit)
        if not entry.expired:
            self._used += actual - entry.amount
        entry.amount = actual


class EndpointLimiter:
    """RPM + TPM for one endpoint; either may be None (unlimited)."""

    def __init__(self, rpm: Optional[int], tpm: Optional[int], period_s: float = 60.0) -> None:
        self.rpm = WindowLimiter(rpm, period_s) if rpm else None
        self.tpm = WindowLimiter(tpm, period_s) if tpm else None
        self.active = bool(self.rpm or self.tpm)  # False: callers may skip acquire/settle entirely

    async def acquire(self, est_tokens: int) -> Optional[_Entry]:
        if self.rpm:
            await self.rpm.acquire(1)
        if self.tpm:
            return await self.tpm.acquire(est_tokens)
        return None

    def settle(self, entry: Optional[_Entry], actual_tokens: Optional[int]) -> None:
        if self.tpm and entry is not None and actual_tokens is not None:
            self.tpm.adjust(entry, actual_tokens)
