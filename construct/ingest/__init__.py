"""The ``ingest`` stage: corpus files -> deduplicated, language-identified ``Article`` records.

Two passes keep memory bounded: pass 1 streams every input, applies the cheap filters (date window,
length, language) and spools survivors with their fixed-size hashes and MinHash signatures to files that
a killed run resumes from (``checkpoint.py``); pass 2 decides duplicates with numpy and streams the spool
into the resumable output, running title NER in batches (unless the workers ran it: ``TitleNER``).
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import logging
from collections import Counter
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, Optional

import numpy as np

from babelrag.errors import InputError
from babelrag.executor import LocalExecutor, executor_from_config
from babelrag.stage import StageContext
from babelrag.records import DATE_SOURCES, Article, DateSource
from babelrag.tokens import count_tokens

from babelrag.construct.ner import extractor_from_config
from .checkpoint import CHECKPOINT_SECONDS, Pass1Spool
from .dates import infer_date
from .dedupe import MinHasher, duplicate_mask, hash64, normalise_text
from .extract import EARLIEST_DATE, LATEST_DATE, extract_item
from .language_id import LanguageIdentifier
from .readers import RawArticle, Skip, iter_input

NER_BATCH = 256
NER_UNREADABLE = "ner-unreadable"  # run report: titles kept without the LLM NER's entities (its reply was unreadable)
N_PERM = 64  # MinHash functions per article
# skips that mean a damaged input line or page (not a filter): the run report names the first one's
# file:line (file, or WARC file@offset with record id and URL)
DAMAGED_LINE_REASONS = ("bad-json", "bad-field", "lone-surrogate")
DAMAGED_PAGE_REASONS = ("undecodable-page",)


@dataclass
class Prepared:
    """A page or line that passed the per-article filters, with its dedupe numbers (worker output)."""
    article: RawArticle
    language: str
    n_tokens: int
    dated: DatedAs
    hashes: np.ndarray  # (id hash, normalised-text hash)
    signature: np.ndarray  # MinHash, N_PERM uint32
    entities: Optional[list[str]] = None  # title NER done by the worker (TitleNER); None: the driver does it
    no_ner_model: bool = False  # the worker's NER has no model for the language (counted by the driver)


@dataclass(frozen=True)
class DatedAs:
    """The date an article is kept with (``corpus.undated``): the date (None: undated), where it came from,
    and whether it places the article in date windows."""
    published: Optional[dt.date]
    source: DateSource
    windowed: bool


@dataclass(frozen=True)
class TitleNER:
    """Title NER in the workers, for the local backends (spaCy, stanza): entities depend on the title and
    its language only, so they are the driver's, and the driver is left with dedupe and writing (its NER
    capped ingest at about 37 workers' worth of pages, bench/bench_scaleout.py --driver-only). Each
    worker loads the models once (``_worker_extractor``). The ``llm`` backend stays in the driver (its
    limits, cache and usage live there)."""
    ner: Any  # NerConfig with stanza_dir and gazetteer made absolute
    files: str = ""  # the gazetteer's size and mtime: an edited file is reloaded by workers that outlive a run

    def __call__(self, title: str, language: str) -> tuple[list[str], bool]:
        extractor = _worker_extractor(self.ner, self.files)
        missing = getattr(extractor.backend, "missing", {})
        before = sum(missing.values())
        entities = extractor([title], [language])[0]
        return entities, sum(missing.values()) > before


_EXTRACTORS: dict[str, Any] = {}


def _worker_extractor(ner: Any, files: str) -> Any:
    key = ner.model_dump_json() + files
    if key not in _EXTRACTORS:
        _EXTRACTORS[key] = extractor_from_config(SimpleNamespace(ner=ner, resolve=Path))
    return _EXTRACTORS[key]


def worker_ner(config: Any, executor: Any) -> Optional[TitleNER]:
    """The title NER to run in the workers, or None to keep it in the driver: the ``llm`` backend, and
    an executor that runs everything in this process anyway (one local process)."""
    ner = config.ner
    if ner.backend == "llm" or (isinstance(executor, LocalExecutor) and executor.processes <= 1):
        return None
    absolute = {k: str(config.resolve(v)) for k in ("stanza_dir", "gazetteer") if (v := getattr(ner, k))}
    files = ""
    if "gazetteer" in absolute and Path(absolute["gazetteer"]).is_file():
        stat = Path(absolute["gazetteer"]).stat()
        files = f"{stat.st_size}:{stat.st_mtime_ns}"
    return TitleNER(ner.model_copy(update=absolute), files)


@dataclass(frozen=True)
class PrepareArticle:
    """The per-item work of ingest pass 1, run by the executor's workers (process pool or Ray): HTML
    extraction, the filters with language ID, and the article's hashes and MinHash signature.

    Deciding duplicates needs every article, so it stays in the driver (``duplicate_mask`` over the
    whole corpus): workers only compute each article's own numbers."""
    corpus: Any  # CorpusConfig: date window, min_tokens, language_confidence
    languages: tuple[str, ...]
    seed: int
    ner: Optional[TitleNER] = None  # title NER here instead of in the driver
    # what the local pool's forkserver imports once (extraction libraries, their warm-up)
    preload_modules: ClassVar[tuple[str, ...]] = extract_item.preload_modules  # type: ignore[attr-defined]

    def __call__(self, item: Any) -> Prepared | Skip:
        item = extract_item(item, infer_dates=self.corpus.undated == "infer")
        if isinstance(item, Skip):
            return item
        skipped: list[Skip] = []
        kept = _filter(item, self.corpus, list(self.languages), _identifier(self.languages),
                       lambda reason, where="", detail="": skipped.append(Skip(reason, where, detail)))
        if kept is None:
            return skipped[0]
        art, lang, n_tokens, dated = kept
        entities, no_model = self.ner(art.title, lang) if self.ner is not None else (None, False)
        return Prepared(art, lang, n_tokens, dated, np.array([hash64(art.id), hash64(normalise_text(art.text))]),
                        _hasher(self.seed).signature(art.text), entities, no_model)


