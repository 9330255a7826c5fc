"""Throughput of the LLM client against its physical limit.

The scripted endpoint (own process) answers every request after a fixed 200 ms. With concurrency C
the best possible rate is C / 0.2 s; we report completed requests/s divided by that (target ≥ 0.9)
and the client's CPU time per request. Cache off, so every item is a real HTTP round trip. Both
transports run: ``aiohttp`` (the lean client meant for high concurrency; the target applies to it),
``openai-aiohttp`` (the SDK over aiohttp) and ``openai`` (the default, through the openai SDK over
httpx, whose CPU per request caps it at C = 64).

    .venv/bin/python bench/bench_llm_throughput.py [--per-slot 25]
"""
from __future__ import annotations

import argparse
import time

from babelrag.llm.client import LLMRunner
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.llm.prompts import Prompt
from babelrag.testing.scripted_server import Faults, ScriptedProcess

LATENCY = 0.2


def run(base_url: str, concurrency: int, n: int, transport: str = "openai") -> tuple[float, float, int]:
    settings = LLMSettings(endpoints={"bench": EndpointConfig(base_url=base_url, model="m", transport=transport,
                                                              max_concurrency=concurrency, timeout_s=30)},
                           cache=False, progress=False)
    runner = LLMRunner(settings)
    prompt = Prompt(id="bench", version="1", user="item {i}")
    cpu0, t0 = time.process_time(), time.perf_counter()
    res = runner.map_text(endpoint="bench", prompt=prompt, items=[{"i": i} for i in range(n)], stage="bench")
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return wall, cpu, sum(r.ok for r in res)


def run_bare(base_url: str, concurrency: int, n: int) -> float:
    """Reference in the same run: bare aiohttp, no SDK, no layer (what this machine can do now)."""
    import asyncio

    import aiohttp

    async def go() -> float:
        sem = asyncio.Semaphore(concurrency)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as s:
            async def one(i: int) -> None:
                async with sem:
                    async with s.post(f"{base_url}/chat/completions",
                                      json={"model": "m", "messages": [{"role": "user", "content": f"item {i}"}]}) as r:
                        await r.json()

            t0 = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(n)))
            return time.perf_counter() - t0

    return asyncio.run(go())


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (Linux /proc)."""
    import os

    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-slot", type=int, default=40, help="requests per concurrency slot")
    a = ap.parse_args()
    with ScriptedProcess(Faults(latency_s=LATENCY)) as srv:
        ok_all = True
        for transport in ("aiohttp", "openai-aiohttp", "openai"):
            run(srv.base_url, 4, 8, transport)  # warm-up (imports, first connections)
            for c in (8, 64):
                n = c * a.per_slot
                before, srv_cpu0 = srv.summary()["requests"], proc_cpu(srv.proc.pid)
                wall, cpu, ok = run(srv.base_url, c, n, transport)
                srv_cpu = proc_cpu(srv.proc.pid) - srv_cpu0
                sent = srv.summary()["requests"] - before
                rate, limit = n / wall, c / LATENCY
                ratio = rate / limit
                if transport == "aiohttp":  # the target is for the transport meant for high concurrency
                    ok_all &= ratio >= 0.9 and ok == n and sent == n
                bare = n / run_bare(srv.base_url, c, n) / limit
                print(f"transport={transport:14s} C={c:3d}  n={n:5d}  ok={ok}  server_saw={sent}  {rate:7.1f} req/s  "
                      f"limit {limit:6.1f} req/s  ratio {ratio:.3f}  client CPU {1000 * cpu / n:.2f} ms/request  "
                      f"(server CPU {1000 * srv_cpu / n:.2f} ms/request; bare-aiohttp ratio in this run {bare:.3f})")
        # per-call overhead for stage code that calls the runner once per small batch
        settings = LLMSettings(endpoints={"bench": EndpointConfig(base_url=srv.base_url, model="m", transport="aiohttp")},
                               cache=False, progress=False)
        prompt = Prompt(id="bench", version="1", user="item {i}")
        reused = LLMRunner(settings)
        reused.map_text(endpoint="bench", prompt=prompt, items=[{"i": -1}], stage="b")
        k = 10
        t0 = time.perf_counter()
        for i in range(k):
            reused.map_text(endpoint="bench", prompt=prompt, items=[{"i": i}], stage="b")
        t_reused = (time.perf_counter() - t0) / k
        t0 = time.perf_counter()
        for i in range(k):
            fresh = LLMRunner(settings)
            fresh.map_text(endpoint="bench", prompt=prompt, items=[{"i": i}], stage="b")
            fresh.close()
        t_fresh = (time.perf_counter() - t0) / k
        reused.close()
        print(f"1-item call: reused runner {1000 * t_reused:.1f} ms vs fresh runner {1000 * t_fresh:.1f} ms "
              f"(200 ms server latency included; overhead above latency {1000 * (t_reused - LATENCY):.1f} ms "
              f"vs {1000 * (t_fresh - LATENCY):.1f} ms)")
        print("PASS" if ok_all else "FAIL (target for transport=aiohttp: ratio >= 0.9, all ok, server count == n)")


if __name__ == "__main__":
    main()
