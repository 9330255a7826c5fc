"""Stage ``distractors``: documents that look useful but do not answer, per question and language.

Candidates come from the shared article index (encoder + Milvus from ``construct/crosslingual.py`` and
``construct/vectorstore.py``), always restricted to the language needed and to articles published at
least ``distractors.min_days_before`` days before the earliest supporting article, never a supporting one.
Three kinds (RAGE adds the last two to XRAG's first):

* ``related``            nearest articles to the question (in the target language when a translation exists);
* ``seemingly_relevant`` nearest articles to the supporting articles themselves (look like the evidence);
* ``irrelevant``         a seeded random draw from the remaining eligible articles.

``distractors.mixture`` sets the proportions; the list is ordered so that every prefix keeps them (the
instances stage takes the first N per language). With ``verify_with_llm`` a candidate that the LLM can
answer the question from (judged against the gold answer) is dropped.
"""
from __future__ import annotations

import random
from contextlib import ExitStack
from typing import Any, Optional

from pydantic import Field, field_validator

from babelrag.config import Section
from babelrag.construct.dense import encoder_for, open_index
from babelrag.construct.exactsearch import searcher
from babelrag.records import Article, Distractor, DistractorSet, QAItem, x_language
from babelrag.stage import StageSpec
from babelrag.construct.chains.outputs import Attempt
from babelrag.construct.filters import _judge
from babelrag.errors import ConfigError
from babelrag.llm.prompts import Prompt


# ---------------------------------------------------------------- declaration (config section + stage spec)


class DistractorsConfig(Section):
    per_language: int = Field(6, ge=0)
    min_days_before: int = Field(14, ge=0)
    mixture: dict[str, float] = Field(
        default_factory=lambda: {"related": 1.0, "irrelevant": 0.0, "seemingly_relevant": 0.0}
    )
    verify_with_llm: bool = False
    endpoint: Optional[str] = None  # for verify_with_llm
    max_article_chars: int = Field(4000, ge=200)  # article text shown to the LLM verifier

    @field_validator("mixture")
    @classmethod
    def _known_kinds(cls, value: dict[str, float]) -> dict[str, float]:
        kinds = ("related", "seemingly_relevant", "irrelevant")
        unknown = sorted(set(value) - set(kinds))
        if unknown:
            raise ValueError(f"unknown distractor kind(s) {unknown}; allowed: {', '.join(kinds)}")
        if any(w < 0 for w in value.values()) or sum(value.values()) <= 0:
            raise ValueError("weights must be >= 0 and sum to more than 0")
        return value


STAGE = StageSpec(
    "distractors", "babelrag.construct.distractors:run", "DistractorSet", ("ingest", "index", "filters"),
    ("distractors", "project"), uses_llm=True, version="3",
    changes=(("2", "reads the index stage's store (never re-encodes the corpus) and typed translations"),
             ("3", "a monolingual X–X question (questions.monolingual) gets X distractors only, found with its "
                   "own question")),
    description="related / irrelevant / seemingly relevant distractors",
    # dense: the encoder and store the index stage built, whose output (and so this fingerprint) changes
    # with them; pair-only dense settings never make distractors stale
    llm_endpoints=(("distractors.endpoint", (("distractors.verify_with_llm", True),)),),
    prompts=tuple(f"babelrag.construct.distractors:chains/prompts/{p}.yaml"
                  for p in ("answer_single", "judge_answer")),
    runtime_sections=("executor", "llm", "dense"), owns={"distractors": DistractorsConfig},
    order=60)

KINDS = ("related", "seemingly_relevant", "irrelevant")


def kind_sequence(mixture: dict[str, float], n: int) -> list[str]:
    """n kinds in order such that each prefix follows the mixture as closely as possible."""
    unknown = set(mixture) - set(KINDS)
    if unknown:
        raise ConfigError(f"distractors.mixture: unknown kind(s) {sorted(unknown)}; allowed: {', '.join(KINDS)}")
    total = sum(max(0.0, w) for w in mixture.values())
    if total <= 0:
        raise ConfigError("distractors.mixture: weights must sum to more than 0")
    share = {k: max(0.0, mixture.get(k, 0.0)) / total for k in KINDS}
    taken = {k: 0 for k in KINDS}
    seq = []
    for i in range(1, n + 1):
        k = max(KINDS, key=lambda k: (share[k] * i - taken[k], share[k]))
        taken[k] += 1
        seq.append(k)
    return seq


