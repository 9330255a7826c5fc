"""Token, cost and outcome accounting per (stage, endpoint) for the run report and build manifest."""
from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from babelrag.llm.settings import LLMSettings


@dataclass
class UsageRow:
    """Counters for one (stage, endpoint)."""

    model: str = ""
    items: int = 0  # items (requests from the chain's point of view) finished
    calls: int = 0  # HTTP attempts that went out (first tries + retries + repairs)
    retries: int = 0
    repairs: int = 0  # re-asks after invalid JSON / schema
    cached: int = 0  # items answered from the disk cache (no call)
    succeeded: int = 0
    failed: int = 0
    failures: Counter = field(default_factory=Counter)  # reason -> count
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


class Usage:
    """Thread-safe accumulator; ``as_dict()`` is JSON-ready (no keys, only names and numbers)."""

    def __init__(self, settings: Optional[LLMSettings] = None) -> None:
        self._settings = settings
        self._rows: dict[tuple[str, str], UsageRow] = {}
        self._lock = threading.Lock()

    def _row(self, stage: str, endpoint: str, model: str = "") -> UsageRow:
        row = self._rows.get((stage, endpoint))
        if row is None:
            row = self._rows[(stage, endpoint)] = UsageRow(model=model)
        if model and not row.model:
            row.model = model
        return row

    def _price(self, endpoint: str) -> tuple[float, float]:
        if self._settings and endpoint in self._settings.endpoints:
            ep = self._settings.endpoints[endpoint]
            return ep.price_per_1k_input, ep.price_per_1k_output
        return 0.0, 0.0

    def record_call(self, stage: str, endpoint: str, model: str, *, retry: bool = False,
                    repair: bool = False, prompt_tokens: int = 0, completion_tokens: int = 0) -> float:
        """One HTTP attempt went out (tokens are those the server reported, 0 if it failed); returns its
        cost (for the budget)."""
        p_in, p_out = self._price(endpoint)
        cost = prompt_tokens / 1000 * p_in + completion_tokens / 1000 * p_out
        with self._lock:
            row = self._row(stage, endpoint, model)
            row.calls += 1
            row.retries += int(retry)
            row.repairs += int(repair)
            row.prompt_tokens += prompt_tokens
            row.completion_tokens += completion_tokens
            row.cost += cost
        return cost

    def record_item(self, stage: str, endpoint: str, model: str, *, ok: bool, cached: bool,
                    reason: Optional[str] = None) -> None:
        """One item finished (success or error result)."""
        with self._lock:
            row = self._row(stage, endpoint, model)
            row.items += 1
            row.cached += int(cached)
            if ok:
                row.succeeded += 1
            else:
                row.failed += 1
                row.failures[reason or "unknown"] += 1

    def rows(self) -> dict[tuple[str, str], UsageRow]:
        with self._lock:
            return dict(self._rows)

    def stage_totals(self, stage: str) -> dict:
        """Totals for one stage over all endpoints (for the stage's manifest entry)."""
        d = self.as_dict()["by_stage"].get(stage, {})
        # the model each endpoint served: the dataset card names the models that generated and judged
        out: dict = {"endpoints": sorted(d), "models": {ep: row["model"] for ep, row in sorted(d.items())},
                     "failures": {}}
        for k in ("items", "calls", "retries", "repairs", "cached", "succeeded", "failed",
                  "prompt_tokens", "completion_tokens", "cost"):
            out[k] = sum(row[k] for row in d.values())
        for row in d.values():
            for reason, n in row["failures"].items():
                out["failures"][reason] = out["failures"].get(reason, 0) + n
        if d:
            out["cost"] = round(out["cost"], 6)
        return out

    def as_dict(self) -> dict:
        """``{"by_stage": {stage: {endpoint: {...}}}, "total": {...}}`` for reports and manifests."""
        by_stage: dict[str, dict[str, dict]] = {}
        total = Counter()
        total_cost = 0.0
        failures_total: Counter = Counter()
        with self._lock:
            for (stage, endpoint), r in sorted(self._rows.items()):
                d = {
                    "model": r.model, "items": r.items, "calls": r.calls, "retries": r.retries,
                    "repairs": r.repairs, "cached": r.cached, "succeeded": r.succeeded,
                    "failed": r.failed, "failures": dict(sorted(r.failures.items())),
                    "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
                    "cost": round(r.cost, 6),
                }
                by_stage.setdefault(stage, {})[endpoint] = d
                for k in ("items", "calls", "retries", "repairs", "cached", "succeeded", "failed",
                          "prompt_tokens", "completion_tokens"):
                    total[k] += d[k]
                total_cost += r.cost
                failures_total.update(r.failures)
        out_total = {k: total.get(k, 0) for k in ("items", "calls", "retries", "repairs", "cached",
                                                  "succeeded", "failed", "prompt_tokens",
                                                  "completion_tokens")}
        out_total["cost"] = round(total_cost, 6)
        out_total["failures"] = dict(sorted(failures_total.items()))
        return {"by_stage": by_stage, "total": out_total}
