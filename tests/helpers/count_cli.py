"""The real ``babelrag`` command line with the counting stage declared (``babelrag construct count``): lets
tests drive the CLI's lock, signal and error handling through a small stage that is slow on demand.

Run as ``python -m tests.helpers.count_cli construct count -c CONFIG`` from the repository root; the
helpers below start it as a real child process."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent / "babelrag"


def write_config(folder: Path, build: Path, **extra: str) -> Path:
    """A config whose build is ``build`` (plus raw YAML lines per section in ``extra``)."""
    lines = ["project:", f"  build_dir: {build}"]
    for section, body in extra.items():
        lines += [f"{section}:", *("  " + line for line in body.splitlines())]
    path = folder / "babelrag.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def env(n: int = 40, delay: float = 0.0) -> dict[str, str]:
    return {**os.environ, "COUNTING_STAGE_N": str(n), "COUNTING_STAGE_DELAY": str(delay),
            "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}


def start_count(config: Path, n: int = 40, delay: float = 0.0, *args: str) -> subprocess.Popen:
    """``babelrag construct count -c config`` as a child process (stdout/stderr captured as text)."""
    return subprocess.Popen([sys.executable, "-m", "tests.helpers.count_cli", "construct", "count", "-c",
                             str(config), *args], cwd=ROOT, env=env(n, delay), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_count(config: Path, n: int = 40, timeout: float = 120, prefix: tuple[str, ...] = ()
              ) -> subprocess.CompletedProcess:
    """Run ``construct count`` to its end (``prefix``: a wrapper command such as ``unshare``)."""
    return subprocess.run([*prefix, sys.executable, "-m", "tests.helpers.count_cli", "construct", "count", "-c",
                           str(config)], cwd=ROOT, env=env(n), capture_output=True, text=True, timeout=timeout)


def run_babelrag(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The installed ``babelrag`` command, as a user runs it."""
    return subprocess.run([str(BIN), *args], cwd=ROOT, env=env(), capture_output=True, text=True,
                          timeout=timeout)


def wait_for(condition, timeout: float = 60.0, what: str = "condition") -> None:  # noqa: ANN001
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def shards(build: Path, stage: str = "count") -> int:
    return len(list((build / ".partial" / stage).glob("shard-*.records.parquet")))


if __name__ == "__main__":
    from babelrag.cli import main
    from babelrag.stage import add_stage
    from tests.helpers.counting_stage import SPEC

    add_stage(SPEC)
    main()
