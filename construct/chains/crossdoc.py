"""The cross-document Q&A chain (XRAG step 5), independent of the stage machinery.

summary per article → simple one-step Q&A pairs per summary → one cross-document question of a requested
type that uses ≥ 1 simple pair from each article → its answer from the selected pairs and both summaries.
Each step is one batched ``map_structured`` call through the LLM layer (cache, retries, JSON repair), with
a pydantic schema per step and a versioned prompt file beside this module. A step that fails for an item
turns that item into a ``ChainError``; the other items go on.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from babelrag.construct.chains.outputs import Answer, CrossDocQuestion, QAPair, SimplePairs, Summary
from babelrag.languages import language_name
from babelrag.records import Article, Provenance, QAItem, SimpleQA
from babelrag.tokens import content_words
from babelrag.llm.prompts import Prompt

PROMPTS = Path(__file__).resolve().parent / "prompts"
STEPS = ("summary", "simple_qa", "crossdoc", "answer")


def load_prompts() -> dict[str, Any]:
    return {step: Prompt.load(PROMPTS / f"{step}.yaml") for step in STEPS}


def qa_id(pair_id: str, q_type: str, k: int) -> str:
    return "qa-" + hashlib.sha256(f"{pair_id}|{q_type}|{k}".encode()).hexdigest()[:16]


@dataclass
class Job:
    """One question to write: a pair of articles and the requested type."""

    id: str
    pair_id: str
    a: Article
    b: Article
    q_type: str
    language: Optional[str] = None  # a monolingual question's language (written in it); None: English


def written_in(job: Job) -> str:
    """The language every step of a job's chain writes in: English, or a monolingual question's language."""
    return job.language or "en"


@dataclass
class ChainError:
    item_id: str
    reason: str
    detail: str


@dataclass
class ChainResult:
    items: list[QAItem] = field(default_factory=list)
    errors: list[ChainError] = field(default_factory=list)
    inferred_selection: int = 0  # questions whose used facts were inferred (model gave no usable indices)


def infer_used(question: str, pairs: list[QAPair]) -> list[int]:
    """1-based index of the simple pair sharing the most content words with the question ([] if none)."""
    q = content_words(question)
    best = max(range(len(pairs)), key=lambda i: len(q & content_words(pairs[i].question + " " + pairs[i].answer)),
               default=None)
    if best is None or not q & content_words(pairs[best].question + " " + pairs[best].answer):
        return []
    return [best + 1]


def _step_id(step: str, key: tuple[str, str]) -> str:
    """``summary:<article>`` for English (the ids earlier builds logged), ``summary:<article>@<x>`` in X."""
    article, language = key
    return f"{step}:{article}" if language == "en" else f"{step}:{article}@{language}"


def _numbered(pairs: list[QAPair]) -> str:
    return "\n".join(f"{i}. Q: {p.question} A: {p.answer}" for i, p in enumerate(pairs, 1))


class CrossDocChain:
    def __init__(self, runner: Any, *, stage: str = "questions", endpoint: Optional[str] = None,
                 simple_per_summary: int = 3, max_article_chars: int = 6000, config_hash: str = "") -> None:
        self.runner = runner
        self.stage = stage
        self.endpoint = endpoint
        self.n_simple = simple_per_summary
        self.max_chars = max_article_chars
        self.config_hash = config_hash
        self.prompts = load_prompts()

    def _map(self, step: str, items: list[dict], schema: type, ids: list[str]) -> list[Any]:
        if not items:
            return []
        return self.runner.map_structured(endpoint=self.endpoint, prompt=self.prompts[step], items=items,
                                          schema=schema, stage=self.stage, item_ids=ids)

    def version(self) -> str:
        return ",".join(self.prompts[s].ref for s in STEPS)

    def run(self, jobs: list[Job]) -> ChainResult:
        out = ChainResult()
        failed: dict[str, ChainError] = {}

        def fail(job: Job, reason: str, detail: str) -> None:
            failed.setdefault(job.id, ChainError(job.id, reason, detail[:1500]))

        # 1. summaries, once per article and language written in (English, or a monolingual question's X)
        arts = {(a.id, written_in(j)): a for j in jobs for a in (j.a, j.b)}
        order = sorted(arts)
        res = self._map("summary", [{"language": language_name(arts[k].language), "published": arts[k].date_label,
                                     "title": arts[k].title, "text": arts[k].text[: self.max_chars],
                                     "write_in": language_name(k[1])} for k in order],
                        Summary, [_step_id("summary", k) for k in order])
        summaries = {k: r for k, r in zip(order, res)}
        # 2. simple pairs, once per summary
        ok_ids = [k for k in order if summaries[k].ok]
        res = self._map("simple_qa", [{"summary": summaries[k].value.summary, "n": self.n_simple,
                                       "write_in": language_name(k[1])} for k in ok_ids],
                        SimplePairs, [_step_id("simple", k) for k in ok_ids])
        simple = {k: r for k, r in zip(ok_ids, res)}
        # 3. cross-document questions
        ready: list[Job] = []
        for j in jobs:
            for art in (j.a, j.b):
                key = (art.id, written_in(j))
                s = summaries[key]
                if not s.ok:
                    fail(j, f"summary:{s.reason}", f"summary of {art.id}: {s.error}")
                elif not simple[key].ok:
                    fail(j, f"simple_qa:{simple[key].reason}", f"simple pairs of {art.id}: {simple[key].error}")
            if j.id not in failed:
                ready.append(j)
        res = self._map("crossdoc", [{"pairs_a": _numbered(simple[(j.a.id, written_in(j))].value.pairs),
                                      "pairs_b": _numbered(simple[(j.b.id, written_in(j))].value.pairs),
                                      "q_type": j.q_type, "title_a": j.a.title, "title_b": j.b.title,
                                      "write_in": language_name(written_in(j))}
                                     for j in ready], CrossDocQuestion, [f"crossdoc:{j.id}" for j in ready])
        chosen: dict[str, tuple[str, list[SimpleQA]]] = {}
        for j, r in zip(ready, res):
            if not r.ok:
                fail(j, f"crossdoc:{r.reason}", r.error or "")
                continue
            sel: list[SimpleQA] = []
            inferred = False
            for art, used in ((j.a, r.value.used_a), (j.b, r.value.used_b)):
                pairs = simple[(art.id, written_in(j))].value.pairs
                idx = [k for k in dict.fromkeys(used) if 1 <= k <= len(pairs)]
                if not idx:
                    idx = infer_used(r.value.question, pairs)
                    inferred = inferred or bool(idx)
                sel += [SimpleQA(article_id=art.id, question=pairs[k - 1].question, answer=pairs[k - 1].answer)
                        for k in idx]
            if {s.article_id for s in sel} != {j.a.id, j.b.id}:
                fail(j, "crossdoc:no-fact-from-each-article",
                     f"question {r.value.question!r} uses facts {r.value.used_a}/{r.value.used_b}: "
                     "needs at least one from each article")
                continue
            out.inferred_selection += inferred
            chosen[j.id] = (r.value.question, sel)
        # 4. answers
        answerable = [j for j in ready if j.id in chosen]
        res = self._map("answer", [{"summary_a": summaries[(j.a.id, written_in(j))].value.summary,
                                    "summary_b": summaries[(j.b.id, written_in(j))].value.summary,
                                    "facts": " | ".join(f"{s.question} {s.answer}" for s in chosen[j.id][1]),
                                    "question": chosen[j.id][0], "write_in": language_name(written_in(j))}
                                   for j in answerable],
                        Answer, [f"answer:{j.id}" for j in answerable])
        for j, r in zip(answerable, res):
            if not r.ok:
                fail(j, f"answer:{r.reason}", r.error or "")
                continue
            question, sel = chosen[j.id]
            out.items.append(QAItem(
                id=j.id, pair_id=j.pair_id, article_ids=[j.a.id, j.b.id], q_type=j.q_type,  # type: ignore[arg-type]
                language=j.language, question=question, answer=r.value.answer,
                summaries=[summaries[(j.a.id, written_in(j))].value.summary,
                           summaries[(j.b.id, written_in(j))].value.summary], selected=sel,
                provenance=Provenance(model=r.model, endpoint=r.endpoint, prompt_id="questions.chain",
                                      prompt_version=self.version(), config_hash=self.config_hash)))
        out.errors = [failed[j.id] for j in jobs if j.id in failed]
        return out
