"""A small real stage that asks the configured LLM endpoint one question per item, as the construct stages do
(resumable writer, one ErrorRecord per failed item): the failed-item and fail-fast tests drive it through the
real pipeline, LLM client and scripted HTTP server."""
from __future__ import annotations

import os

from pydantic import BaseModel

from babelrag.llm.prompts import Prompt
from babelrag.stage import StageContext
from babelrag.records import Article
from babelrag.stage import StageSpec

PROMPT = Prompt(id="tests.ask", version="1", user="What is the number {n} called? Reply as JSON {{\"answer\": ...}}")


class Answer(BaseModel):
    answer: str


def item_ids() -> list[str]:
    return [f"q{i:03d}" for i in range(int(os.environ.get("ASKING_STAGE_N", "12")))]


def run(ctx: StageContext) -> None:
    ids = item_ids()
    ctx.count_in = len(ids)
    out = ctx.output(shard_size=4)
    todo = [i for i in ids if not out.has(i)]
    results = ctx.llm.map_structured(endpoint=None, prompt=PROMPT, items=[{"n": i} for i in todo], schema=Answer,
                                     stage=ctx.spec.name, item_ids=todo)
    for item_id, res in zip(todo, results):
        if res.ok:
            out.add(Article(id=item_id, title=res.value.answer, text=f"the answer for {item_id}", language="en",
                            published="2026-08-01"))
        else:
            ctx.error(item_id, res.reason or "", res.error or "")


def reply(body: dict) -> dict:
    """The scripted model's answer: a pure function of the question."""
    number = body["messages"][-1]["content"].split("number ", 1)[1].split(" ", 1)[0]
    return {"answer": f"called {number}"}


SPEC = StageSpec("ask", "tests.helpers.asking_stage:run", "Article", (), ("project",), uses_llm=True,
                 runtime_sections=("llm",))
