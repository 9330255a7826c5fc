"""Resume after kill -9: a child process runs N items through the cache-backed runner; at 50 % of the
server's request count the child is SIGKILLed; a re-run finishes the job from the cache.

Target: calls made in total (server log, both runs) ≤ N + concurrency, and every item ends ok.

    .venv/bin/python bench/bench_llm_resume.py [--n 600] [--concurrency 16]
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

from babelrag.llm.client import LLMRunner
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.llm.prompts import Prompt
from babelrag.testing.scripted_server import Faults, ScriptedProcess

PROMPT = Prompt(id="bench.resume", version="1", user="Say something about item {i}.")


def run(base_url: str, cache_dir: str, n: int, concurrency: int):
    settings = LLMSettings(endpoints={"gen": EndpointConfig(base_url=base_url, model="m",
                                                            max_concurrency=concurrency, timeout_s=30)},
                           progress=False)
    runner = LLMRunner(settings, cache_dir)
    res = runner.map_text(endpoint="gen", prompt=PROMPT, items=[{"i": i} for i in range(n)], stage="resume")
    return res, runner.usage.as_dict()["total"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--child", nargs=2, metavar=("BASE_URL", "CACHE_DIR"))
    a = ap.parse_args()
    if a.child:
        run(a.child[0], a.child[1], a.n, a.concurrency)
        return
    with ScriptedProcess(Faults(latency_s=0.2)) as srv, tempfile.TemporaryDirectory() as cache:
        child = subprocess.Popen([sys.executable, __file__, "--n", str(a.n), "--concurrency", str(a.concurrency),
                                  "--child", srv.base_url, cache])
        while srv.summary()["requests"] < a.n // 2:
            if child.poll() is not None:
                sys.exit("child finished before it could be killed; raise --n")
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        first = srv.summary()["requests"]
        t0 = time.perf_counter()
        res, usage = run(srv.base_url, cache, a.n, a.concurrency)
        wall = time.perf_counter() - t0
        total = srv.summary()["requests"]
    ok = sum(r.ok for r in res)
    print(f"N={a.n} concurrency={a.concurrency}: killed after {first} requests; re-run made {total - first} "
          f"calls ({usage['cached']} items from cache) in {wall:.1f} s")
    print(f"total calls {total} <= N + concurrency = {a.n + a.concurrency}: {total <= a.n + a.concurrency}; "
          f"calls lost to the kill {total - a.n} (ratio total/N {total / a.n:.3f}); all ok {ok == a.n}")
    print("PASS" if total <= a.n + a.concurrency and ok == a.n else "FAIL")


if __name__ == "__main__":
    main()