def select(candidates: dict[str, list[tuple[str, float]]], sequence: list[str]) -> tuple[list[tuple[str, str, float]], int]:
    """Fill ``sequence`` from each kind's ranked candidates (no article twice); a kind that runs out
    borrows from the others in KINDS order. Returns [(article_id, kind, score)] and how many borrowed."""
    used: set[str] = set()
    pos = {k: 0 for k in KINDS}
    out, borrowed = [], 0

    def take(kind: str) -> Optional[tuple[str, float]]:
        lst = candidates.get(kind, [])
        while pos[kind] < len(lst):
            aid, score = lst[pos[kind]]
            pos[kind] += 1
            if aid not in used:
                return aid, score
        return None

    for want in sequence:
        got = take(want)
        kind = want
        if got is None:
            for other in KINDS:
                if other != want and (got := take(other)) is not None:
                    kind = other
                    borrowed += 1
                    break
        if got is None:
            break
        used.add(got[0])
        out.append((got[0], kind, got[1]))
    return out, borrowed


def needed_languages(qa: QAItem, articles: dict[str, Article], pivot: str) -> list[str]:
    """The pivot language always; plus X for an X–pivot question (multilingual settings); X only for a
    monolingual X–X question (its instances show X documents only)."""
    if qa.language:
        return [qa.language]
    x = qa.x_language
    if x is None:  # a record written before the questions stage stored the pivot rule
        x = x_language([articles[a].language if a in articles else pivot for a in qa.article_ids], pivot)
    return [pivot, x] if x else [pivot]


def query_text(qa: QAItem, lang: str, pivot: str) -> str:
    if lang != pivot and lang != qa.language:  # a monolingual question is written in its language
        tr = qa.translation(lang)
        if tr is not None and tr.usable:
            return tr.question
    return qa.question


class CandidateFinder:
    """Ranked candidates per kind for one question and language from the vector store."""

    def __init__(self, store: Any, encoder: Any, days: dict[str, int],
                 langs: dict[str, str], pool: int, seed: int, exclude_nearest: int = 6) -> None:
        self.store, self.encoder = store, encoder
        self.exclude_nearest = exclude_nearest
        self.days, self.langs, self.pool, self.seed = days, langs, pool, seed

    def find(self, qa: QAItem, lang: str, latest_day: int, kinds: set[str], pivot: str) -> dict[str, list]:
        import numpy as np

        where = {"languages": [lang], "published_to": latest_day, "exclude_ids": list(qa.article_ids)}
        out: dict[str, list[tuple[str, float]]] = {}
        qvec = self.encoder.encode([query_text(qa, lang, pivot)], "query")[0]
        # self.days holds the articles with a real publication date only: an inferred date placed in windows
        # (corpus.inferred_dates_in_windows) passes the store's date filter but never freshness
        related = [(h.id, h.score) for h in self.store.search(qvec, top_k=self.pool, **where)[0]
                   if h.id in self.days]
        out["related"] = related
        if "seemingly_relevant" in kinds:
            sup = list(self.store.vectors(list(qa.article_ids)).values())  # read back from Milvus
            if sup:
                centre = np.mean(sup, axis=0)
                centre = centre / max(float(np.linalg.norm(centre)), 1e-12)
                out["seemingly_relevant"] = [(h.id, h.score) for h in
                                             self.store.search(centre, top_k=self.pool, **where)[0]
                                             if h.id in self.days]
        if "irrelevant" in kinds:
            near = {aid for aid, _ in related[: self.exclude_nearest]}  # random, but never the closest few
            eligible = sorted(aid for aid, d in self.days.items() if self.langs[aid] == lang and d <= latest_day
                              and aid not in qa.article_ids and aid not in near)
            rng = random.Random(f"{self.seed}|{qa.id}|{lang}")
            picked = rng.sample(eligible, min(len(eligible), self.pool))
            vecs = self.store.vectors(picked) if picked else {}
            out["irrelevant"] = [(aid, float(np.dot(qvec, vecs[aid])) if aid in vecs else 0.0) for aid in picked]
        return out


