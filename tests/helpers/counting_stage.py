"""A small real stage used by the runner tests: turns N numbers into records, slowly if asked.

It exercises the runner's resume path (shards, fingerprints) independently of any NLP stage.
"""
from __future__ import annotations

import os
import time

from babelrag.records import Article
from babelrag.stage import StageContext, StageSpec


def run(ctx: StageContext) -> None:
    n = int(os.environ.get("COUNTING_STAGE_N", "50"))
    delay = float(os.environ.get("COUNTING_STAGE_DELAY", "0"))
    out = ctx.output(shard_size=5)
    for i in ctx.progress(range(n), total=n, desc="numbers"):
        ctx.count_in += 1
        item_id = f"a{i:05d}"
        if out.has(item_id):
            continue
        if i % 7 == 3:
            ctx.skip("seven")
            ctx.error(item_id, "divisible-ish", f"item {i}")
            continue
        out.add(Article(id=item_id, title=f"T{i}", text="x " * i, language="en", published="2026-08-01"))
        if delay:
            time.sleep(delay)


SPEC = StageSpec("count", "tests.helpers.counting_stage:run", "Article", (), ("project",))
