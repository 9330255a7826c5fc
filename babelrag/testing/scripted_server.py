"""A scripted OpenAI-compatible HTTP server for tests and benchmarks.

Answers ``/v1/chat/completions`` from a response table (regex over the last user message -> reply) and
``/v1/embeddings`` with deterministic hash vectors, and injects faults at set, seeded rates: latency,
429 with Retry-After, 500, hangs (client timeouts), truncated HTTP bodies, truncated JSON content,
dropped connections, plus permanent errors (401, 400, insufficient_quota) on demand. Every request is
logged on arrival so tests and benches can compare the client's counts with what the server saw.

Fault decisions are a pure function of (seed, request content, how many times that content was seen),
so a run is reproducible whatever order concurrent requests arrive in.

In-process: ``with ScriptedServer(rules, faults=Faults(...)) as srv: srv.base_url``  (aiohttp in a
background thread). Own process (keeps server CPU off the client's GIL, used by benches):
``with ScriptedProcess(latency_s=0.2) as srv: ...`` or ``python -m babelrag.testing.scripted_server``.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import re
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

#: Fault kinds: transient ones are drawn by rate; permanent ones are used in rule sequences.
TRANSIENT_FAULTS = ("429", "500", "hang", "drop", "bad_body", "bad_json")
ALL_FAULTS = TRANSIENT_FAULTS + ("quota", "401", "403", "400", "404", "422")


@dataclass
class Fault:
    """A scripted failure for one request (use in ``Rule.sequence`` for exact scenarios)."""

    kind: str
    retry_after: Optional[float] = None  # seconds, for 429/500
    message: Optional[str] = None  # error message for 4xx/5xx bodies

    def __post_init__(self) -> None:
        if self.kind not in ALL_FAULTS:
            raise ValueError(f"unknown fault {self.kind!r}; choose from {ALL_FAULTS}")


Reply = Union[str, dict, list, Callable[[dict], Union[str, dict, list]]]


@dataclass
class Rule:
    """If ``pattern`` matches the last user message: answer ``reply`` (or walk ``sequence``).

    ``sequence`` scripts successive attempts for the same request content, e.g.
    ``[Fault("429", 0.1), Fault("500"), "ok"]``; the last element repeats.
    """

    pattern: str
    reply: Optional[Reply] = None
    sequence: Optional[Sequence[Union[Fault, Reply]]] = None

    def __post_init__(self) -> None:
        self._re = re.compile(self.pattern, re.S)
        if self.reply is None and not self.sequence:
            raise ValueError("Rule needs reply or sequence")


@dataclass
class Faults:
    """Random fault rates (each in [0, 1]; summed they must stay ≤ 1), applied to chat and embeddings."""

    latency_s: float = 0.0
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_hang: float = 0.0
    rate_drop: float = 0.0
    rate_bad_body: float = 0.0
    rate_bad_json: float = 0.0  # chat only: 200 OK but the *content* is cut-off JSON
    retry_after_s: float = 0.1  # sent with 429 as Retry-After (+ retry-after-ms)
    hang_s: float = 30.0
    seed: int = 0

    def __post_init__(self) -> None:
        rates = [r for _, r in self.table()]
        if any(r < 0 or r > 1 for r in rates) or sum(rates) > 1 + 1e-9:
            raise ValueError(f"fault rates must lie in [0, 1] and sum to at most 1 (got {rates})")

    @classmethod
    def mixed(cls, rate: float, **kw: Any) -> "Faults":
        """``rate`` split evenly across all transient fault kinds."""
        share = rate / len(TRANSIENT_FAULTS)
        return cls(rate_429=share, rate_500=share, rate_hang=share, rate_drop=share,
                   rate_bad_body=share, rate_bad_json=share, **kw)

    def table(self) -> list[tuple[str, float]]:
        return [("429", self.rate_429), ("500", self.rate_500), ("hang", self.rate_hang),
                ("drop", self.rate_drop), ("bad_body", self.rate_bad_body), ("bad_json", self.rate_bad_json)]


def hash_embedding(text: str, dim: int = 16) -> list[float]:
    """Deterministic unit vector from a text's sha256 (equal texts -> equal vectors)."""
    raw = b""
    counter = 0
    while len(raw) < 4 * dim:
        raw += hashlib.sha256(f"{counter}:{text}".encode()).digest()
        counter += 1
    ints = struct.unpack(f"<{dim}I", raw[: 4 * dim])
    vec = [(i / 2**32) * 2 - 1 for i in ints]
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


