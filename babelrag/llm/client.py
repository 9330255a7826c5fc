"""Async client for OpenAI-compatible endpoints, plus ``LLMRunner``: the synchronous facade stage code calls.

Per endpoint: bounded concurrency (semaphore), RPM/TPM limiter, our own retry loop (the SDK's is off),
one JSON-repair re-ask for structured chains, and the disk cache. Every item ends as a ``Result`` —
success or a failure with a reason — in input order; nothing is dropped, nothing raises mid-run.
"""
from __future__ import annotations

import asyncio
import functools
import json
import os
import random
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping, Optional, Sequence, TypeVar

from pydantic import BaseModel, ValidationError

from babelrag.console import stream_progress
from babelrag.errors import InputError
from babelrag.failed_items import MISALIGNED, is_retryable
from babelrag.llm.budget import Budget, BudgetExhausted, call_reservation, prompt_token_bound
from babelrag.llm.cache import ResponseCache, cache_key
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.llm.limiter import EndpointLimiter
from babelrag.llm.prompts import Message, Prompt
from babelrag.llm.retry import Failure, backoff_delay, classify
from babelrag.llm.transport import make_transport
from babelrag.llm.usage import Usage
from babelrag.records import ErrorRecord, Provenance
from babelrag.store import BuildStore

T = TypeVar("T")
REPAIR_PROMPT = Prompt.beside(__file__, "repair_json.yaml")


@dataclass
class Result:
    """Outcome of one item. ``value`` is a schema instance (structured), str (text) or vector (embed)."""

    item_id: str
    ok: bool
    value: Any = None
    error: Optional[str] = None  # "<reason>: <detail>" when ok is False
    reason: Optional[str] = None  # short category: rate_limit, timeout, invalid_json, auth, ...
    raw: str = ""
    usage: dict = field(default_factory=dict)  # tokens spent by this item's calls (0 when cached)
    cached: bool = False
    attempts: int = 0  # HTTP calls made for this item (retries and repair included)
    endpoint: str = ""
    model: str = ""
    prompt_id: str = ""
    prompt_version: str = ""

    def provenance(self, config_hash: str = ""):
        """Provenance for the record built from this result."""
        return Provenance(model=self.model, endpoint=self.endpoint, prompt_id=self.prompt_id,
                          prompt_version=self.prompt_version, config_hash=config_hash)

    @property
    def retryable(self) -> bool:
        """A failed item the next run retries (the endpoint did not answer), not a final outcome."""
        return not self.ok and is_retryable(self.reason)

    def error_record(self, stage: str):
        """ErrorRecord for a failed item (the run report counts them by reason)."""
        return ErrorRecord(id=f"{stage}:{self.item_id}", stage=stage, item_id=self.item_id,
                           reason=self.reason or "unknown", detail=self.error or "")


class CallFailed(Exception):
    """Internal: a call gave up (permanent error, or retries exhausted)."""

    def __init__(self, failure: Failure, attempts: int) -> None:
        super().__init__(failure.message)
        self.failure = failure
        self.attempts = attempts


