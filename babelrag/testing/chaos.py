"""Chaos runs: a build driven by plain `babelrag run` commands that are killed with SIGKILL at seeded points
against a faulty scripted endpoint, and re-run until one exits 0 (used by tests/test_chaos.py and
bench/bench_chaos.py).

A kill point is a number of LLM requests the server has seen since that run started (so the points fall in
the LLM stages whatever the machine's speed), or, for the first kill, a number of seconds (so one may fall in
ingest or a commit). Whatever was killed where, the finished build must equal one made by a single
undisturbed run, byte for byte: that is what "a plain re-run finishes the job" promises.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from babelrag.demo import demo_config
from babelrag.testing.scripted_server import ScriptedServer

#: exit codes a run of the chaos loop may end with: complete, incomplete (failed items), killed by us
COMPLETE, INCOMPLETE, KILLED = 0, 3, -signal.SIGKILL


def sample_config(tmp: Path, base_url: str, max_pairs: int, **endpoint: Any) -> dict[str, Any]:
    """The demo's config on the sample corpus as a YAML-ready dict, pointed at a scripted endpoint that a
    namespace names (builds made against another port or with other timeouts share fingerprints and
    provenance); ``endpoint`` overrides its settings (timeouts, retries)."""
    raw = demo_config(tmp, base_url, "scripted", max_pairs, corpus="sample").model_dump(mode="json",
                                                                                         exclude={"base_dir"})
    raw["llm"]["endpoints"]["generator"].update(cache_namespace="scripted", retry_backoff_s=0.05,
                                                retry_backoff_max_s=0.4, **endpoint)
    raw["llm"]["progress"] = False
    return raw


def write_config(path: Path, raw: dict[str, Any]) -> Path:
    """The config as a YAML file for `babelrag run -c` (what a user would write)."""
    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


@dataclass
class KillPlan:
    """Where the runs are killed: the first after ``first_after_s`` seconds (None: no time kill), the
    next ones after so many LLM requests seen by the server since that run started."""

    first_after_s: Optional[float]
    after_requests: list[int] = field(default_factory=list)

    @classmethod
    def seeded(cls, seed: int, kills: int, max_requests: int, first_window_s: tuple[float, float] = (2.0, 8.0)
               ) -> "KillPlan":
        rng = random.Random(seed)
        first = rng.uniform(*first_window_s) if kills else None
        return cls(first, [rng.randint(1, max(1, max_requests)) for _ in range(max(0, kills - 1))])

    @property
    def kills(self) -> int:
        return (self.first_after_s is not None) + len(self.after_requests)


@dataclass
class ChaosOutcome:
    exits: list[int] = field(default_factory=list)  # one per run, in order
    stderr_tail: str = ""  # of the last run

    @property
    def restarts(self) -> int:
        return len(self.exits) - 1


def _watch(proc: subprocess.Popen, srv: ScriptedServer, start_requests: int, after_s: Optional[float],
           after_requests: Optional[int], killed: threading.Event) -> None:
    started = time.monotonic()
    while proc.poll() is None:
        due = (after_s is not None and time.monotonic() - started >= after_s) or (
            after_requests is not None and len(srv.log) - start_requests >= after_requests)
        if due:
            try:
                os.kill(proc.pid, signal.SIGKILL)
                killed.set()
            except ProcessLookupError:
                pass
            return
        time.sleep(0.02)


def run_until_complete(config_path: Path, srv: ScriptedServer, plan: KillPlan, *, max_runs: int = 12,
                       env: Optional[dict[str, str]] = None, cwd: Optional[Path] = None,
                       timeout_s: float = 600) -> ChaosOutcome:
    """`babelrag run -c CONFIG` again and again: killed as ``plan`` says, then plainly until it exits 0.
    Returns at the first exit 0 (kills not yet due are dropped), at an exit code other than 3 or our kill,
    or after ``max_runs`` runs."""
    cmd = [sys.executable, "-c", "from babelrag.cli import main; main()", "run", "-c", str(config_path)]
    outcome = ChaosOutcome()
    kills: list[tuple[Optional[float], Optional[int]]] = [(plan.first_after_s, None)] if plan.first_after_s else []
    kills += [(None, n) for n in plan.after_requests]
    while len(outcome.exits) < max_runs:
        after_s, after_requests = kills.pop(0) if kills else (None, None)
        proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})}, cwd=cwd, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        killed = threading.Event()
        watcher = threading.Thread(target=_watch, args=(proc, srv, len(srv.log), after_s, after_requests, killed),
                                   daemon=True)
        watcher.start()
        try:
            _, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        watcher.join()
        outcome.exits.append(proc.returncode)
        outcome.stderr_tail = (err or "")[-4000:]
        if proc.returncode not in (INCOMPLETE, KILLED):  # complete, or a failure no re-run is meant to fix
            break
    return outcome


def stage_files(build: Path) -> dict[str, bytes]:
    """Every stage's records and errors (relative path -> bytes): what two equal builds share exactly."""
    out = {}
    for name in ("records.parquet", "errors.parquet"):
        for path in sorted(build.glob(f"*/{name}")):
            out[str(path.relative_to(build))] = path.read_bytes()
    return out


def release_files(folder: Path) -> dict[str, bytes]:
    """A release's data files (relative path -> bytes); release.json and the card carry dates, left out."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.parquet"))}


def differences(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