def _unit(seed: int, key: str, attempt: int) -> float:
    h = hashlib.sha256(f"{seed}|{key}|{attempt}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def _ntok(text: str) -> int:
    return max(1, len(text.split()))


class _App:
    """The aiohttp application and its state (shared by the thread and process front-ends)."""

    def __init__(self, rules: Union[Sequence[Rule], Callable[[dict], Any], None], faults: Faults,
                 default_reply: Reply, embedding_dim: int) -> None:
        self.rules = rules
        self.faults = faults
        self.default_reply = default_reply
        self.dim = embedding_dim
        self.log: list[dict] = []
        self.seen: dict[str, int] = defaultdict(int)
        self.lock = threading.Lock()

    # --- decisions -------------------------------------------------------------------------
    def _attempt(self, key: str) -> int:
        with self.lock:
            n = self.seen[key]
            self.seen[key] += 1
            return n

    def _random_fault(self, key: str, attempt: int, chat: bool) -> Optional[Fault]:
        u = _unit(self.faults.seed, key, attempt)
        acc = 0.0
        for kind, rate in self.faults.table():
            acc += rate
            if u < acc:
                if kind == "bad_json" and not chat:
                    return Fault("bad_body")
                return Fault(kind, self.faults.retry_after_s if kind == "429" else None)
        return None

    def _pick(self, last_user: str, body: dict, key: str, attempt: int) -> Union[Fault, Reply]:
        rules = self.rules
        if callable(rules):
            return rules(body)
        for rule in rules or ():
            if rule._re.search(last_user):
                if rule.sequence:
                    seq = list(rule.sequence)
                    return seq[min(attempt, len(seq) - 1)]
                return rule.reply  # type: ignore[return-value]
        return self.default_reply

    # --- handlers --------------------------------------------------------------------------
    def build(self):
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/v1/embeddings", self.embeddings)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/_scripted/log", self.get_log)
        app.router.add_post("/_scripted/reset", self.reset)
        return app

    async def models(self, request):
        from aiohttp import web

        return web.json_response({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    async def get_log(self, request):
        from aiohttp import web

        with self.lock:
            entries = list(self.log)
        if request.query.get("full"):
            return web.json_response(entries)
        return web.json_response(summarize(entries))

    async def reset(self, request):
        from aiohttp import web

        with self.lock:
            self.log.clear()
            self.seen.clear()
        return web.json_response({"ok": True})

    def _enter(self, path: str, key: str, attempt: int, last_user: str, model: str) -> dict:
        entry = {"t": time.time(), "path": path, "key": key, "attempt": attempt, "model": model,
                 "last_user": last_user[:200], "fault": "", "status": 0,
                 "auth": "", "content_chars": 0, "t_end": None}
        with self.lock:
            self.log.append(entry)
        return entry

    async def _fault_response(self, request, fault: Fault, entry: dict, ok_body: Callable[[], dict]):
        from aiohttp import web

        entry["fault"] = fault.kind
        kind = fault.kind
        if kind == "429" or kind == "500":
            headers = {}
            if fault.retry_after is not None:
                headers = {"Retry-After": str(max(1, int(round(fault.retry_after)))),
                           "retry-after-ms": str(int(fault.retry_after * 1000))}
            status = int(kind)
            entry["status"] = status
            msg = "Rate limit reached, slow down" if status == 429 else "Internal server error"
            return web.json_response({"error": {"message": msg, "type": "server_error" if status == 500
                                                else "rate_limit_error", "code": None}},
                                     status=status, headers=headers)
        if kind == "quota":
            entry["status"] = 429
            return web.json_response({"error": {"message": "You exceeded your current quota.",
                                                "type": "insufficient_quota", "code": "insufficient_quota"}},
                                     status=429)
        if kind in ("401", "403", "400", "404", "422"):
            entry["status"] = int(kind)
            msg = fault.message or f"scripted {kind}"
            if kind == "401" and not fault.message:  # like real providers: echo (part of) the key that was sent
                msg = "Incorrect API key provided: " + request.headers.get("Authorization", "")[7:]
            return web.json_response({"error": {"message": msg, "type": "invalid_request_error",
                                                "code": None}}, status=int(kind))
        if kind == "hang":
            await asyncio.sleep(self.faults.hang_s)
            entry["status"] = 200
            return web.json_response(ok_body())
        if kind == "drop":
            entry["status"] = -1
            request.transport.abort() if hasattr(request.transport, "abort") else request.transport.close()
            raise asyncio.CancelledError()  # nothing more to send on a dead connection
        if kind == "bad_body":
            entry["status"] = 200
            text = json.dumps(ok_body())
            return web.Response(body=text[: len(text) // 2].encode(), content_type="application/json")
        raise AssertionError(kind)

    async def chat(self, request):
        return await self._timed(self._chat, request)

    async def embeddings(self, request):
        return await self._timed(self._embeddings, request)

    async def _timed(self, handler, request):
        """Run a handler and stamp ``t_end`` on its log entry (for concurrency checks)."""
        request["entry"] = None
        try:
            return await handler(request)
        finally:
            if request.get("entry") is not None:
                request["entry"]["t_end"] = time.time()

    async def _chat(self, request):
        from aiohttp import web

        body = await request.json()
        messages = body.get("messages") or []
        last_user = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        if isinstance(last_user, list):  # content parts
            last_user = " ".join(p.get("text", "") for p in last_user if isinstance(p, dict))
        key = hashlib.sha256(json.dumps(["chat", messages], sort_keys=True).encode()).hexdigest()[:16]
        attempt = self._attempt(key)
        entry = self._enter("chat", key, attempt, last_user, str(body.get("model", "")))
        request["entry"] = entry
        entry["auth"] = request.headers.get("Authorization", "")[:7]  # scheme only, never the key
        if self.faults.latency_s:
            await asyncio.sleep(self.faults.latency_s)
        picked: Any = self._random_fault(key, attempt, chat=True)
        if picked is None:
            picked = self._pick(last_user, body, key, attempt)
        if callable(picked) and not isinstance(picked, Fault):
            picked = picked(body)
        if isinstance(picked, Fault) and picked.kind == "bad_json":
            real = self._pick(last_user, body, key, attempt)
            real = real(body) if callable(real) and not isinstance(real, Fault) else real
            text = real if isinstance(real, str) else json.dumps(real) if not isinstance(real, Fault) else "{}"
            text = text[: max(1, len(text) // 2)]  # cut-off JSON, e.g. a max_tokens stop
            entry["fault"] = "bad_json"
            picked = text
        if isinstance(picked, Fault):
            return await self._fault_response(
                request, picked, entry, lambda: self._completion(body, "{}", messages))
        text = picked if isinstance(picked, str) else json.dumps(picked, ensure_ascii=False)
        entry["status"] = 200
        entry["content_chars"] = len(text)
        return web.json_response(self._completion(body, text, messages))

    def _completion(self, body: dict, text: str, messages: list) -> dict:
        prompt_tokens = sum(_ntok(str(m.get("content") or "")) for m in messages)
        return {
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": _ntok(text),
                      "total_tokens": prompt_tokens + _ntok(text)},
        }

    async def _embeddings(self, request):
        from aiohttp import web

        body = await request.json()
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        key = hashlib.sha256(json.dumps(["emb", inputs]).encode()).hexdigest()[:16]
        attempt = self._attempt(key)
        entry = self._enter("embed", key, attempt, (inputs or [""])[0], str(body.get("model", "")))
        request["entry"] = entry
        if self.faults.latency_s:
            await asyncio.sleep(self.faults.latency_s)

        def ok() -> dict:
            data = []
            for i, text in enumerate(inputs or []):
                vec = hash_embedding(str(text), self.dim)
                if body.get("encoding_format") == "base64":
                    emb: Any = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
                else:
                    emb = vec
                data.append({"object": "embedding", "index": i, "embedding": emb})
            ntok = sum(_ntok(str(t)) for t in inputs or [])
            return {"object": "list", "data": data, "model": body.get("model", "scripted"),
                    "usage": {"prompt_tokens": ntok, "total_tokens": ntok}}

        fault = self._random_fault(key, attempt, chat=False)
        if fault is None and self.rules and not callable(self.rules):
            for rule in self.rules:
                if rule.sequence and rule._re.search(entry["last_user"]):
                    step = list(rule.sequence)[min(attempt, len(rule.sequence) - 1)]
                    fault = step if isinstance(step, Fault) else None
                    break
        if fault is not None:
            return await self._fault_response(request, fault, entry, ok)
        entry["status"] = 200
        return web.json_response(ok())


def summarize(entries: list[dict]) -> dict:
    """Counts by path and fault (what benches compare with the client's usage report)."""
    return {
        "requests": len(entries),
        "by_path": dict(Counter(e["path"] for e in entries)),
        "by_fault": dict(Counter(e["fault"] or "ok" for e in entries)),
        "unique_keys": len({e["key"] for e in entries}),
    }


class ScriptedServer:
    """In-process server on 127.0.0.1 (aiohttp in a daemon thread). Context manager."""

    def __init__(self, rules: Union[Sequence[Rule], Callable[[dict], Any], None] = None,
                 faults: Optional[Faults] = None, *, default_reply: Reply = "OK", port: int = 0,
                 embedding_dim: int = 16) -> None:
        self.state = _App(rules, faults or Faults(), default_reply, embedding_dim)
        self.port = port
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._runner = None
        self._ready = threading.Event()
        self._error: Optional[BaseException] = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def log(self) -> list[dict]:
        with self.state.lock:
            return list(self.state.log)

    def count(self, path: Optional[str] = None, fault: Optional[str] = None) -> int:
        """Requests seen (optionally only one path 'chat'/'embed' or one fault kind, 'ok' for none)."""
        return sum(1 for e in self.log if (path is None or e["path"] == path)
                   and (fault is None or (e["fault"] or "ok") == fault))

    def reset_log(self) -> None:
        with self.state.lock:
            self.state.log.clear()
            self.state.seen.clear()

    def set_faults(self, faults: Faults) -> None:
        """Change the fault rates from now on (an endpoint that recovers, or starts failing, mid-test)."""
        with self.state.lock:
            self.state.faults = faults

    def start(self) -> "ScriptedServer":
        self._thread = threading.Thread(target=self._serve, name="scripted-server", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error:
            raise self._error
        return self

    def _serve(self) -> None:
        from aiohttp import web

        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)

        async def up() -> None:
            self._runner = web.AppRunner(self.state.build(), shutdown_timeout=0.2, access_log=None,
                                         handler_cancellation=True)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=1024)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

        try:
            loop.run_until_complete(up())
        except BaseException as exc:  # reported to start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        loop.run_forever()
        loop.run_until_complete(self._runner.cleanup())
        loop.close()

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class ScriptedProcess:
    """The same server in its own process (CLI), for benches: only fault rates + a fixed reply."""

    def __init__(self, faults: Optional[Faults] = None, *, default_reply: str = "OK", port: int = 0) -> None:
        self.faults = faults or Faults()
        self.default_reply = default_reply
        self.port = port
        self.proc: Optional[subprocess.Popen] = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "ScriptedProcess":
        f = self.faults
        cmd = [sys.executable, "-m", "babelrag.testing.scripted_server", "--port", str(self.port),
               "--latency", str(f.latency_s), "--seed", str(f.seed), "--hang-s", str(f.hang_s),
               "--retry-after", str(f.retry_after_s), "--reply", self.default_reply]
        for kind, rate in f.table():
            cmd += [f"--rate-{kind.replace('_', '-')}", str(rate)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.stop()
            raise RuntimeError(f"scripted server did not start (said {line!r})")
        self.port = int(m.group(1))
        return self

    def summary(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_scripted/log", timeout=30) as r:
            return json.loads(r.read())

    def entries(self) -> list[dict]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_scripted/log?full=1", timeout=60) as r:
            return json.loads(r.read())

    def reset_log(self) -> None:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/_scripted/reset", method="POST", data=b"")
        urllib.request.urlopen(req, timeout=30).read()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def __enter__(self) -> "ScriptedProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _load_rules(path: str) -> list[Rule]:
    import yaml

    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or []
    return [Rule(pattern=r["match"], reply=r["reply"]) for r in data]


def main(argv: Optional[list[str]] = None) -> None:
    p = argparse.ArgumentParser(prog="python -m babelrag.testing.scripted_server",
                                description="Scripted OpenAI-compatible server with fault injection.")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--rules", help="YAML list of {match: REGEX, reply: TEXT|OBJECT}")
    p.add_argument("--reply", default="OK", help="reply when no rule matches")
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--fault-rate", type=float, default=None, help="mixed transient faults at this total rate")
    for kind in TRANSIENT_FAULTS:
        p.add_argument(f"--rate-{kind.replace('_', '-')}", type=float, default=0.0)
    p.add_argument("--retry-after", type=float, default=0.1)
    p.add_argument("--hang-s", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    common = dict(latency_s=a.latency, retry_after_s=a.retry_after, hang_s=a.hang_s, seed=a.seed)
    if a.fault_rate is not None:
        faults = Faults.mixed(a.fault_rate, **common)
    else:
        faults = Faults(rate_429=a.rate_429, rate_500=a.rate_500, rate_hang=a.rate_hang,
                        rate_drop=a.rate_drop, rate_bad_body=a.rate_bad_body,
                        rate_bad_json=a.rate_bad_json, **common)
    reply: Reply = a.reply
    try:
        reply = json.loads(a.reply) if a.reply.strip().startswith("{") else a.reply
    except json.JSONDecodeError:
        pass
    srv = ScriptedServer(_load_rules(a.rules) if a.rules else None, faults, default_reply=reply, port=a.port)
    srv.start()
    print(f"scripted server listening on http://127.0.0.1:{srv.port}/v1", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    main()
