"""Stage ``questions``: cross-document Q&A from related article pairs, then machine translation.

Reads the ``relevance`` stage (pairs whose ``relevant`` is not False), keeps en–en and X–en pairs (and X–X
pairs of the ``questions.monolingual`` languages, whose questions are written in X and never translated), writes
``questions.per_pair`` questions per pair, each pair's types picked by a stable hash of its id (``pair_types``:
raising a cap never changes what an earlier pair is asked; every type is requested across the corpus), runs the
chain in ``chains/crossdoc.py`` (question and answer in English first), then translates each question/answer: en–en questions into every target language, X–en questions
into X. Chain failures become ErrorRecords; a failed translation stays visible in ``translations`` (``error``).
"""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field, field_validator

from babelrag.config import Section
from babelrag.errors import ConfigError
from babelrag.hashing import stable_hash
from babelrag.languages import normalise_languages
from babelrag.run_only import run_only
from babelrag.construct.chains.crossdoc import CrossDocChain, Job, qa_id
from babelrag.construct.pair_selection import select_pairs
from babelrag.records import (MONOLINGUAL_SETTING, Article, ArticlePair, Translation, monolingual_language,
                              translation_targets, x_language)
from babelrag.failed_items import error_reason, is_retryable
from babelrag.stage import StageSpec
from babelrag.construct.translate import translate_qas


# ---------------------------------------------------------------- declaration (config section + stage spec)


class QuestionsConfig(Section):
    types: list[Literal["aggregation", "comparison", "multi-hop", "set"]] = Field(
        default_factory=lambda: ["aggregation", "comparison", "multi-hop", "set"]
    )
    per_pair: int = Field(1, ge=1)
    max_pairs: Optional[int] = Field(None, ge=1)  # None = every relevant pair
    # BCP-47 tags, normalised as project.languages are ("pt-BR" -> "pt"; babelrag/languages.py)
    target_languages: list[str] = Field(default_factory=lambda: ["de", "es", "zh", "ar"])
    # the monolingual X–X setting (MIRAGE-Bench evaluates each language on its own): for these languages the
    # pairs stage mines X–X pairs and the chain writes questions and answers in X over two X articles, released
    # as the ``monolingual`` instance setting (config ``monolingual-<x>``). [] = none (only the XRAG settings)
    monolingual: list[str] = Field(default_factory=list)
    endpoint: Optional[str] = None
    simple_per_summary: int = Field(3, ge=1, le=10)  # one-step Q&A pairs written from each summary
    max_article_chars: int = Field(6000, ge=200)  # article text sent to the summary step is cut here
    translate: bool = True  # machine-translate question/answer (flagged machine_translated)
    batch_size: int = run_only(16, ge=1)  # jobs per chain batch (results are written after each batch)

    @field_validator("target_languages", "monolingual")
    @classmethod
    def _known_languages(cls, value: list[str]) -> list[str]:
        return normalise_languages(value)


def on_load(config: Any) -> None:
    """The questions stage's load hook: monolingual languages must be built, and their questions must reach a
    release setting (checked when the config loads, not after the paid stages)."""
    mono = list(config.questions.monolingual)
    if not mono:
        return None
    missing = [lang for lang in mono if lang not in config.project.languages]
    if missing:
        raise ConfigError(f"questions.monolingual lists {missing}, not among project.languages "
                          f"{list(config.project.languages)}: add them there, or remove them from questions.monolingual")
    if MONOLINGUAL_SETTING not in config.instances.settings:
        raise ConfigError(f"questions.monolingual {mono} writes questions over same-language article pairs, but "
                          f"instances.settings does not list '{MONOLINGUAL_SETTING}': add it there, or remove "
                          "questions.monolingual")
    return None  # the languages table (pairs' load hook) says where same-language pairs are mined and why


STAGE = StageSpec(
    "questions", "babelrag.construct.questions:run", "QAItem", ("ingest", "relevance"), ("questions", "project"),
    version="4", changes=(("2", "translations are typed nested records (QAItem.translations)"),
                          ("3", "each pair's question types come from a stable hash of its id instead of cycling "
                                "over the job list: raising a cap no longer changes the type earlier pairs get"),
                          ("4", "questions.monolingual: X–X pairs of those languages get questions written in X; "
                                "the chain's prompts name the language they write in")),
    on_load="babelrag.construct.questions:on_load",
    description="summary -> simple Q&A -> cross-document Q&A -> translation", uses_llm=True,
    llm_endpoints=(("questions.endpoint", ()),), runtime_sections=("llm",),
    prompts=tuple(f"babelrag.construct.questions:chains/prompts/{p}.yaml"
                  for p in ("summary", "simple_qa", "crossdoc", "answer", "translate_qa")),
    owns={"questions": QuestionsConfig}, order=40)


