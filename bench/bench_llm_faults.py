"""Fault injection: 2,000 structured requests, 20 % mixed faults (429 + Retry-After, 500, hangs,
dropped connections, truncated HTTP bodies, truncated JSON content).

Checks: 100 % of items end as a success or an error result, none lost, none duplicated, and the
client's usage report (calls, by path) equals the scripted server's request log.

    .venv/bin/python bench/bench_llm_faults.py [--n 2000] [--rate 0.2]
"""
from __future__ import annotations

import argparse
import time
from collections import Counter

from pydantic import BaseModel

from babelrag.llm.client import LLMRunner
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.llm.prompts import Prompt
from babelrag.testing.scripted_server import Faults, ScriptedProcess


class Item(BaseModel):
    question: str
    answer: str


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=64)
    a = ap.parse_args()
    faults = Faults.mixed(a.rate, latency_s=0.05, retry_after_s=0.2, hang_s=5.0, seed=7)
    reply = '{"question": "What happened?", "answer": "Something."}'
    with ScriptedProcess(faults, default_reply=reply) as srv:
        settings = LLMSettings(endpoints={"gen": EndpointConfig(
            base_url=srv.base_url, model="m", max_concurrency=a.concurrency, timeout_s=1.0, max_retries=6,
            retry_backoff_s=0.05, retry_backoff_max_s=1.0)}, cache=False, progress=True)
        runner = LLMRunner(settings, seed=1)
        prompt = Prompt(id="bench.faults", version="1", user="Write a question about item {i}.")
        ids = [f"item-{i}" for i in range(a.n)]
        t0 = time.perf_counter()
        res = runner.map_structured(endpoint="gen", prompt=prompt, items=[{"i": i} for i in range(a.n)],
                                    schema=Item, stage="faults", item_ids=ids)
        wall = time.perf_counter() - t0
        log = srv.summary()
    usage = runner.usage.as_dict()["by_stage"]["faults"]["gen"]
    ok = sum(r.ok for r in res)
    failed = sum(not r.ok for r in res)
    returned_ids = [r.item_id for r in res]
    lost = len(set(ids) - set(returned_ids))
    duplicated = len(returned_ids) - len(set(returned_ids))
    print(f"items {a.n}: ok {ok}, error results {failed}, lost {lost}, duplicated {duplicated}, "
          f"in order {returned_ids == ids}  ({wall:.1f} s)")
    print(f"error reasons: {dict(Counter(r.reason for r in res if not r.ok))}")
    print(f"server saw {log['requests']} requests, faults {log['by_fault']}")
    print(f"client usage: calls {usage['calls']} (retries {usage['retries']}, repairs {usage['repairs']}), "
          f"succeeded {usage['succeeded']}, failed {usage['failed']} {usage['failures']}")
    fault_share = 1 - log["by_fault"].get("ok", 0) / max(1, log["requests"])
    print(f"observed fault share of requests: {fault_share:.3f} (configured {a.rate})")
    checks = {
        "all items accounted (ok + error == n)": ok + failed == a.n,
        "0 lost": lost == 0,
        "0 duplicated": duplicated == 0,
        "usage calls == server log": usage["calls"] == log["requests"],
        "usage items == n": usage["items"] == a.n and usage["succeeded"] == ok and usage["failed"] == failed,
    }
    for name, passed in checks.items():
        print(f"  [{'x' if passed else ' '}] {name}")
    print(f"completion ratio {(ok + failed) / a.n:.3f}; success ratio {ok / a.n:.4f}")
    print("PASS" if all(checks.values()) else "FAIL")


if __name__ == "__main__":
    main()