@functools.lru_cache(maxsize=4)
def _identifier(languages: tuple[str, ...]) -> LanguageIdentifier:
    return LanguageIdentifier(list(languages))


@functools.lru_cache(maxsize=4)
def _hasher(seed: int) -> MinHasher:
    return MinHasher(n_perm=N_PERM, seed=seed)


def _inputs(ctx: StageContext) -> list[tuple[Path, str, Path | None]]:
    corpus = ctx.config.corpus
    if not corpus.inputs:
        raise InputError("corpus.inputs is empty: list at least one {path, format} (jsonl | html | warc)")
    return [(ctx.config.resolve(i.path), i.format, ctx.config.resolve(i.url_map) if i.url_map else None)
            for i in corpus.inputs]


def run(ctx: StageContext) -> None:
    cfg = ctx.config
    corpus = cfg.corpus
    languages = list(cfg.project.languages)
    executor = executor_from_config(cfg)
    task = PrepareArticle(corpus, tuple(languages), cfg.project.seed, worker_ner(cfg, executor))
    # before the corpus is read: a missing model fails now; loaded here only when NER runs here
    extractor = _prepare_ner(ctx, languages, load=task.ner is None)
    # pass 1 spools into the stage's partial folder (checked against the fingerprint): a killed run resumes
    spool = Pass1Spool(ctx.output(shard_size=1000).folder / "pass1", N_PERM)
    if spool.discarded:
        warn(ctx, f"the unfinished pass 1 of an earlier run was damaged ({spool.discarded}); reading the "
                  f"corpus again")
    done = spool.state
    ctx.count_in = done.count_in
    ctx.skipped.update(done.skipped)
    first_skip: dict[str, str] = dict(done.first_skip)
    if done.count_in:
        ctx.extra["pass1_resumed_items"] = done.count_in

    def skip(reason: str, where: str = "", detail: str = "") -> None:
        ctx.skip(reason)
        first_skip.setdefault(reason, f"{where} {detail}".strip())

    encodings: dict[str, str] = dict(done.encodings)  # files read before a kill keep their note

    def heard_encoding(path: Path, encoding: Any) -> None:
        encodings[str(path)] = encoding.describe()
        warn(ctx, f"{path} is not plain UTF-8: read as {encoding.describe()}")

    ctx.extra["extract_processes"] = executor.processes
    ctx.extra["ner_in_workers"] = task.ner is not None
    inputs = _inputs(ctx)
    try:
        for index, (path, fmt, url_map) in enumerate(inputs):
            if done.done or index < done.inputs_done:
                continue
            consumed = done.consumed if index == done.inputs_done else 0
            items = iter_input(path, fmt, url_map, on_encoding=heard_encoding)
            prepared = executor.map(task, islice(items, consumed, None))
            for item in ctx.progress(prepared, desc=f"reading {path.name}"):
                ctx.count_in += 1
                consumed += 1
                if isinstance(item, Skip):
                    skip(item.reason, item.where, item.detail)
                else:
                    art = item.article
                    dated = item.dated
                    row = {"id": art.id, "title": art.title, "text": art.text, "language": item.language,
                           "published": dated.published.isoformat() if dated.published else None,
                           "date_source": dated.source, "windowed": dated.windowed, "url": art.url,
                           "source": art.source, "n_tokens": item.n_tokens}
                    if item.entities is not None:
                        row.update(title_entities=item.entities, no_ner_model=item.no_ner_model)
                    if art.mislabelled_charset:
                        row["mislabelled_charset"] = art.mislabelled_charset
                    spool.add(row, item.hashes, item.signature)
                spool.checkpoint(index, consumed, ctx.count_in, ctx.skipped, first_skip, encodings,
                                 every=CHECKPOINT_SECONDS)
            spool.checkpoint(index + 1, 0, ctx.count_in, ctx.skipped, first_skip, encodings)
        spool.checkpoint(len(inputs), 0, ctx.count_in, ctx.skipped, first_skip, encodings, done=True)
    finally:
        spool.close()
    _report_input_damage(ctx, first_skip, encodings)
    h, sigs = spool.arrays()
    n = len(h)
    if n == 0:
        raise InputError(_zero_message(ctx, first_skip))
    dup_id, exact, near, _ = duplicate_mask(h[:, 0], h[:, 1], sigs, corpus.near_duplicate_threshold)
    del sigs, h
    drop = dup_id | exact | near
    if int(drop.sum()) == n:
        raise InputError(_zero_message(ctx, first_skip))
    for reason, mask in (("duplicate-id", dup_id), ("exact-duplicate", exact), ("near-duplicate", near)):
        if mask.any():
            ctx.skip(reason, int(mask.sum()))
    _write(ctx, spool.path, drop, extractor)
    ctx.extra["languages"] = languages
    ctx.extra["ner_backend"] = cfg.ner.backend