_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?```\s*$", re.S)


def parse_structured(text: str, schema: type[BaseModel], context: Optional[Mapping[str, Any]] = None,
                     ) -> tuple[Optional[BaseModel], Optional[str], str]:
    """Parse model output into ``schema``: (value, None, "") or (None, error message, reason). ``context`` is
    pydantic's validation context: what a schema's validators check a reply against beyond its shape (the
    sentences a support reply must align with); a reply that fails them is a schema failure like any other
    (repair re-ask, then a final unreadable reply). Its reason is ``schema``, or ``misaligned`` when every
    error is a ``MISALIGNED`` one (a reply of the right shape that does not line up with its input)."""
    body = text or ""
    m = _FENCE.match(body)
    if m:
        body = m.group(1)
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        start, end = body.find("{"), body.rfind("}")
        if start == -1 or end <= start:
            return None, f"not JSON ({exc.msg} at char {exc.pos})", "invalid_json"
        try:
            obj = json.loads(body[start:end + 1])
        except json.JSONDecodeError as exc2:
            return None, f"not JSON ({exc2.msg} at char {exc2.pos + start})", "invalid_json"
    try:
        return schema.model_validate(obj, context=context), None, ""
    except ValidationError as exc:
        errors = exc.errors()
        errs = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in errors[:5])
        reason = MISALIGNED if all(e["type"] == MISALIGNED for e in errors) else "schema"
        return None, f"JSON does not match schema {schema.__name__} ({errs})", reason


def _estimate_tokens(messages: Sequence[Message], max_tokens: Optional[int]) -> int:
    chars = sum(len(m.get("content") or "") for m in messages)
    return chars // 4 + 8 * len(messages) + (max_tokens or 256)


@dataclass
class _Endpoint:
    name: str
    cfg: EndpointConfig
    client: Any
    sem: asyncio.Semaphore
    limiter: EndpointLimiter
    secret: str
    json_mode: bool = True  # switched off for this run if the server rejects response_format
    streak: int = 0  # failed calls in a row that say the endpoint is unreachable or broken
    down: str = ""  # why the endpoint was given up on for this run ("" while it is not)


#: call failures that count towards giving an endpoint up (it did not answer, or answered 5xx), and
#: answers that show it is up (a 429 or a 4xx comes from a working server) and end the streak
DOWN_SIGNS = frozenset({"connection", "timeout", "server_error"})
UP_SIGNS = frozenset({"rate_limit", "http_409", "auth", "quota", "bad_request", "not_found"})


class AsyncLLM:
    """One per event loop: owns the endpoints' HTTP transports. Use ``async with`` or call ``aclose``."""

    def __init__(self, settings: LLMSettings, cache: Optional[ResponseCache] = None,
                 usage: Optional[Usage] = None, *, limiter_period_s: float = 60.0,
                 seed: Optional[int] = None, budget: Optional[Budget] = None) -> None:
        self.settings = settings
        self.cache = cache
        self.usage = usage if usage is not None else Usage(settings)
        self.budget = budget
        self._period = limiter_period_s
        self._rng = random.Random(seed)
        self._eps: dict[str, _Endpoint] = {}

    async def __aenter__(self) -> "AsyncLLM":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for ep in self._eps.values():
            await ep.client.close()
        self._eps.clear()

    def endpoint(self, name: Optional[str]) -> _Endpoint:
        resolved, cfg = self.settings.endpoint(name)
        ep = self._eps.get(resolved)
        if ep is None:
            secret = cfg.api_key(resolved)
            client = make_transport(cfg.transport, cfg.base_url, secret, cfg.timeout_s)
            ep = _Endpoint(resolved, cfg, client, asyncio.Semaphore(cfg.max_concurrency),
                           EndpointLimiter(cfg.rpm, cfg.tpm, self._period),
                           secret if cfg.api_key_env else "", json_mode=cfg.json_mode)
            self._eps[resolved] = ep
        return ep

    def endpoints_down(self) -> dict[str, str]:
        """Endpoints given up on (name -> why): ``max_consecutive_failures`` calls in a row failed."""
        return {name: ep.down for name, ep in list(self._eps.items()) if ep.down}

    def reset_health(self) -> None:
        for ep in list(self._eps.values()):
            ep.streak, ep.down = 0, ""

    def _health(self, ep: _Endpoint, failure: Failure) -> None:
        """Count failures in a row; at ``max_consecutive_failures`` the endpoint is down for this run:
        every waiting and later call fails at once (reason ``endpoint_down``) instead of spending each
        item's retries (an endpoint that hangs costs timeout_s per try)."""
        if failure.reason in UP_SIGNS:
            ep.streak = 0
            return
        if failure.reason not in DOWN_SIGNS:
            return
        ep.streak += 1
        limit = ep.cfg.max_consecutive_failures
        if limit and ep.streak >= limit and not ep.down:
            ep.down = (f"endpoint {ep.name!r} ({ep.cfg.base_url}) failed {ep.streak} calls in a row "
                       f"(last: {failure.reason}: {failure.message[:200]}); babelrag gave up on it for this run "
                       f"— check that it is up, then run again (llm.endpoints.{ep.name}.max_consecutive_failures "
                       f"= {limit} sets when to give up)")

    def _check_up(self, ep: _Endpoint, attempts: int) -> None:
        if ep.down:
            raise CallFailed(Failure("endpoint_down", False, ep.down), attempts)

    def _redact(self, ep: _Endpoint, text: str) -> str:
        return text.replace(ep.secret, "***") if ep.secret else text

    async def _reserve(self, ep: _Endpoint, stage: str, bound: tuple[int, Optional[int]], attempts: int) -> Any:
        """Hold the most this attempt can cost against the budget (``babelrag.llm.budget``): wait while calls
        in flight hold the room it needs, fail the call with reason ``budget`` when the spend leaves none."""
        if self.budget is None:
            return None
        amount = call_reservation(ep.cfg, *bound)
        delay = 0.005
        while True:
            try:
                held = self.budget.reserve(stage, amount)
            except BudgetExhausted as exc:
                raise CallFailed(Failure("budget", False, str(exc)), attempts) from None
            if held is not None:
                return held
            await asyncio.sleep(delay)  # a call in flight settles (on this loop or another runner's)
            delay = min(delay * 2, 0.1)

    async def _with_retries(self, ep: _Endpoint, stage: str, est_tokens: int,
                            send: Callable[[], Awaitable[tuple[T, dict]]], *,
                            repair: bool = False,
                            bound: tuple[int, Optional[int]] = (0, 0)) -> tuple[T, dict, int]:
        """Run ``send`` under the endpoint's limits and the budget; retry transient failures with backoff.
        ``bound``: at most this many (prompt, completion) tokens per attempt (None: no max_tokens)."""
        cfg = ep.cfg
        limiter = ep.limiter
        attempts = 0
        while True:
            self._check_up(ep, attempts)
            async with ep.sem:
                self._check_up(ep, attempts)  # it may have gone down while this call waited for a slot
                held = await self._reserve(ep, stage, bound, attempts)
                entry = await limiter.acquire(est_tokens) if limiter.active else None
                attempts += 1
                try:
                    value, usage = await send()
                except Exception as exc:  # classified below; nothing escapes as a crash
                    failure = classify(exc)
                    failure = Failure(failure.reason, failure.transient,
                                      self._redact(ep, failure.message), failure.retry_after)
                    ep.limiter.settle(entry, est_tokens)
                    self.usage.record_call(stage, ep.name, cfg.model, retry=attempts > 1,
                                           repair=repair and attempts == 1)
                    if self.budget is not None:
                        self.budget.settle(held, stage, 0.0)
                    self._health(ep, failure)
                except BaseException:  # cancelled (an interrupt): the reservation goes with the run
                    if self.budget is not None:
                        self.budget.settle(held, stage, 0.0)
                    raise
                else:
                    ep.streak = 0
                    tokens = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
                    ep.limiter.settle(entry, tokens)
                    cost = self.usage.record_call(stage, ep.name, cfg.model, retry=attempts > 1,
                                                  repair=repair and attempts == 1,
                                                  prompt_tokens=usage.get("prompt_tokens", 0),
                                                  completion_tokens=usage.get("completion_tokens", 0))
                    if self.budget is not None:
                        self.budget.settle(held, stage, cost)
                    return value, usage, attempts
            if not failure.transient or attempts > cfg.max_retries:
                raise CallFailed(failure, attempts)
            await asyncio.sleep(backoff_delay(attempts - 1, cfg.retry_backoff_s, cfg.retry_backoff_max_s,
                                              failure.retry_after, self._rng))

    async def _chat(self, ep: _Endpoint, messages: list[Message], params: dict, stage: str,
                    repair: bool = False) -> tuple[str, dict, int]:
        # Our messages and params are plain JSON already (no SDK request/response models: see
        # transport.py); the reply is read defensively below.
        body = {"model": ep.cfg.model, "messages": messages, **params}

        async def send() -> tuple[str, dict]:
            resp = await ep.client.post("/chat/completions", body)
            if not isinstance(resp, dict) or not resp.get("choices"):
                raise ValueError(f"chat response without choices: {str(resp)[:200]}")
            text = (resp["choices"][0].get("message") or {}).get("content") or ""
            u = resp.get("usage") or {}
            usage = {"prompt_tokens": int(u.get("prompt_tokens") or 0),
                     "completion_tokens": int(u.get("completion_tokens") or 0)}
            return text, usage

        bound = (prompt_token_bound([m.get("content") or "" for m in messages]), params.get("max_tokens"))
        return await self._with_retries(ep, stage, _estimate_tokens(messages, params.get("max_tokens")),
                                        send, repair=repair, bound=bound)

    def _params(self, ep: _Endpoint, prompt: Optional[Prompt], sampling: Optional[dict],
                json_mode: bool) -> dict:
        params = ep.cfg.sampling()
        if prompt is not None:
            params.update(prompt.sampling)
        params.update(sampling or {})
        params = {k: v for k, v in params.items() if v is not None}
        if json_mode and ep.cfg.json_mode:  # as configured: the cache key must not depend on fallbacks
            params["response_format"] = {"type": "json_object"}
        return params

    def _key(self, ep: _Endpoint, kind: str, payload: Any, params: dict, prompt_ref: str,
             schema_name: str) -> str:
        return cache_key(base_url=ep.cfg.identity, model=ep.cfg.model, kind=kind, payload=payload,
                         params=params, prompt_ref=prompt_ref, schema_name=schema_name)

    async def complete(self, *, endpoint: Optional[str], messages: list[Message], stage: str,
                       item_id: str = "", prompt: Optional[Prompt] = None,
                       schema: Optional[type[BaseModel]] = None, sampling: Optional[dict] = None,
                       schema_hint: bool = True, context: Optional[Mapping[str, Any]] = None) -> Result:
        """One chat item: cache → call (retries) → parse → one repair → cache. Never raises. A reply still
        unusable after the repair is cached as such (``ResponseCache.put_unreadable``) and answered from
        there next time, unless ``llm.retry_unreadable`` is set. ``context``: the schema's validation context
        (``parse_structured``)."""
        ep = self.endpoint(endpoint)
        prompt_ref = prompt.ref if prompt else ""
        base = dict(item_id=item_id, endpoint=ep.name, model=ep.cfg.model,
                    prompt_id=prompt.id if prompt else "", prompt_version=prompt.version if prompt else "")
        try:
            if schema is not None and schema_hint:
                messages = _with_schema_hint(messages, schema)
            params = self._params(ep, prompt, sampling, json_mode=schema is not None)
            key = ""
            hit = None
            if self.cache is not None:
                key = self._key(ep, "chat", messages, params, prompt_ref, schema.__name__ if schema else "")
                hit = self.cache.get(key)
            if hit is not None:
                raw, _ = hit
                value = raw
                if schema is not None:
                    value, err, _ = parse_structured(raw, schema, context)
                if value is not None:
                    self.usage.record_item(stage, ep.name, ep.cfg.model, ok=True, cached=True)
                    return Result(ok=True, value=value, raw=raw, cached=True,
                                  usage={"prompt_tokens": 0, "completion_tokens": 0}, **base)
            if schema is not None and self.cache is not None and not self.settings.retry_unreadable:
                final = self.cache.get_unreadable(key)
                if final is not None:  # answered before, unusable after the repair: the same final outcome
                    self.usage.record_item(stage, ep.name, ep.cfg.model, ok=False, cached=True, reason=final.reason)
                    return Result(ok=False, error=final.error, reason=final.reason, raw=final.raw, cached=True,
                                  usage={"prompt_tokens": 0, "completion_tokens": 0}, **base)
            if not ep.json_mode:  # an earlier item found the server rejects JSON mode
                params = {k: v for k, v in params.items() if k != "response_format"}
            try:
                raw, usage, attempts = await self._chat(ep, messages, params, stage)
            except CallFailed as exc:
                if not (exc.failure.reason == "bad_request" and "response_format" in params
                        and "response_format" in exc.failure.message):
                    raise
                # the server does not do JSON mode: go on without it (schema hint + repair remain)
                ep.json_mode = False
                params = {k: v for k, v in params.items() if k != "response_format"}
                raw, usage, attempts = await self._chat(ep, messages, params, stage)
                attempts += exc.attempts
            value: Any = raw
            if schema is not None:
                value, err, reason = parse_structured(raw, schema, context)
                if value is None:
                    repair_msgs = messages + [{"role": "assistant", "content": raw}] + REPAIR_PROMPT.render(
                        error=err, schema=_schema_json(schema, False))
                    raw2, usage2, attempts2 = await self._chat(ep, repair_msgs, params, stage, repair=True)
                    attempts += attempts2
                    usage = {k: usage.get(k, 0) + usage2.get(k, 0) for k in ("prompt_tokens", "completion_tokens")}
                    value, err2, reason2 = parse_structured(raw2, schema, context)
                    if value is None:
                        error = f"{reason2}: {err2} (after one repair attempt)"
                        if self.cache is not None:  # final: a re-run gets this outcome without paying again
                            self.cache.put_unreadable(key, model=ep.cfg.model, prompt_ref=prompt_ref,
                                                      reason=reason2, error=error, raw=raw2, usage=usage)
                        self.usage.record_item(stage, ep.name, ep.cfg.model, ok=False, cached=False,
                                               reason=reason2)
                        return Result(ok=False, error=error, reason=reason2, raw=raw2, usage=usage,
                                      attempts=attempts, **base)
                    raw = raw2
            if self.cache is not None:
                self.cache.put(key, kind="chat", model=ep.cfg.model, prompt_ref=prompt_ref, raw=raw, usage=usage)
            self.usage.record_item(stage, ep.name, ep.cfg.model, ok=True, cached=False)
            return Result(ok=True, value=value, raw=raw, usage=usage, attempts=attempts, **base)
        except CallFailed as exc:
            f = exc.failure
            self.usage.record_item(stage, ep.name, ep.cfg.model, ok=False, cached=False, reason=f.reason)
            detail = f"{f.reason}: {f.message}" + (f" (gave up after {exc.attempts} attempts)" if f.transient else "")
            return Result(ok=False, error=detail, reason=f.reason, attempts=exc.attempts, **base)
        except Exception as exc:  # a bug or an odd library error: keep the item, count it
            msg = self._redact(ep, f"{type(exc).__name__}: {exc}")[:500]
            self.usage.record_item(stage, ep.name, ep.cfg.model, ok=False, cached=False, reason="unexpected")
            return Result(ok=False, error=f"unexpected: {msg}", reason="unexpected", **base)

    async def embed_batch(self, *, endpoint: Optional[str], texts: list[str], item_ids: list[str],
                          stage: str) -> list[Result]:
        """Embed a batch; cached texts are not sent again. Never raises."""
        ep = self.endpoint(endpoint)
        base = dict(endpoint=ep.name, model=ep.cfg.model)
        keys = [self._key(ep, "embed", t, {}, "", "") for t in texts]
        out: list[Optional[Result]] = [None] * len(texts)
        todo: list[int] = []
        for i, k in enumerate(keys):
            hit = self.cache.get(k) if self.cache is not None else None
            if hit is not None:
                out[i] = Result(item_id=item_ids[i], ok=True, value=json.loads(hit[0]), cached=True, **base)
                self.usage.record_item(stage, ep.name, ep.cfg.model, ok=True, cached=True)
            else:
                todo.append(i)
        if todo:
            batch = [texts[i] for i in todo]

            async def send() -> tuple[list[list[float]], dict]:
                resp = await ep.client.post("/embeddings", {
                    "model": ep.cfg.model, "input": batch, "encoding_format": "float"})
                data = resp.get("data") if isinstance(resp, dict) else None
                if not isinstance(data, list):
                    raise ValueError(f"embeddings response without data: {str(resp)[:200]}")
                vecs = [d["embedding"] for d in sorted(data, key=lambda d: d.get("index", 0))]
                if len(vecs) != len(batch):
                    raise ValueError(f"server returned {len(vecs)} embeddings for {len(batch)} texts")
                pt = int((resp.get("usage") or {}).get("prompt_tokens") or 0)
                return vecs, {"prompt_tokens": pt, "completion_tokens": 0}

            try:
                est = sum(len(t) for t in batch) // 4 + len(batch)
                vecs, usage, attempts = await self._with_retries(ep, stage, est, send,
                                                                 bound=(prompt_token_bound(batch), 0))
                for i, vec in zip(todo, vecs):
                    if self.cache is not None:
                        self.cache.put(keys[i], kind="embed", model=ep.cfg.model, prompt_ref="",
                                       raw=json.dumps(vec), usage={})
                    out[i] = Result(item_id=item_ids[i], ok=True, value=vec, attempts=attempts, **base)
                    self.usage.record_item(stage, ep.name, ep.cfg.model, ok=True, cached=False)
                if todo:
                    out[todo[0]].usage = usage
            except CallFailed as exc:
                f = exc.failure
                for i in todo:
                    out[i] = Result(item_id=item_ids[i], ok=False, error=f"{f.reason}: {f.message}",
                                    reason=f.reason, attempts=exc.attempts, **base)
                    self.usage.record_item(stage, ep.name, ep.cfg.model, ok=False, cached=False, reason=f.reason)
        return out  # type: ignore[return-value]


@functools.lru_cache(maxsize=256)
def _schema_json(schema: type[BaseModel], sort_keys: bool) -> str:
    """The schema's JSON text, built once per schema: ``model_json_schema`` costs ~0.7 ms per call,
    which per item used to block the event loop for seconds when a large batch started (and the
    connect timers of the first requests in flight ran out meanwhile)."""
    return json.dumps(schema.model_json_schema(), ensure_ascii=False, sort_keys=sort_keys)


def _with_schema_hint(messages: list[Message], schema: type[BaseModel]) -> list[Message]:
    """Tell the model the exact JSON shape (JSON mode alone only guarantees *some* JSON)."""
    hint = ("Answer with one JSON object and nothing else. It must match this JSON schema: "
            + _schema_json(schema, True))
    out = [dict(m) for m in messages]
    if out and out[0]["role"] == "system":
        out[0]["content"] = out[0]["content"] + "\n\n" + hint
    else:
        out.insert(0, {"role": "system", "content": hint})
    return out


class _LoopThread:
    """One event loop in a daemon thread per runner: sync calls submit coroutines to it, so HTTP
    connections, semaphores and limiters live across calls (a fresh loop per call cost ~70 ms of
    client set-up, which stage code calling per batch would pay thousands of times)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._main, name="babelrag-llm-loop", daemon=True)
        self.thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Awaitable[T]) -> T:
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]
        try:
            return fut.result()
        except BaseException:  # Ctrl-C in the caller: cancel the in-flight work, keep what finished
            fut.cancel()
            raise

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
        if not self.loop.is_running() and not self.loop.is_closed():
            self.loop.close()


def _shutdown(loop: _LoopThread, llm: AsyncLLM) -> None:
    """Close the HTTP clients on their own loop, then stop the loop thread (best effort)."""
    if os.getpid() != getattr(loop, "pid", os.getpid()):
        return
    if llm.budget is not None:  # the last half second of spend, when the runner was never closed
        try:
            llm.budget.flush()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
    if threading.current_thread() is loop.thread:  # collected on the loop itself: cannot block here
        task = loop.loop.create_task(llm.aclose())
        task.add_done_callback(lambda _: loop.loop.stop())
        return
    try:
        if loop.thread.is_alive():
            loop.run(llm.aclose())
    except Exception:
        pass
    loop.stop()


class LLMRunner:
    """Synchronous facade: ``map_structured`` / ``map_text`` / ``embed`` over many items.

    Results come back in input order, one per item. Usage accumulates across calls in ``self.usage``.
    """

    def __init__(self, settings: LLMSettings, cache_dir: str | Path | None = None,
                 usage: Optional[Usage] = None, *, progress: Optional[bool] = None,
                 limiter_period_s: float = 60.0, seed: Optional[int] = None,
                 spend_ledger: str | Path | None = None) -> None:
        self.settings = settings
        self.usage = usage if usage is not None else Usage(settings)
        # the budget (``babelrag.llm.budget``): with a ledger the spend of every run is recorded there and
        # a cap counts all of it; without one a cap counts this runner's calls only
        capped = settings.max_cost_usd is not None or bool(settings.max_cost_usd_per_stage)
        self.budget = Budget(settings, Path(spend_ledger) if spend_ledger else None) \
            if capped or spend_ledger else None
        cache_dir = cache_dir if cache_dir is not None else settings.cache_dir
        self.cache = ResponseCache(cache_dir) if (settings.cache and cache_dir is not None) else None
        self.progress = settings.progress if progress is None else progress
        self._period = limiter_period_s
        self._seed = seed
        self._loop: Optional[_LoopThread] = None
        self._llm: Optional[AsyncLLM] = None
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def _client(self) -> AsyncLLM:
        return AsyncLLM(self.settings, self.cache, self.usage, limiter_period_s=self._period, seed=self._seed,
                        budget=self.budget)

    def _run(self, make: Callable[[AsyncLLM], Awaitable[T]]) -> T:
        """Run ``make(llm)`` on the runner's loop thread (started on first use)."""
        with self._lock:
            if self._loop is not None and self._pid != os.getpid():  # forked child: the thread is gone
                self._loop = self._llm = None
            if self._loop is None:
                import weakref

                self._loop = _LoopThread()
                self._llm = self._client()
                self._pid = os.getpid()
                # closes clients + loop when the runner is garbage-collected or at interpreter exit
                self._finalizer = weakref.finalize(self, _shutdown, self._loop, self._llm)
            loop, llm = self._loop, self._llm
        return loop.run(make(llm))  # type: ignore[arg-type]

    @staticmethod
    def _ids(n: int, item_ids: Optional[Sequence[str]]) -> list[str]:
        if item_ids is None:
            return [str(i) for i in range(n)]
        ids = [str(i) for i in item_ids]
        if len(ids) != n:
            raise InputError(f"got {n} items but {len(ids)} item_ids")
        if len(set(ids)) != n:
            dup = next(i for i in ids if ids.count(i) > 1)
            raise InputError(f"item_ids must be unique (duplicate {dup!r})")
        return ids

    def _bar(self, total: int, desc: str):
        """A bar on a terminal, a line every few seconds in a log (no carriage-return redraws), or nothing."""
        return stream_progress(total, desc, enabled=self.progress)

    async def amap_chat(self, *, endpoint: Optional[str], prompt: Prompt, items: Sequence[dict],
                        stage: str, schema: Optional[type[BaseModel]] = None,
                        item_ids: Optional[Sequence[str]] = None, sampling: Optional[dict] = None,
                        llm: Optional[AsyncLLM] = None,
                        contexts: Optional[Sequence[Mapping[str, Any]]] = None) -> list[Result]:
        """Async version of map_structured/map_text (schema None = free text)."""
        ids = self._ids(len(items), item_ids)
        if contexts is not None and len(contexts) != len(items):
            raise InputError(f"got {len(items)} items but {len(contexts)} validation contexts")
        messages = [prompt.render(**vars_) for vars_ in items]  # bad vars fail before any call
        own = llm is None
        llm = llm or self._client()
        try:
            ep_name = llm.endpoint(endpoint).name
            bar = self._bar(len(items), f"{stage} · {prompt.id} [{ep_name}]" if prompt.id != stage else f"{stage} [{ep_name}]")

            async def one(i: int) -> Result:
                res = await llm.complete(endpoint=endpoint, messages=messages[i], stage=stage,
                                         item_id=ids[i], prompt=prompt, schema=schema, sampling=sampling,
                                         context=None if contexts is None else contexts[i])
                bar.update(1)
                return res

            try:
                return list(await asyncio.gather(*(one(i) for i in range(len(items)))))
            finally:
                bar.close()
        finally:
            if own:
                await llm.aclose()

    def map_structured(self, *, endpoint: Optional[str], prompt: Prompt, items: Sequence[dict],
                       schema: type[BaseModel], stage: str, item_ids: Optional[Sequence[str]] = None,
                       sampling: Optional[dict] = None,
                       contexts: Optional[Sequence[Mapping[str, Any]]] = None) -> list[Result]:
        """Render ``prompt`` with each item's variables, call, parse into ``schema`` (``contexts``: each item's
        validation context, see ``parse_structured``)."""
        return self._run(lambda llm: self.amap_chat(endpoint=endpoint, prompt=prompt, items=items, stage=stage,
                                                    schema=schema, item_ids=item_ids, sampling=sampling, llm=llm,
                                                    contexts=contexts))

    def map_text(self, *, endpoint: Optional[str], prompt: Prompt, items: Sequence[dict], stage: str,
                 item_ids: Optional[Sequence[str]] = None, sampling: Optional[dict] = None) -> list[Result]:
        """Like map_structured but the value is the reply text."""
        return self._run(lambda llm: self.amap_chat(endpoint=endpoint, prompt=prompt, items=items, stage=stage,
                                                    schema=None, item_ids=item_ids, sampling=sampling, llm=llm))

    async def aembed(self, *, endpoint: Optional[str], texts: Sequence[str], stage: str = "embed",
                     item_ids: Optional[Sequence[str]] = None, batch_size: int = 64,
                     llm: Optional[AsyncLLM] = None) -> list[Result]:
        """Async embed (pass ``llm`` to share clients; else a private one is opened and closed)."""
        ids = self._ids(len(texts), item_ids)
        own = llm is None
        llm = llm or self._client()
        try:
            ep_name = llm.endpoint(endpoint).name
            bar = self._bar(len(texts), f"{stage} [{ep_name}]")
            starts = range(0, len(texts), batch_size)

            async def one(s: int) -> list[Result]:
                res = await llm.embed_batch(endpoint=endpoint, texts=list(texts[s:s + batch_size]),
                                            item_ids=ids[s:s + batch_size], stage=stage)
                bar.update(len(res))
                return res

            try:
                parts = await asyncio.gather(*(one(s) for s in starts))
            finally:
                bar.close()
        finally:
            if own:
                await llm.aclose()
        return [r for part in parts for r in part]

    def embed(self, *, endpoint: Optional[str], texts: Sequence[str], stage: str = "embed",
              item_ids: Optional[Sequence[str]] = None, batch_size: int = 64) -> list[Result]:
        """Embed texts (value = list[float]); one Result per text, in order."""
        return self._run(lambda llm: self.aembed(endpoint=endpoint, texts=texts, stage=stage,
                                                 item_ids=item_ids, batch_size=batch_size, llm=llm))

    def endpoints_down(self) -> dict[str, str]:
        """Endpoints given up on in this run (``AsyncLLM.endpoints_down``)."""
        llm = self._llm
        return llm.endpoints_down() if llm is not None else {}

    def budget_stopped(self) -> str:
        """Why calls were refused by the budget in this runner's life ("" when none was)."""
        return self.budget.stopped() if self.budget is not None else ""

    def reset_endpoint_health(self) -> None:
        llm = self._llm
        if llm is not None:
            llm.reset_health()

    def close(self) -> None:
        """Close HTTP clients, stop the loop thread, release the cache. Idempotent."""
        with self._lock:
            finalizer = getattr(self, "_finalizer", None)
            self._loop = self._llm = self._finalizer = None
        if finalizer is not None:
            finalizer()  # runs _shutdown once
        if self.budget is not None:
            self.budget.flush()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> "LLMRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def runner_from_config(config: Any) -> LLMRunner:
    """The runner for a build config: cache under ``<build_dir>/cache/llm`` unless llm.cache_dir is set."""
    settings: LLMSettings = config.llm
    store = BuildStore(config.build_dir)
    cache_dir = settings.cache_dir
    if cache_dir is not None and not Path(cache_dir).is_absolute() and hasattr(config, "resolve"):
        cache_dir = config.resolve(str(cache_dir))
    if cache_dir is None:
        cache_dir = store.llm_cache_dir
    return LLMRunner(settings, cache_dir, spend_ledger=store.llm_spend_path)
