"""A hard spending cap on LLM calls (``llm.max_cost_usd``, ``llm.max_cost_usd_per_stage``), kept per build.

The cap is for the *build*, not for one invocation: what every earlier run of the build paid is read
from the build's spend ledger (``<build>/llm_spend.json``) and counts against it, so raising the cap
after a stop buys exactly the difference. Cached answers cost nothing and are never counted again.

The rule (checked for the whole-run cap and for each per-stage cap that covers the call's stage): a
call starts only when

    spent (ledger + this run) + reserved (calls in flight) + this call's reservation <= cap

It waits while only the calls in flight are in the way (they may cost less than they hold), and it is
refused once ``spent + its reservation > cap``: the spend alone leaves no room for it.
A reservation is an upper bound of the call's cost: the prompt's UTF-8 bytes plus 16 tokens per
message plus 16 at the input price (no tokenizer makes more tokens than bytes; the rest covers the chat
template), plus ``max_tokens`` at the output price (``UNBOUNDED_COMPLETION_TOKENS`` when it is unset).
When the call ends its reservation is replaced by the cost of the tokens the endpoint reports. So the
spend never passes the cap unless a call in flight outruns its own reservation (a server that ignores
``max_tokens``, or a reply longer than the assumed bound where ``max_tokens`` is unset), and then only
by that excess.

Once a call is refused, every later call the cap covers is refused too (reason ``budget``, a failed item
in ``babelrag.failed_items``: the next run retries it), so a run stops at one clear point instead of
squeezing small calls into the rest. Calls in flight finish, are paid and cached.
"""
from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from babelrag.atomic import atomic_write_text
from babelrag.errors import ConfigError, InputError
from babelrag.llm.settings import EndpointConfig, LLMSettings

#: completion tokens a reservation assumes for a call whose ``max_tokens`` is unset
UNBOUNDED_COMPLETION_TOKENS = 4096
#: tokens a reservation adds per message and per request for the chat template
TEMPLATE_TOKENS = 16
#: the whole-run cap's scope name
TOTAL = "*"
#: scopes of LLM calls made outside the pipeline's stages: ``evaluate run`` (``eval.answer.<model>``,
#: ``eval.xrag.judge.<judge>``, ...) and ``construct contrastive``
OTHER_SCOPES = ("eval", "contrastive")
#: seconds between ledger writes while calls settle (the last write happens when the runner closes)
FLUSH_EVERY_S = 0.5
LEDGER_VERSION = 1


def prompt_token_bound(texts: Sequence[str]) -> int:
    """At most this many prompt tokens for these message texts (bytes, plus the chat template)."""
    return sum(len(t.encode("utf-8")) for t in texts) + TEMPLATE_TOKENS * (len(texts) + 1)


def check_scopes(per_stage: dict[str, float], stages: Sequence[str]) -> None:
    """Every key of ``llm.max_cost_usd_per_stage`` names calls that can happen: a cap under a misspelt
    name would never stop anything. Checked before a run."""
    known = [*stages, *OTHER_SCOPES]
    unknown = sorted(k for k in per_stage if not any(covers(k, s) or covers(s, k) for s in known))
    if unknown:
        raise ConfigError(f"llm.max_cost_usd_per_stage names {unknown}, which cover no LLM calls: use a stage name "
                          f"({', '.join(stages)}), contrastive, or eval (evaluate run; eval.answer, "
                          f"eval.xrag.judge, ... for parts of it)")


def covers(scope: str, stage: str) -> bool:
    """A per-stage cap on ``scope`` covers ``stage`` itself and its dotted sub-stages (``eval`` covers
    ``eval.answer.m1``)."""
    return scope == TOTAL or stage == scope or stage.startswith(scope + ".")


@dataclass
class Reservation:
    stage: str
    amount: float


class BudgetExhausted(Exception):
    """A call did not start: it could take the spend past a cap (the message names the cap)."""