def _report_input_damage(ctx: StageContext, first_skip: dict[str, str], encodings: dict[str, str]) -> None:
    """Run-report notes for damaged input lines and pages (count and the first one's file:line) and for input
    files read in another encoding than UTF-8 (also those read before a killed run resumed), so a bad
    corpus is visible, not only counted."""
    notes = [f"{reason}: {ctx.skipped[reason]} input line(s) skipped, first {first_skip.get(reason, '?')}"
             for reason in DAMAGED_LINE_REASONS if ctx.skipped.get(reason)]
    notes += [f"{reason}: {ctx.skipped[reason]} page(s) skipped, first {first_skip.get(reason, '?')}"
              for reason in DAMAGED_PAGE_REASONS if ctx.skipped.get(reason)]
    notes += [f"{path} read as {how}" for path, how in sorted(encodings.items())]
    if encodings:
        ctx.extra["input_encodings"] = encodings
    if notes:
        for line in notes:
            ctx.report_line(line)


def dated_as(art: RawArticle, corpus: Any) -> DatedAs | None:
    """The date ``art`` is kept with under ``corpus.undated``; None: dropped as missing-date."""
    if art.published is not None:
        return DatedAs(art.published, "published", True)
    if corpus.undated == "drop":
        return None
    if corpus.undated == "keep":
        return DatedAs(None, "none", False)
    latest = LATEST_DATE if art.hints.fetched is None else art.hints.fetched + dt.timedelta(days=1)
    day, source = infer_date(art.url, art.hints, EARLIEST_DATE, latest)
    return DatedAs(day, source, day is not None and corpus.inferred_dates_in_windows)


