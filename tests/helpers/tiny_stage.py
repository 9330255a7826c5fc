"""A tiny stage written the way docs/architecture.md says to add one: a settings model for the section it
owns, a StageSpec, and a run function. It copies the ingest stage's titles upper-cased."""
from __future__ import annotations

from babelrag.config import Section
from babelrag.stage import StageContext
from babelrag.records import Article
from babelrag.stage import StageSpec


class ShoutConfig(Section):
    suffix: str = "!"


def run(ctx: StageContext) -> None:
    out = ctx.output()
    for art in ctx.iter_read("ingest", Article):
        ctx.count_in += 1
        out.add(art.model_copy(update={"title": art.title.upper() + ctx.config.shout.suffix}))


def run_reading_undeclared(ctx: StageContext) -> None:
    ctx.config.filters  # noqa: B018 - the read the guard must refuse


STAGE = StageSpec("shout", "tests.helpers.tiny_stage:run", "Article", ("ingest",), ("shout",),
                  description="upper-case every title", owns={"shout": ShoutConfig}, order=15)