class Budget:
    """Spend against the caps, thread-safe; the ledger file (optional) carries it across runs."""

    def __init__(self, settings: LLMSettings, ledger: Optional[Path] = None) -> None:
        self.caps: dict[str, float] = dict(settings.max_cost_usd_per_stage)
        if settings.max_cost_usd is not None:
            self.caps[TOTAL] = settings.max_cost_usd
        self.ledger = Path(ledger) if ledger is not None else None
        self.before: Counter[str] = Counter(read_ledger(self.ledger))  # stage -> USD, earlier runs
        self.now: Counter[str] = Counter()  # stage -> USD, this run
        self._unflushed: Counter[str] = Counter()
        self._reserved: Counter[str] = Counter()  # stage -> USD held by calls in flight
        self._exhausted: dict[str, str] = {}  # scope -> the refusal that closed it
        self._refused: dict[str, tuple[str, float]] = {}  # scope -> (stage, reservation) of that refusal
        self._lock = threading.Lock()
        self._flushed_at = 0.0

    # the rule -------------------------------------------------------------------------------------
    def _spent(self, scope: str, counters: Sequence[Counter[str]]) -> float:
        return sum(v for c in counters for s, v in c.items() if covers(scope, s))

    def reserve(self, stage: str, amount: float) -> Optional[Reservation]:
        """Hold ``amount`` for a call of ``stage``; None when only the reservations of calls in flight are in
        the way (wait for them to settle and ask again); ``BudgetExhausted`` when the spend alone leaves
        less than ``amount`` under a cap (the scope is then closed for the run)."""
        with self._lock:
            scopes = [s for s in self.caps if covers(s, stage)]
            for scope in scopes:
                if scope in self._exhausted:
                    raise BudgetExhausted(self._exhausted[scope])
            wait = False
            for scope in scopes:
                cap = self.caps[scope]
                spent = self._spent(scope, (self.before, self.now))
                if spent + amount > cap:
                    self._exhausted[scope] = self._refusal(scope, stage, amount)
                    self._refused[scope] = (stage, amount)
                    raise BudgetExhausted(self._exhausted[scope])
                wait = wait or spent + self._spent(scope, (self._reserved,)) + amount > cap
            if wait:
                return None
            self._reserved[stage] += amount
            return Reservation(stage, amount)

    def settle(self, reservation: Optional[Reservation], stage: str, cost: float) -> None:
        """A call ended: release its reservation and book what it cost (0 for a failed call)."""
        with self._lock:
            if reservation is not None:
                self._reserved[reservation.stage] -= reservation.amount
            if cost > 0:
                self.now[stage] += cost
                self._unflushed[stage] += cost
            due = self.ledger is not None and self._unflushed and time.monotonic() - self._flushed_at >= FLUSH_EVERY_S
        if due:
            self.flush()

    def _key(self, scope: str) -> str:
        return "llm.max_cost_usd" if scope == TOTAL else f"llm.max_cost_usd_per_stage.{scope}"

    def _refusal(self, scope: str, stage: str, amount: float) -> str:
        what = "this build" if scope == TOTAL else f"stage {scope}"
        return (f"the budget {self._key(scope)} = ${self.caps[scope]:g} is used up: a call of {stage} (up to "
                f"${amount:.4f}) does not fit beside the ${self._spent(scope, (self.before, self.now)):.4f} spent on {what}")

    def new_run(self) -> None:
        """The same runner serves another run (in one process): this run's spend becomes earlier spend and
        the cap is checked afresh."""
        self.flush()
        with self._lock:
            self.before.update(self.now)
            self.now = Counter()
            self._exhausted.clear()
            self._refused.clear()

    # reporting ------------------------------------------------------------------------------------
    def stopped(self) -> str:
        """Why calls were refused ("" while none was), with the spend as it stands now (after the calls
        that were in flight finished), and what to do."""
        with self._lock:
            if not self._exhausted:
                return ""
            lines = []
            for scope in sorted(self._exhausted):
                stage, amount = self._refused[scope]
                spent = self._spent(scope, (self.before, self.now))
                earlier = self._spent(scope, (self.before,))
                lines.append(f"the budget {self._key(scope)} = ${self.caps[scope]:g} is used up: ${spent:.4f} spent on "
                             + ("this build" if scope == TOTAL else f"stage {scope}")
                             + f" (${spent - earlier:.4f} in this run, ${earlier:.4f} in earlier runs) and a call of "
                             f"{stage} could cost up to ${amount:.4f} (prompt bytes + max_tokens at the endpoint's "
                             f"prices), more than the ${max(self.caps[scope] - spent, 0.0):.4f} left")
        where = f"; the spend is kept in {self.ledger}" if self.ledger is not None else ""
        return ("; ".join(lines) + "; no LLM call was started past the cap" + where
                + ". Raise the cap and run the same command again: finished work and cached answers are not "
                  "paid for again")

    def as_dict(self) -> dict:
        """For the run report: caps, spend (build, this run, per stage) and the stop, if any."""
        self.flush()
        with self._lock:
            total = self.before + self.now
            return {
                "max_cost_usd": self.caps.get(TOTAL),
                "max_cost_usd_per_stage": {k: v for k, v in sorted(self.caps.items()) if k != TOTAL},
                "spent_usd": round(sum(total.values()), 6),
                "spent_this_run_usd": round(sum(self.now.values()), 6),
                "spent_by_stage_usd": {k: round(v, 6) for k, v in sorted(total.items())},
                "stopped_scopes": sorted(self._exhausted),
                "ledger": str(self.ledger) if self.ledger is not None else None,
            }

    # the ledger -----------------------------------------------------------------------------------
    def flush(self) -> None:
        """Add this run's unwritten spend to the ledger (re-read first, so two processes on one build both
        count)."""
        if self.ledger is None:
            return
        with self._lock:
            delta, self._unflushed = self._unflushed, Counter()
            self._flushed_at = time.monotonic()
            if not delta:
                return
            on_disk = Counter(read_ledger(self.ledger))
            on_disk.update(delta)
            write_ledger(self.ledger, on_disk)


def read_ledger(path: Optional[Path]) -> dict[str, float]:
    """Spend per stage recorded in a build's ledger ({} when there is none yet)."""
    if path is None or not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): float(v) for k, v in data["by_stage_usd"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{path}: not a babelrag spend ledger ({type(exc).__name__}: {exc}); it records what "
                         f"earlier runs of this build paid for LLM calls. Fix it, or delete it to start the "
                         f"budget from zero") from None


def write_ledger(path: Path, by_stage: Counter[str]) -> None:
    atomic_write_text(path, json.dumps({
        "version": LEDGER_VERSION, "currency": "USD",
        "total_usd": round(sum(by_stage.values()), 8),
        "by_stage_usd": {k: round(v, 8) for k, v in sorted(by_stage.items())},
        "note": "what LLM calls of this build cost over all runs; llm.max_cost_usd caps it. Delete this file "
                "to start the budget from zero.",
    }, indent=2, sort_keys=True))


def call_reservation(ep: EndpointConfig, prompt_tokens: int, completion_tokens: Optional[int]) -> float:
    """The most a call with these token bounds can cost at the endpoint's prices."""
    out = UNBOUNDED_COMPLETION_TOKENS if completion_tokens is None else completion_tokens
    return prompt_tokens / 1000 * ep.price_per_1k_input + out / 1000 * ep.price_per_1k_output