def _filter(art: RawArticle, corpus: Any, languages: list[str], lid: LanguageIdentifier,
            skip: Any) -> tuple[RawArticle, str, int, DatedAs] | None:
    where = art.source
    dated = dated_as(art, corpus)
    if dated is None:
        skip("missing-date", where, f"{art.id} (corpus.undated: drop; keep or infer keeps it)")
        return None
    if dated.windowed and corpus.date_from and dated.published < corpus.date_from:
        skip("before-date-window", where, art.id)
        return None
    if dated.windowed and corpus.date_to and dated.published > corpus.date_to:
        skip("after-date-window", where, art.id)
        return None
    # one token per character of unspaced scripts is at least the word count of any language: shorter than
    # min_tokens by it, an article is too short whatever lingua says (and lingua is not asked)
    n_tokens = count_tokens(art.text)
    if n_tokens < corpus.min_tokens:
        skip("too-short", where, f"{art.id}: {n_tokens} < corpus.min_tokens={corpus.min_tokens}")
        return None
    declared = (art.declared_language or "").split("-")[0].lower()
    if declared and declared not in languages and len(declared) == 2:
        skip("language-not-configured", where, f"{art.id}: declared {declared}")
        return None
    guess = lid.detect(f"{art.title}. {art.text}")
    if guess.language is not None and guess.language not in languages:
        skip("language-not-configured", where, f"{art.id}: detected {guess.language} ({guess.confidence:.2f})")
        return None
    if guess.language is None or guess.confidence < corpus.language_confidence:
        skip("language-uncertain", where,
             f"{art.id}: best {guess.language} at {guess.confidence:.2f} < corpus.language_confidence")
        return None
    n_tokens = count_tokens(art.text, guess.language)  # words: zh, ja, th segmented (babelrag/tokens.py)
    if n_tokens < corpus.min_tokens:
        skip("too-short", where, f"{art.id}: {n_tokens} < corpus.min_tokens={corpus.min_tokens}")
        return None
    return art, guess.language, n_tokens, dated


def _prepare_ner(ctx: StageContext, languages: list[str], load: bool = True) -> Any:
    """The title NER extractor with its models loaded (``load=False`` when the workers run NER: the
    driver then only checks the models are there and keeps the counters); languages without a model
    are warned about now (their titles are counted as ``no-ner-model-<lang>`` and kept)."""
    extractor = extractor_from_config(ctx.config, llm_factory=lambda: ctx.llm)
    missing = extractor.prepare(languages, load=load)
    if missing:
        ctx.extra["ner_languages_without_model"] = missing
        gazetteer = " (only the gazetteer's known entities)" if ctx.config.ner.gazetteer else ""
        warn(ctx, f"title NER has no model for {', '.join(missing)}: those titles get no NER entities"
                  f"{gazetteer} and are counted as no-ner-model-<lang>. Map a spaCy model in ner.spacy_models, "
                  f"or use ner.backend: stanza / llm, or a ner.gazetteer.")
    return extractor


