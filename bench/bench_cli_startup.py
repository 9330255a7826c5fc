"""`babelrag --help` start-up time against a bare interpreter start, measured in the same run.

Target (issue 2): `babelrag --help` < 1 s. Prints the absolute median and the ratio to `python -c pass`.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent / "babelrag"


def median_seconds(cmd: list[str], rounds: int = 7) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    baseline = median_seconds([sys.executable, "-c", "pass"])
    helptime = median_seconds([str(BIN), "--help"])
    print(f"python -c pass: {baseline:.3f} s; babelrag --help: {helptime:.3f} s; "
          f"ratio {helptime / baseline:.1f}x; target < 1 s: {'OK' if helptime < 1 else 'MISSED'}")


if __name__ == "__main__":
    main()