def plan_jobs(pairs: list[ArticlePair], articles: dict[str, Article], types: list[str], per_pair: int,
              pivot: str, languages: list[str], max_pairs: int | None, skip: Any = lambda *a: None,
              monolingual: list[str] | None = None) -> list[Job]:
    """Deterministic job list: the X article first, each pair's types from ``pair_types``; an X–X pair of a
    ``monolingual`` language is written in X (``Job.language``).

    ``max_pairs`` takes pairs round-robin over language combinations (de–en, en–en, zh–en, de–de, ...; each in
    id order), so a small budget still covers monolingual and cross-lingual questions."""
    mono = list(monolingual or ())
    chosen = select_pairs(pairs, articles, pivot, languages, max_pairs, skip, mono)
    return [Job(qa_id(pair.id, q_type, k), pair.id, a, b, q_type,
                monolingual_language((a.language, b.language), mono))
            for pair, a, b in chosen for k, q_type in enumerate(pair_types(pair.id, types, per_pair))]


def pair_types(pair_id: str, types: list[str], per_pair: int) -> list[str]:
    """The question types one pair is asked for: ``per_pair`` consecutive types from an offset that a stable
    hash of the pair id picks. A pair's types never depend on which other pairs are in the plan, so raising a
    cap (more pairs) asks every earlier pair the same questions again (answered from the cache) and only adds
    new ones; cycling over the job list shifted every later pair's type when a pair was added before it. Over a
    corpus the offsets spread evenly, so every type is requested."""
    offset = int(stable_hash(pair_id)[:8], 16)
    return [types[(offset + k) % len(types)] for k in range(per_pair)]


def failed_translation(translations: dict[str, Translation]) -> tuple[str, str] | None:
    """(reason, detail) of a translation whose call got no answer, or None. Such a QA item is not written
    without that language (as an unreadable translation is) but failed, so the next run retries it."""
    for lang, entry in sorted(translations.items()):
        reason = error_reason(entry.error)
        if is_retryable(reason):
            return f"translate:{reason}", f"translation into {lang}: {entry.error}"
    return None


def run(ctx: Any) -> None:
    cfg = ctx.config
    q = cfg.questions
    pivot = cfg.project.pivot_language
    pairs = ctx.read("relevance", ArticlePair)
    needed = {x for p in pairs for x in (p.article_a, p.article_b)}
    articles = ctx.read_ids("ingest", Article, needed)
    jobs = plan_jobs(pairs, articles, list(q.types), q.per_pair, pivot, list(cfg.project.languages),
                     q.max_pairs, ctx.skip, list(q.monolingual))
    ctx.count_in += len(jobs)
    out = ctx.output()
    todo = [j for j in jobs if not out.has(j.id)]
    chain = CrossDocChain(ctx.llm, stage=ctx.spec.name, endpoint=q.endpoint, simple_per_summary=q.simple_per_summary,
                          max_article_chars=q.max_article_chars, config_hash=ctx.config_hash)
    translations: dict[str, dict[str, Translation]] = {}
    for start in ctx.progress(range(0, len(todo), q.batch_size), total=(len(todo) + q.batch_size - 1) // q.batch_size,
                              desc="question batches"):
        batch = todo[start:start + q.batch_size]
        result = chain.run(batch)
        for err in result.errors:
            ctx.error(err.item_id, err.reason, err.detail)
        ctx.extra["inferred_selection"] = ctx.extra.get("inferred_selection", 0) + result.inferred_selection
        items = [it if it.language else
                 it.model_copy(update={"x_language": x_language([articles[a].language for a in it.article_ids],
                                                                 pivot)}) for it in result.items]
        if q.translate and items:
            by_target: dict[tuple[str, ...], list] = {}
            for it in items:
                if it.language:  # monolingual: written in its language, nothing to translate
                    continue
                langs = tuple(translation_targets(it.x_language or "", pivot, list(q.target_languages)))
                by_target.setdefault(langs, []).append(it)
            for langs, group in by_target.items():
                translations.update(translate_qas(ctx.llm, group, list(langs), stage=ctx.spec.name, endpoint=q.endpoint,
                                                  source_language=pivot)
                                    if langs else {it.id: {} for it in group})
        for it in items:
            tr = translations.get(it.id, {})
            failed = failed_translation(tr)
            if failed is not None:  # no answer from the endpoint: the item is retried next run
                ctx.error(it.id, *failed)
                continue
            for lang, entry in tr.items():
                if entry.error:
                    ctx.note(f"translation-failed-{lang}")  # kept, without this language
            out.add(it.model_copy(update={"translations": [tr[lang] for lang in sorted(tr)]}))
    ctx.extra["requested_types"] = {t: sum(j.q_type == t for j in jobs) for t in q.types}
    if q.monolingual:
        ctx.extra["monolingual_jobs"] = {lang: sum(j.language == lang for j in jobs) for lang in q.monolingual}
