"""Release validation throughput: language check restricted to the project's languages vs all 15 supported.

Prints instances/s for both and the ratio (same run, same instances). Usage:
    .venv/bin/python bench/bench_release_validate.py [copies]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from babelrag.languages import supported_codes  # noqa: E402
from babelrag.release.validate import Rules, validate  # noqa: E402
from tests.helpers.release_fixtures import make_records  # noqa: E402


def rows(copies: int) -> list[dict]:
    _, _, insts = make_records()
    out = []
    for c in range(copies):
        for i in insts:
            out.append(i.model_copy(update={"id": f"{i.id}-{c}", "qa_id": f"{i.qa_id}-{c}"}).model_dump(mode="json"))
    return out


def timed(data: list[dict], languages: list[str]) -> float:
    started = time.perf_counter()
    _, report = validate(data, Rules(languages=languages))
    assert report.ok, report.summary()
    return time.perf_counter() - started


def main() -> None:
    copies = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    data = rows(copies)
    project = ["en", "de", "zh", "es", "ar"]
    for langs in (project, list(supported_codes())):  # warm-up: lingua loads language models lazily
        timed(data[:20], langs)
    restricted = timed(data, project)
    everything = timed(data, list(supported_codes()))
    n = len(data)
    print(f"{n} instances: restricted {n / restricted:.0f}/s, all {len(supported_codes())} languages "
          f"{n / everything:.0f}/s; ratio restricted/all = {everything / restricted:.2f}x faster")


if __name__ == "__main__":
    main()