class VerificationFailed(Exception):
    """A verification call got no answer (endpoint down, timeouts, 5xx): the question's distractor set is a
    failed item, retried by the next run, rather than one chosen without those candidates."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def answering(runner: Any, qa: QAItem, candidates: list[str], articles: dict[str, Article], *, stage: str,
              endpoint: Optional[str], max_chars: int) -> set[str]:
    """Candidates from which the LLM answers the question correctly (judged); unreadable replies count
    as answering, to stay on the safe side. Raises ``VerificationFailed`` when a call got no answer."""
    if not candidates:
        return set()
    prompt = Prompt.beside(__file__, "chains/prompts/answer_single.yaml")
    keys = [f"{qa.id}|{c}" for c in candidates]
    res = runner.map_structured(endpoint=endpoint, prompt=prompt, schema=Attempt, stage=stage, item_ids=keys,
                                items=[{"published": articles[c].date_label, "title": articles[c].title,
                                        "text": articles[c].text[:max_chars], "question": qa.question}
                                       for c in candidates])
    _raise_failed(res)
    bad = {c for c, r in zip(candidates, res) if not r.ok}
    pending = [(k, qa.question, qa.answer, r.value.answer) for k, r in zip(keys, res)
               if r.ok and r.value.answerable and r.value.answer.strip()]
    judged = _judge(runner, pending, stage=stage, endpoint=endpoint)
    _raise_failed(judged.values())
    bad |= {k.split("|", 1)[1] for k, j in judged.items() if not j.ok or j.value.correct}
    return bad


def _raise_failed(results: Any) -> None:
    for r in results:
        if r.retryable:
            raise VerificationFailed(f"verify:{r.reason}", f"distractor check {r.item_id}: {r.error}")


def run(ctx: Any) -> None:
    cfg = ctx.config
    d = cfg.distractors
    pivot = cfg.project.pivot_language
    qas = [q for q in ctx.read("filters", QAItem) if q.accepted]
    ctx.count_in += len(qas)
    # only the supporting articles in memory; every other article is known by its index entry
    # (``docs``: id, language, day) and its text is read by id when the LLM verifier needs it
    articles = ctx.read_ids("ingest", Article, {a for q in qas for a in q.article_ids})
    sequence = kind_sequence(d.mixture, d.per_language)
    kinds = set(sequence)
    out = ctx.output()
    todo = [q for q in qas if not out.has(q.id)]
    if not todo:
        return
    store, docs = open_index(ctx)  # checked before the encoder loads
    if store is None:
        ctx.skip("empty-corpus", len(todo))
        return
    stats = {"kinds": {k: 0 for k in KINDS}, "borrowed": 0, "llm_rejected": 0, "short": 0}
    with ExitStack() as held:  # the store and the encoder (a device pool's workers) close with the stage
        held.callback(store.close)
        index = searcher(ctx, store)  # exact search over the vectors read once (dense.search), or Milvus
        encoder = held.enter_context(encoder_for(ctx))  # for the questions; the articles are in the store
        # from the entries' columns (no ``Doc`` per article): the fresh ones' days, every one's language
        fresh_days = {i: day for i, day, fresh in zip(docs.ids, docs.days, docs.fresh) if fresh}
        finder = CandidateFinder(index, encoder, fresh_days, dict(zip(docs.ids, docs.language_column())),
                                 pool=max(3 * d.per_language, 10), seed=ctx.seed, exclude_nearest=d.per_language)
        for qa in ctx.progress(todo, total=len(todo), desc="questions"):
            failed: VerificationFailed | None = None  # a check without an answer: the question is retried next run
            missing = [a for a in qa.article_ids if a not in articles]
            if missing:
                ctx.error(qa.id, "missing-article", f"supporting article(s) {missing} not in the ingest output")
                continue
            fresh = [articles[a].fresh_day for a in qa.article_ids]
            chosen: list[Distractor] = []
            if any(day is None for day in fresh):
                # "published >= N days before the supporting articles" needs their real publication dates: an
                # undated or inferred one (corpus.undated keep / infer) gets no distractors rather than unsure ones
                ctx.skip("no-distractors-undated-supporting-article")
                out.add(DistractorSet(id=qa.id, qa_id=qa.id, distractors=chosen))
                continue
            latest = min(day for day in fresh if day is not None) - d.min_days_before
            for lang in needed_languages(qa, articles, pivot):
                cands = finder.find(qa, lang, latest, kinds, pivot)
                if d.verify_with_llm:
                    head = list(dict.fromkeys(aid for k in KINDS if k != "irrelevant"
                                              for aid, _ in cands.get(k, [])[: 2 * d.per_language]))
                    texts = ctx.read_ids("ingest", Article, head)
                    try:
                        drop = answering(ctx.llm, qa, [h for h in head if h in texts], texts, stage=ctx.spec.name,
                                         endpoint=d.endpoint, max_chars=d.max_article_chars)
                    except VerificationFailed as exc:
                        failed = exc
                        break
                    stats["llm_rejected"] += len(drop)
                    cands = {k: [c for c in v if c[0] not in drop] for k, v in cands.items()}
                picked, borrowed = select(cands, sequence)
                stats["borrowed"] += borrowed
                if len(picked) < d.per_language:
                    stats["short"] += 1
                    ctx.skip(f"fewer-than-{d.per_language}-distractors-{lang}")
                for aid, kind, score in picked:
                    stats["kinds"][kind] += 1
                    chosen.append(Distractor(article_id=aid, language=lang, kind=kind, score=round(score, 6)))
            if failed is not None:
                ctx.error(qa.id, failed.reason, str(failed))
                continue
            # the rules the instances stage checks again: never supporting, never too recent
            leak = [c.article_id for c in chosen if c.article_id in qa.article_ids
                    or c.article_id not in docs or not docs[c.article_id].fresh or docs[c.article_id].day > latest]
            if leak:
                ctx.error(qa.id, "leakage", f"candidates {leak} break the supporting/date rule (index out of date?)")
                continue
            out.add(DistractorSet(id=qa.id, qa_id=qa.id, distractors=chosen))
    ctx.extra["distractors"] = stats
