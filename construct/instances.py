"""Stage ``instances``: one benchmark item per question, setting and question language.

Settings (see ``docs/questions.md``):

* ``mono``          en–en question pair; question in X; 2 supporting + N English distractors.
* ``en-baseline``   the same documents with the English question (``mono+EQ`` is a synonym kept for analyses).
* ``multi``         X–en question pair; question in X; 1 supporting + M distractors in English and in X.
* ``multi+EQ/+ES/+ED`` controlled variants (any combination): English question; X supporting article
  replaced by its English machine translation; X distractors replaced by English machine translations.
* ``monolingual``   X–X question pair of a ``questions.monolingual`` language (MIRAGE-Bench's setting): question
  written in X; 2 supporting + N distractors, all X articles (nothing translated).
* ``no-retrieval``  question only;  ``oracle``  supporting articles only (for every question language).

Leakage is checked on every finished instance (``check_leakage``; the rules live in ``babelrag.leakage``,
shared with release validation): no supporting article among the distractors and every distractor published
at least ``distractors.min_days_before`` days before the earliest supporting article. A violating instance is an ErrorRecord, never a stored record. Document order is
shuffled with a seed derived from the project seed and the instance id, so ids and order are stable.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Callable, Optional

from pydantic import Field, field_validator

from babelrag.config import Section
from babelrag.errors import ConfigError
from babelrag.failed_items import error_reason, is_retryable
from babelrag.leakage import instance_leaks
from babelrag.construct.translate import needed_document_translations, translate_articles, translate_qas
from babelrag.records import (MONOLINGUAL_SETTING, Article, DistractorSet, Document, Instance, QAItem, Translation,
                              x_language)
from babelrag.stage import StageContext, StageSpec
from babelrag.rows import parse, read_rows


# ---------------------------------------------------------------- declaration (config section + stage spec)


class InstancesConfig(Section):
    # mono: en–en questions, all documents English; multi: X–en questions. mono documents are already
    # English, so the +ES/+ED variants only exist for multi (mono+EQ is a synonym of en-baseline).
    # monolingual: X–X questions of questions.monolingual, all documents in X (none without that setting)
    settings: list[str] = Field(
        default_factory=lambda: ["mono", "multi", "en-baseline", "multi+EQ", "multi+ES", "multi+ED",
                                 MONOLINGUAL_SETTING, "no-retrieval", "oracle"]
    )
    mono_supporting: int = Field(2, ge=1, le=2)  # a pair has two articles (mono and monolingual)
    mono_distracting: int = Field(6, ge=0)  # mono: English distractors; monolingual: distractors in X
    multi_distracting_per_language: int = Field(3, ge=0)
    allow_fewer_distractors: bool = True  # False: skip an instance that cannot get its full distractor count
    translate_documents: bool = True  # machine-translate X articles to English for multi+ES / multi+ED
    translate_max_chars: int = Field(2000, ge=200)  # article text sent for translation is cut here
    endpoint: Optional[str] = None
    # QAItems after human review (`babelrag annotate pull ... --merge-into` output, .jsonl or .parquet):
    # they replace the filters stage's records of the same id (verified flag, corrected answer, human
    # translations, human rejections)
    reviewed_qa: Optional[str] = None

    @field_validator("settings")
    @classmethod
    def _known_settings(cls, value: list[str]) -> list[str]:
        for name in value:
            try:
                parse_setting(name)
            except ConfigError as exc:
                raise ValueError(str(exc).removeprefix("instances.settings: ")) from None
        return value


STAGE = StageSpec(
    "instances", "babelrag.construct.instances:run", "Instance", ("ingest", "filters", "distractors"),
    ("instances", "project", "distractors"),
    description="one instance per question, setting and language", uses_llm=True,
    files=("instances.reviewed_qa",), input_paths=(("instances.reviewed_qa", ()),),
    version="4",
    changes=(("2", "reads typed translations (QAItem.translations)"),
             ("3", "re-translates question translations made from English a human review has since corrected; "
                   "a_type says human_corrected / human_translated"),
             ("4", "the monolingual setting: X–X questions over X documents (questions.monolingual)")),
    llm_endpoints=(("instances.endpoint", (("instances.translate_documents", True),)),), runtime_sections=("llm",),
    prompts=("babelrag.construct.instances:chains/prompts/translate_article.yaml",
             "babelrag.construct.translate:chains/prompts/translate_qa.yaml"),
    owns={"instances": InstancesConfig}, order=70)

BASES = ("mono", "multi")
SPECIAL = ("en-baseline", MONOLINGUAL_SETTING, "no-retrieval", "oracle")
VARIANTS = ("EQ", "ES", "ED")


@dataclass(frozen=True)
class Setting:
    """A parsed setting name such as ``multi+ES+ED``."""

    name: str
    base: str  # mono | multi | en-baseline | monolingual | no-retrieval | oracle
    eq: bool = False
    es: bool = False
    ed: bool = False


def parse_setting(name: str) -> Setting:
    """Validate a setting name; unknown or meaningless names are ConfigErrors that say what is allowed."""
    if name in SPECIAL:
        return Setting(name, name)
    base, *variants = name.split("+")
    allowed = f"{', '.join(BASES + SPECIAL)}, or mono+EQ / multi+EQ|ES|ED combinations"
    if base not in BASES or any(v not in VARIANTS for v in variants) or len(set(variants)) != len(variants):
        raise ConfigError(f"instances.settings: unknown setting {name!r}; allowed: {allowed}")
    if base == "mono" and set(variants) - {"EQ"}:
        raise ConfigError(f"instances.settings: {name!r} changes nothing: mono documents are already English "
                          "(use multi+ES / multi+ED)")
    return Setting(name, base, "EQ" in variants, "ES" in variants, "ED" in variants)


def instance_id(qa_id: str, setting: str, language: str) -> str:
    """Stable id: the same question, setting and language always give the same id."""
    return "inst-" + hashlib.sha256(f"{qa_id}|{setting}|{language}".encode()).hexdigest()[:16]


class LeakageError(ValueError):
    """An assembled instance breaks a leakage rule (a bug upstream, never stored)."""


def check_leakage(inst: Instance, min_days_before: int) -> None:
    """Raise LeakageError on the first leakage rule (``babelrag.leakage``) the instance breaks."""
    leaks = instance_leaks(inst, min_days_before)
    if leaks:
        raise LeakageError(f"instance {inst.id}: " + "; ".join(leak.detail for leak in leaks))


class Skip(Exception):
    """This (question, setting, language) cannot be built; ``reason`` is counted in the run report."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _doc(article: Article, role: str, kind: str, translated: Optional[tuple[str, str]] = None) -> Document:
    title, text = translated if translated else (article.title, article.text)
    return Document(article_id=article.id, title=title, text=text,
                    language="en" if translated else article.language, published=article.real_published,
                    role=role, kind=kind, machine_translated=translated is not None)  # type: ignore[arg-type]


