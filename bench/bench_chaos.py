"""Chaos bench: the sample-corpus build (the demo's config, scripted model over real HTTP) against an endpoint
with HTTP 500s and hangs past the client's timeout, killed with SIGKILL at seeded points and re-run plainly
until it exits 0 — against one undisturbed build made in the same run.

Prints the restarts, the calls the server saw (retried = content it had seen before: retries after a fault
and calls lost in flight at a kill), and the wasted calls against the undisturbed build as a ratio. Asserts
that both builds' records and errors (every stage) and their releases are byte-identical.

    python bench/bench_chaos.py                      # 20 % faults (half 500, half hangs), 4 kills
    python bench/bench_chaos.py --fault-rate 0.3 --kills 6 --seed 2
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from babelrag.testing.chaos import (COMPLETE, KillPlan, differences, release_files,  # noqa: E402
                                    run_until_complete, sample_config, stage_files, write_config)
from babelrag.config import config_from_dict  # noqa: E402
from babelrag.release.build import build_release  # noqa: E402
from babelrag.testing.scripted_server import Faults, ScriptedServer  # noqa: E402
from tests.test_demo_e2e import DemoBrain  # noqa: E402


def build(tmp: Path, name: str, srv: ScriptedServer, plan: KillPlan, args: argparse.Namespace) -> tuple[dict, dict]:
    raw = sample_config(tmp / name, srv.base_url, args.max_pairs, timeout_s=args.timeout,
                        max_retries=args.max_retries)
    srv.reset_log()  # also forgets which contents were seen: "retried" counts within this build only
    started = time.time()
    outcome = run_until_complete(write_config(tmp / f"{name}.yaml", raw), srv, plan, cwd=ROOT)
    if outcome.exits[-1] != COMPLETE:
        sys.exit(f"{name}: the last run exited {outcome.exits[-1]} after {outcome.exits}:\n{outcome.stderr_tail}")
    log = srv.log
    return raw, {"exits": outcome.exits, "restarts": outcome.restarts, "calls": len(log),
                 "retried": sum(e["attempt"] > 0 for e in log), "faults": sum(bool(e["fault"]) for e in log),
                 "seconds": time.time() - started}


def release_of(raw: dict) -> Path:
    return build_release(config_from_dict(raw)).folder


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fault-rate", type=float, default=0.2, help="share of calls that fail (half 500, half hang)")
    p.add_argument("--kills", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-pairs", type=int, default=4)
    p.add_argument("--timeout", type=float, default=0.5, help="the client's timeout_s (hangs last 3 times longer)")
    p.add_argument("--max-retries", type=int, default=6, help="the client's max_retries (1: items fail too)")
    args = p.parse_args()

    brain = DemoBrain()
    with tempfile.TemporaryDirectory(prefix="bench-chaos-") as tmp_name, ScriptedServer(brain) as srv:
        tmp = Path(tmp_name)
        clean_raw, clean = build(tmp, "clean", srv, KillPlan(None), args)
        half = args.fault_rate / 2
        srv.set_faults(Faults(rate_500=half, rate_hang=half, hang_s=3 * args.timeout, seed=args.seed))
        plan = KillPlan.seeded(args.seed, args.kills, max_requests=max(1, clean["calls"] // 2),
                               first_window_s=(2.0, 20.0))
        chaos_raw, chaos = build(tmp, "chaos", srv, plan, args)
        srv.set_faults(Faults())
        if brain.unknown:
            sys.exit("the scripted model met prompts it does not know:\n" + "\n".join(brain.unknown[:5]))
        diff = differences(stage_files(Path(chaos_raw["project"]["build_dir"])),
                           stage_files(Path(clean_raw["project"]["build_dir"])))
        diff += differences(release_files(release_of(chaos_raw)), release_files(release_of(clean_raw)))

    print(f"fault rate {args.fault_rate:.0%} (500 + hangs past a {args.timeout} s timeout), max_retries "
          f"{args.max_retries}, seed {args.seed}, {plan.kills} planned kills")
    print(f"undisturbed build: {clean['calls']} calls, {clean['seconds']:.0f} s")
    print(f"chaos build: {len(chaos['exits'])} runs (exit codes {chaos['exits']}), {chaos['restarts']} restarts, "
          f"{chaos['calls']} calls ({chaos['faults']} answered with a fault, {chaos['retried']} retried), "
          f"{chaos['seconds']:.0f} s")
    wasted = chaos["calls"] - clean["calls"]
    print(f"wasted calls: {wasted} = {wasted / max(1, clean['calls']):.2f} x the undisturbed build's "
          f"(calls ratio {chaos['calls'] / max(1, clean['calls']):.2f})")
    print("builds and releases byte-identical" if not diff else f"DIFFERENT: {diff}")
    if diff:
        sys.exit(1)


if __name__ == "__main__":
    main()
