"""The ``relevance`` stage: an LLM decides whether each candidate pair is about the same story.

Every pair is written back with ``relevant`` (the verdict), ``rationale`` and ``provenance`` (model,
endpoint, prompt id/version, config hash); later stages use only ``relevant is True`` pairs. A pair whose
reply cannot be parsed after the LLM layer's retries and repair becomes an ErrorRecord (never a silent
"not relevant"). With ``relevance.enabled: false`` pairs pass through unchecked (``relevant`` None).
``relevance.criterion`` says what related means: ``story`` (default; the same event, its follow-up or the same
developing story) or ``event`` (the same specific happening only). ``relevance.max_pairs`` checks only that many pairs, chosen as ``questions.max_pairs`` chooses them
(round-robin over language combinations); the others are counted and go no further.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, Field

from babelrag.config import Section
from babelrag.excerpt import excerpt
from babelrag.languages import language_name
from babelrag.stage import StageContext
from babelrag.records import Article, ArticlePair
from babelrag.stage import StageSpec
from babelrag.construct.pair_selection import select_pairs
from babelrag.llm.prompts import Prompt


# ---------------------------------------------------------------- declaration (config section + stage spec)


class RelevanceConfig(Section):
    enabled: bool = True
    endpoint: Optional[str] = None  # default endpoint when None
    # check only this many pairs (round-robin over language combinations, as questions.max_pairs picks);
    # the rest are counted as over-max-pairs and go no further. None = every candidate pair.
    max_pairs: Optional[int] = Field(None, ge=1)
    excerpt_chars: int = Field(1200, ge=200)  # article text shown to the judge is cut here (at a word)
    # what "related" means: the same story (XRAG's topical relevance: the same event, its follow-up or the same
    # developing story) or the same specific event (another event of one story is not related)
    criterion: Literal["story", "event"] = "story"


STAGE = StageSpec(
    "relevance", "babelrag.construct.relevance:run", "ArticlePair", ("ingest", "pairs"),
    ("relevance", "project", "questions.monolingual"),
    version="4", changes=(("2", "provenance hashes only its own settings and the endpoint it calls"),
                          ("3", "relevance.criterion: the same story (as before) or the same specific event"),
                          ("4", "relevance.max_pairs also picks the X–X pairs of questions.monolingual")),
    description="LLM topical-relevance check of each pair", uses_llm=True,
    llm_endpoints=(("relevance.endpoint", (("relevance.enabled", True),)),), runtime_sections=("llm",),
    prompts=("babelrag.construct.relevance:relevance.yaml", "babelrag.construct.relevance:relevance_event.yaml"),
    owns={"relevance": RelevanceConfig}, order=30)

EXCERPT_CHARS = 1200
PROMPT_FILES = {"story": "relevance.yaml", "event": "relevance_event.yaml"}  # by relevance.criterion
BATCH = 64


class RelevanceVerdict(BaseModel):
    """What the model must answer (validated by the LLM layer; a bad reply is repaired or fails)."""

    related: bool
    rationale: str = Field(default="", max_length=1000)


def prompt_items(pair: ArticlePair, articles: dict[str, Article], chars: int = EXCERPT_CHARS) -> dict[str, str]:
    a, b = articles[pair.article_a], articles[pair.article_b]
    return {"language_a": language_name(a.language), "published_a": a.date_label, "title_a": a.title,
            "text_a": excerpt(a.text, chars), "language_b": language_name(b.language), "published_b": b.date_label,
            "title_b": b.title, "text_b": excerpt(b.text, chars)}


def run(ctx: StageContext) -> None:
    cfg = ctx.config.relevance
    pairs = ctx.read("pairs", ArticlePair)
    ctx.count_in = len(pairs)
    out = ctx.output(shard_size=BATCH)
    if not cfg.enabled:
        for p in pairs:
            if not out.has(p.id):
                out.add(p)
        ctx.extra["checked"] = False
        return
    needed = {p.article_a for p in pairs} | {p.article_b for p in pairs}
    articles = ctx.read_ids("ingest", Article, needed)
    prompt = Prompt.beside(__file__, PROMPT_FILES[cfg.criterion])
    config_hash = ctx.config_hash
    if cfg.max_pairs is not None:
        cfg_all = ctx.config
        pairs = [p for p, _, _ in select_pairs(pairs, articles, cfg_all.project.pivot_language,
                                               list(cfg_all.project.languages), cfg.max_pairs, ctx.skip,
                                               list(cfg_all.questions.monolingual))]
    todo = []
    for p in pairs:
        if out.has(p.id):
            continue
        if p.article_a not in articles or p.article_b not in articles:
            ctx.error(p.id, "missing-article", f"{p.article_a} or {p.article_b} is not in the ingest output")
            continue
        todo.append(p)
    verdicts = {True: 0, False: 0}
    for s in range(0, len(todo), BATCH):
        chunk = todo[s:s + BATCH]
        results = ctx.llm.map_structured(endpoint=cfg.endpoint, prompt=prompt,
                                         items=[prompt_items(p, articles, cfg.excerpt_chars) for p in chunk],
                                         schema=RelevanceVerdict, stage="relevance", item_ids=[p.id for p in chunk])
        for pair, res in zip(chunk, results):
            if not res.ok:
                ctx.error(pair.id, res.reason or "llm-failed", res.error or "")
                continue
            verdict: RelevanceVerdict = res.value
            verdicts[verdict.related] += 1
            out.add(pair.model_copy(update={"relevant": verdict.related, "rationale": verdict.rationale.strip(),
                                            "provenance": res.provenance(config_hash)}))
    ctx.extra["checked"] = True
    ctx.extra["prompt"] = prompt.ref
    ctx.extra["verdicts_this_run"] = {"related": verdicts[True], "not_related": verdicts[False]}