def warn(ctx: StageContext, message: str) -> None:
    if ctx.console is not None:
        ctx.console.print(f"[yellow]warning[/] ({ctx.spec.name}): {message}")
    else:
        logging.getLogger("babelrag.ingest").warning(message)


def _write(ctx: StageContext, spool: Path, drop: np.ndarray, extractor: Any) -> None:
    """Stream the spool into the output, running title NER on batches of kept articles."""
    out = ctx.output(shard_size=1000)
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        if not batch:
            return
        ents = extractor([b["title"] for b in batch], [b["language"] for b in batch])
        for row, e in zip(batch, ents):
            out.add(Article(**row, title_entities=e))
        batch.clear()

    total = int((~drop).sum())
    sources = dict.fromkeys(DATE_SOURCES, 0)
    mislabelled: Counter[str] = Counter()  # declared charset -> kept pages that declared it wrongly ("": none)
    with open(spool, encoding="utf-8") as fh:
        rows = (json.loads(line) for i, line in enumerate(fh) if not drop[i])
        for row in ctx.progress(rows, total=total, desc="title NER"):
            sources[row["date_source"]] += 1
            mislabelled[row.pop("mislabelled_charset", "")] += 1
            if out.has(row["id"]):
                continue
            if "title_entities" in row:  # NER done by the worker (TitleNER): counted as the driver would
                if row.pop("no_ner_model"):
                    extractor.backend.missing[row["language"]] += 1
                out.add(Article(**row))
                continue
            batch.append(row)
            if len(batch) >= NER_BATCH:
                flush()
        flush()
    report_date_sources(ctx, sources)
    mislabelled.pop("", None)
    if mislabelled:  # kept, read as UTF-8 (not as the mojibake the declared charset gives)
        ctx.note("mislabelled-charset", sum(mislabelled.values()))
        ctx.extra["mislabelled_charsets"] = dict(sorted(mislabelled.items()))
    failures = getattr(extractor.backend, "failures", 0)
    if failures:  # kept without the LLM's entities: its reply could not be read (not a title naming nobody)
        ctx.note(NER_UNREADABLE, failures)
        ctx.report_line(f"title NER: the LLM's reply stayed unreadable after the repair re-ask for {failures} "
                        f"title(s), kept without its entities (the gazetteer's still count), not as titles that "
                        f"name nobody (first: {extractor.backend.first_error}); the LLM cache keeps those replies: "
                        f"`babelrag run --force ingest --retry-unreadable` asks again")
    for lang, n in sorted(getattr(extractor.backend, "missing", {}).items()):
        ctx.note(f"no-ner-model-{lang}", n)  # kept, without model entities


def report_date_sources(ctx: StageContext, sources: dict[str, int]) -> None:
    """Kept articles per date source (run report): how many carry their own publication date, how many an
    inferred one (modified, url, fetched) and how many none; the policy and whether windows use inferred dates."""
    corpus = ctx.config.corpus
    ctx.extra["date_sources"] = {"undated_policy": corpus.undated,
                                 "inferred_dates_in_windows": corpus.inferred_dates_in_windows, **sources}
    for source, n in sources.items():
        if source != "published" and n:
            ctx.note(f"date-{source}", n)  # kept; "none": undated, "modified"/"url"/"fetched": inferred


def _zero_message(ctx: StageContext, first_skip: dict[str, str]) -> str:
    counts = ", ".join(f"{k}={v}" for k, v in ctx.skipped.most_common()) or "no input items at all"
    examples = "; ".join(f"{k}: {v}" for k, v in list(first_skip.items())[:3])
    return (f"ingest: zero usable articles out of {ctx.count_in} input items ({counts}). "
            f"Examples: {examples or '-'}. Check corpus.inputs, the date window, corpus.undated, corpus.min_tokens, "
            f"project.languages and corpus.language_confidence.")