def qa_languages(qa: QAItem, articles: dict[str, Article], pivot: str = "en") -> tuple[str, Optional[str]]:
    """("mono", None) for a pivot–pivot question, ("multi", X) for an X–pivot one (the pivot rule the
    questions stage stored; computed from the articles for records written before), ("monolingual", X) for a
    question written in X over two X articles; Skip otherwise."""
    if any(a not in articles for a in qa.article_ids):
        raise Skip("missing-article")
    if qa.language:
        return MONOLINGUAL_SETTING, qa.language
    x = qa.x_language
    if x is None:
        x = x_language([articles[a].language for a in qa.article_ids], pivot)
    if x is None:
        raise Skip("unsupported-language-pair")
    return ("multi", x) if x else ("mono", None)


@dataclass
class Assembler:
    """Builds instances for one question from its articles and distractors."""

    articles: dict[str, Article]
    mono_supporting: int = 2
    mono_distracting: int = 6
    multi_distracting: int = 3
    min_days_before: int = 14
    allow_fewer_distractors: bool = True
    seed: int = 13
    pivot: str = "en"
    # (article_id) -> (title, text) in the pivot language, for +ES / +ED
    doc_translation: Callable[[str], Optional[tuple[str, str]]] = lambda _id: None

    def _distractors(self, dset: Optional[DistractorSet], language: str, n: int, support: set[str]) -> list[Document]:
        docs = []
        for d in (dset.distractors if dset else []):
            if d.language != language or d.article_id in support or d.article_id not in self.articles:
                continue
            if any(x.article_id == d.article_id for x in docs):
                continue
            docs.append(_doc(self.articles[d.article_id], "distractor", d.kind))
            if len(docs) == n:
                break
        if len(docs) < n and not self.allow_fewer_distractors:
            raise Skip(f"too-few-distractors-{language}")
        return docs

    def _question(self, qa: QAItem, language: str) -> tuple[str, str, bool]:
        if language == (qa.language or self.pivot):  # as written: English, or a monolingual question's X
            return qa.question, qa.answer, False
        tr = qa.translation(language)
        if tr is None or not tr.usable:
            raise Skip(f"no-translation-{language}")
        return tr.question, tr.answer, tr.machine_translated

    def _translated(self, article_id: str) -> tuple[str, str]:
        tr = self.doc_translation(article_id)
        if tr is None:
            raise Skip("no-document-translation")
        return tr

    def documents(self, qa: QAItem, setting: Setting, kind: str, dset: Optional[DistractorSet]) -> list[Document]:
        support_ids = set(qa.article_ids)
        support = [self.articles[a] for a in qa.article_ids]
        if kind == MONOLINGUAL_SETTING:
            docs = [_doc(a, "supporting", "relevant") for a in support[: self.mono_supporting]]
            if setting.base == MONOLINGUAL_SETTING:
                docs += self._distractors(dset, support[0].language, self.mono_distracting, support_ids)
            return docs
        if kind == "mono":
            docs = [_doc(a, "supporting", "relevant") for a in support[: self.mono_supporting]]
            if setting.base in ("mono", "en-baseline"):
                docs += self._distractors(dset, self.pivot, self.mono_distracting, support_ids)
            return docs
        docs = []
        for a in support:
            translate = setting.es and a.language != self.pivot
            docs.append(_doc(a, "supporting", "relevant", self._translated(a.id) if translate else None))
        if setting.base == "multi":
            x = next(a.language for a in support if a.language != self.pivot)
            docs += self._distractors(dset, self.pivot, self.multi_distracting, support_ids)
            x_docs = self._distractors(dset, x, self.multi_distracting, support_ids)
            if setting.ed:
                x_docs = [_doc(self.articles[d.article_id], "distractor", d.kind, self._translated(d.article_id))
                          for d in x_docs]
            docs += x_docs
        return docs

    def targets(self, qa: QAItem, setting: Setting, languages: list[str]) -> list[str]:
        """Question languages this setting yields for this question ([] when it does not apply)."""
        kind, x = qa_languages(qa, self.articles, self.pivot)
        if kind == MONOLINGUAL_SETTING:  # written in X only: its own setting, and X without documents / oracle
            return [x] if setting.base in (MONOLINGUAL_SETTING, "no-retrieval", "oracle") else []  # type: ignore[list-item]
        if setting.base == MONOLINGUAL_SETTING:
            return []
        if setting.base == "mono":
            if kind != "mono":
                return []
            return [self.pivot] if setting.eq else [lang for lang in languages if lang != self.pivot]
        if setting.base == "en-baseline":
            return [self.pivot] if kind == "mono" else []
        if setting.base == "multi":
            if kind != "multi":
                return []
            return [self.pivot] if setting.eq else [x]  # type: ignore[list-item]
        # no-retrieval / oracle: every question language of the question
        if kind == "mono":
            return [self.pivot] + [lang for lang in languages if lang != self.pivot]
        return [self.pivot, x]  # type: ignore[list-item]

    def build(self, qa: QAItem, setting: Setting, language: str, dset: Optional[DistractorSet]) -> Instance:
        kind, _ = qa_languages(qa, self.articles, self.pivot)
        if setting.base in ("mono", "multi", MONOLINGUAL_SETTING) and kind != setting.base:
            raise Skip("setting-not-applicable")
        question, answer, q_mt = self._question(qa, language)
        docs = [] if setting.base == "no-retrieval" else self.documents(qa, setting, kind, dset)
        iid = instance_id(qa.id, setting.name, language)
        rng = random.Random(f"{self.seed}|{iid}")
        rng.shuffle(docs)
        inst = Instance(
            id=iid, qa_id=qa.id, setting=setting.name, language=language, question=question, answer=answer,
            en_question=qa.question, en_answer=qa.answer, q_type=qa.q_type, documents=docs,  # as written
            verified=qa.verified, machine_translated=q_mt or any(d.machine_translated for d in docs),
            a_type=qa.answer_type(language, self.pivot),
            dates=[self.articles[a].real_published for a in qa.article_ids],
        )
        check_leakage(inst, self.min_days_before)
        return inst


