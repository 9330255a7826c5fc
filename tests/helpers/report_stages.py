"""Tiny real stages for the run-report tests: one that skips, notes and shows progress, one that fails."""
from __future__ import annotations

from babelrag.errors import StageError
from babelrag.stage import StageContext
from babelrag.records import Article
from babelrag.stage import StageSpec


def sorting(ctx: StageContext) -> None:
    out = ctx.output()
    for i in ctx.progress(range(6), total=6, desc="articles"):
        ctx.count_in += 1
        if i == 0:
            ctx.skip("empty")  # left out
            continue
        if i % 2:
            ctx.note("no-entities")  # kept, with a caveat
        out.add(Article(id=f"a{i}", title="t", text="x", language="en", published="2026-08-01"))


def failing(ctx: StageContext) -> None:
    raise StageError("the corpus folder /data/x is empty; point corpus.inputs at the articles")


SORTING = StageSpec("sorting", "tests.helpers.report_stages:sorting", "Article", (), ("project",), order=1)
FAILING = StageSpec("failing", "tests.helpers.report_stages:failing", "Article", ("sorting",), ("project",), order=2)
AFTER = StageSpec("after", "tests.helpers.report_stages:sorting", "Article", ("failing",), ("project",), order=3)