class DocumentTranslationFailed(Exception):
    """A document the instance shows in translation got no answer from the endpoint: the instance is a
    failed item (retried next run), not one skipped for want of a translation."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def _needs_doc_translation(settings: list[Setting]) -> bool:
    return any(s.base == "multi" and (s.es or s.ed) for s in settings)


def overlay_reviewed(ctx, qas: list[QAItem]) -> list[QAItem]:  # noqa: ANN001
    """Replace machine records by their human-reviewed versions (``instances.reviewed_qa``), by id.

    A reviewed record whose id the filters stage does not have is stale (the question changed since it
    was pushed): it is counted and left out, never shown as if it matched.
    """
    path = ctx.config.resolve(ctx.config.instances.reviewed_qa)
    if path is None:
        return qas
    reviewed = {q.id: q for q in parse(QAItem, read_rows(path), str(path))}
    known = {q.id for q in qas}
    stale = len(set(reviewed) - known)
    if stale:
        ctx.skip("reviewed-qa-unknown-id", stale)
    ctx.extra["reviewed_qa"] = {"file": str(path), "records": len(reviewed), "applied": len(reviewed) - stale,
                                "verified": sum(q.verified for q in reviewed.values() if q.id in known)}
    return [reviewed.get(q.id, q) for q in qas]


def stale_translations(qas: list[QAItem], wanted: Callable[[QAItem], set[str]]) -> dict[str, list[str]]:
    """qa id -> the languages its instances are built in (``wanted``) whose translation was made from English
    text a human review has since corrected (``QAItem.translation_is_current``)."""
    out: dict[str, list[str]] = {}
    for qa in qas:
        stale = [lang for lang in sorted(wanted(qa))
                 if (tr := qa.translation(lang)) is not None and tr.usable and not qa.translation_is_current(tr)]
        if stale:
            out[qa.id] = stale
    return out


def retranslate_corrected(ctx, qas: list[QAItem], wanted: Callable[[QAItem], set[str]],  # noqa: ANN001
                          pivot: str) -> tuple[list[QAItem], dict[tuple[str, str], str]]:
    """One reviewed source of truth per question: a translation of English the annotators corrected is
    replaced by a machine translation of the corrected text (``machine_translated``), so no instance
    pairs a corrected ``en_answer`` with a gold answer translated from the rejected one. A human
    translation made against the corrected text is current and kept. A failed re-translation leaves the
    language without a translation, never built from the old text: a call that got no answer is returned as
    ``{(qa id, language): error}`` (those instances are failed items, retried by the next run); any other
    failure makes its instances counted skips (``no-translation-<lang>``)."""
    stale = stale_translations(qas, wanted)
    if not stale:
        return qas, {}
    by_id = {q.id: q for q in qas}
    fresh: dict[str, dict[str, Translation]] = {}
    by_langs: dict[tuple[str, ...], list[QAItem]] = {}
    for qa_id, langs in stale.items():
        by_langs.setdefault(tuple(langs), []).append(by_id[qa_id])
    for langs, group in by_langs.items():
        fresh.update(translate_qas(ctx.llm, group, list(langs), stage=ctx.spec.name,
                                   endpoint=ctx.config.instances.endpoint, source_language=pivot))
    unanswered = {(qa_id, lang): tr.error or "" for qa_id, trs in fresh.items() for lang, tr in trs.items()
                  if not tr.usable and is_retryable(error_reason(tr.error))}
    failed = sum(1 for trs in fresh.values() for tr in trs.values() if not tr.usable)
    ctx.extra["retranslated_after_review"] = {"requested": sum(map(len, stale.values())), "failed": failed}
    if failed > len(unanswered):
        ctx.skip("retranslation-failed", failed - len(unanswered))

    def replaced(qa: QAItem) -> QAItem:
        new = fresh.get(qa.id)
        if not new:
            return qa
        kept = [t for t in qa.translations if t.language not in new]
        return qa.model_copy(update={"translations": sorted([*kept, *new.values()], key=lambda t: t.language)})

    return [replaced(q) for q in qas], unanswered


def run(ctx: StageContext) -> None:
    """Assemble every requested setting for every accepted question."""
    cfg = ctx.config
    settings = [parse_setting(s) for s in cfg.instances.settings]
    qas = overlay_reviewed(ctx, ctx.read("filters", QAItem))
    dsets = {d.qa_id: d for d in ctx.read("distractors", DistractorSet)}
    accepted = [q for q in qas if q.accepted]
    # only the articles an instance can show (supporting + chosen distractors), not the whole corpus
    needed = {a for q in accepted for a in q.article_ids}
    needed |= {d.article_id for q in accepted if q.id in dsets for d in dsets[q.id].distractors}
    articles = ctx.read_ids("ingest", Article, needed)
    if len(qas) > len(accepted):
        ctx.skip("rejected-by-filters", len(qas) - len(accepted))
    languages = list(cfg.project.languages)
    pivot = cfg.project.pivot_language
    translations: dict[str, tuple[str, str]] = {}  # filled below, before any instance is built
    failed_docs: dict[str, str] = {}  # article id -> error of a translation call that got no answer
    asm = Assembler(
        articles=articles, mono_supporting=cfg.instances.mono_supporting,
        mono_distracting=cfg.instances.mono_distracting,
        multi_distracting=cfg.instances.multi_distracting_per_language,
        min_days_before=cfg.distractors.min_days_before,
        allow_fewer_distractors=cfg.instances.allow_fewer_distractors, seed=ctx.seed, pivot=pivot,
        doc_translation=lambda art_id: _document_translation(translations, failed_docs, art_id),
    )

    def wanted(qa: QAItem) -> set[str]:
        """The question languages other than the pivot that its instances are built in."""
        try:
            return {lang for s in settings for lang in asm.targets(qa, s, languages)} - {pivot}
        except Skip:
            return set()

    accepted, unanswered = retranslate_corrected(ctx, accepted, wanted, pivot)

    if _needs_doc_translation(settings) and cfg.instances.translate_documents:
        todo = needed_document_translations(accepted, dsets, articles, pivot, cfg.instances.multi_distracting_per_language)
        if todo:
            results = translate_articles(ctx.llm, [articles[i] for i in todo], pivot, stage=ctx.spec.name,
                                         endpoint=cfg.instances.endpoint,
                                         max_chars=cfg.instances.translate_max_chars)
            for art_id, value in results.items():
                if isinstance(value, str) and is_retryable(error_reason(value)):
                    failed_docs[art_id] = value
                elif isinstance(value, str):
                    ctx.skip("document-translation-failed")
                else:
                    translations[art_id] = value
        ctx.extra["document_translations"] = len(translations)

    out = ctx.output()
    per_setting: dict[str, int] = {s.name: 0 for s in settings}
    short = 0
    for qa in ctx.progress(accepted, total=len(accepted), desc="questions"):
        ctx.count_in += 1
        for setting in settings:
            try:
                langs = asm.targets(qa, setting, languages)
            except Skip as skip:
                ctx.skip(skip.reason)
                break
            for lang in langs:
                iid = instance_id(qa.id, setting.name, lang)
                if out.has(iid):
                    per_setting[setting.name] += 1
                    continue
                if (qa.id, lang) in unanswered:  # the re-translation got no answer: retried by the next run
                    error = unanswered[(qa.id, lang)]
                    ctx.error(iid, f"translate:{error_reason(error)}", f"re-translation into {lang}: {error}"[:1500])
                    continue
                try:
                    inst = asm.build(qa, setting, lang, dsets.get(qa.id))
                except Skip as skip:
                    ctx.skip(f"{setting.name}:{skip.reason}")
                    continue
                except LeakageError as exc:
                    ctx.error(iid, "leakage", str(exc))
                    continue
                except DocumentTranslationFailed as exc:
                    ctx.error(iid, exc.reason, str(exc))
                    continue
                expected = _expected_distractors(setting, cfg.instances)
                if sum(d.role == "distractor" for d in inst.documents) < expected:
                    short += 1
                out.add(inst)
                per_setting[setting.name] += 1
    ctx.extra["instances_per_setting"] = per_setting
    ctx.extra["instances_with_fewer_distractors"] = short


def _document_translation(translations: dict[str, tuple[str, str]], failed: dict[str, str],
                          art_id: str) -> Optional[tuple[str, str]]:
    if art_id in failed:
        raise DocumentTranslationFailed(f"translate:{error_reason(failed[art_id])}",
                                        f"translation of document {art_id}: {failed[art_id]}"[:1500])
    return translations.get(art_id)


def _expected_distractors(setting: Setting, icfg) -> int:  # noqa: ANN001
    if setting.base in ("mono", "en-baseline", MONOLINGUAL_SETTING):
        return icfg.mono_distracting
    if setting.base == "multi":
        return 2 * icfg.multi_distracting_per_language
    return 0
