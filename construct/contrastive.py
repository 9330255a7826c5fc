"""Contrastive pairs for the Ragas metrics' human ground truth (forced choice in Argilla).

For a (chunk, question):
* faithfulness      — answer generated from the chunk vs answer generated without it;
* answer relevance  — the complete (grounded) answer vs an evasive or partial rewrite of it;
* context relevance — the clean chunk vs the chunk plus an unrelated page (no LLM needed).

Which option is shown as ``a`` is a seeded coin flip per pair (no position bias); ``better`` records the
construction-time expectation. Entry points: ``build_pairs`` (library), ``write_contrastive_pairs`` (from a finished build: accepted
questions' selected one-step pairs and their articles) and ``babelrag construct contrastive``.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from babelrag.atomic import atomic_write_text
from babelrag.languages import language_name
from babelrag.records import Article, ContrastivePair, Provenance, QAItem
from babelrag.construct.chains.outputs import Answer
from babelrag.errors import ConfigError
from babelrag.llm.prompts import Prompt
from babelrag.llm_session import get_runner
from babelrag.store import BuildStore

KINDS = ("faithfulness", "answer_relevance", "context_relevance")


@dataclass
class ChunkQuestion:
    """A question answerable from one chunk."""

    id: str
    question: str
    chunk: str
    language: str = "en"
    answer: str = ""  # a reference answer, if known (used for the partial/evasive rewrite)


def chunk_questions(qas: Iterable[QAItem], articles: dict[str, Article], max_chars: int = 1500) -> list[ChunkQuestion]:
    """One (chunk, question) per selected one-step pair of each accepted question: that pair's article
    (cut to ``max_chars``) answers its simple question on its own."""
    out, seen = [], set()
    for qa in qas:
        if not qa.accepted:
            continue
        for k, s in enumerate(qa.selected):
            art = articles.get(s.article_id)
            key = (s.article_id, s.question)
            if art is None or key in seen:
                continue
            seen.add(key)
            out.append(ChunkQuestion(id=f"{qa.id}:{k}", question=s.question, chunk=f"{art.title}\n{art.text[:max_chars]}",
                                     language=qa.language or "en", answer=s.answer))  # as written: English, or X (monolingual)
    return out


def _pair_id(kind: str, source: str) -> str:
    return "cp-" + hashlib.sha256(f"{kind}|{source}".encode()).hexdigest()[:16]


def _order(better: str, worse: str, seed: int, pid: str) -> tuple[str, str, str]:
    """(option_a, option_b, which is better) with a seeded flip."""
    if random.Random(f"{seed}|{pid}").random() < 0.5:
        return better, worse, "a"
    return worse, better, "b"


def context_relevance_pairs(items: list[ChunkQuestion], unrelated: list[tuple[str, str]], seed: int) -> list[ContrastivePair]:
    """Clean chunk vs chunk + a seeded unrelated page ((id, text) pool; never the chunk's own source)."""
    out = []
    for it in items:
        pool = [(i, t) for i, t in unrelated if t.strip() and t not in it.chunk]
        if not pool:
            continue
        uid, page = random.Random(f"{seed}|{it.id}|page").choice(pool)
        pid = _pair_id("context_relevance", it.id)
        a, b, better = _order(it.chunk, it.chunk + "\n\n" + page, seed, pid)
        out.append(ContrastivePair(id=pid, kind="context_relevance", question=it.question, option_a=a, option_b=b,
                                   better=better, language=it.language, source_id=it.id, detail=f"unrelated:{uid}"))
    return out


def llm_pairs(runner: Any, items: list[ChunkQuestion], *, seed: int, stage: str = "contrastive",
              endpoint: Optional[str] = None, kinds: Iterable[str] = ("faithfulness", "answer_relevance"),
              ) -> tuple[list[ContrastivePair], list[tuple[str, str]]]:
    """Faithfulness and answer-relevance pairs; returns (pairs, [(item id, error)]) — failures are kept."""
    kinds = set(kinds)
    folder = Path(__file__).resolve().parent / "chains" / "prompts"
    grounded_p = Prompt.load(folder / "contrastive_grounded.yaml")
    errors: list[tuple[str, str]] = []
    ids = [it.id for it in items]
    grounded = runner.map_structured(endpoint=endpoint, prompt=grounded_p, schema=Answer, stage=stage, item_ids=ids,
                                     items=[{"context": it.chunk, "question": it.question,
                                             "language_name": language_name(it.language)} for it in items])
    ok = [(it, g) for it, g in zip(items, grounded) if g.ok]
    errors += [(it.id, f"grounded: {g.error}") for it, g in zip(items, grounded) if not g.ok]
    out: list[ContrastivePair] = []

    def prov(r: Any, prompt: Any) -> Provenance:
        return Provenance(model=r.model, endpoint=r.endpoint, prompt_id=prompt.id,
                          prompt_version=f"{grounded_p.ref}+{prompt.ref}")

    if "faithfulness" in kinds and ok:
        p = Prompt.load(folder / "contrastive_ungrounded.yaml")
        res = runner.map_structured(endpoint=endpoint, prompt=p, schema=Answer, stage=stage,
                                    item_ids=[it.id for it, _ in ok],
                                    items=[{"question": it.question, "language_name": language_name(it.language)}
                                           for it, _ in ok])
        for (it, g), r in zip(ok, res):
            if not r.ok:
                errors.append((it.id, f"ungrounded: {r.error}"))
                continue
            if r.value.answer.strip().lower() == g.value.answer.strip().lower():
                errors.append((it.id, "ungrounded answer equals the grounded one: no contrast"))
                continue
            pid = _pair_id("faithfulness", it.id)
            a, b, better = _order(g.value.answer, r.value.answer, seed, pid)
            out.append(ContrastivePair(id=pid, kind="faithfulness", question=it.question, context=it.chunk,
                                       option_a=a, option_b=b, better=better, language=it.language,
                                       source_id=it.id, provenance=prov(r, p)))
    if "answer_relevance" in kinds and ok:
        p = Prompt.load(folder / "contrastive_evasive.yaml")
        styles = ["evasive" if random.Random(f"{seed}|{it.id}|style").random() < 0.5 else "partial" for it, _ in ok]
        res = runner.map_structured(endpoint=endpoint, prompt=p, schema=Answer, stage=stage,
                                    item_ids=[it.id for it, _ in ok],
                                    items=[{"question": it.question, "answer": g.value.answer, "style": st,
                                            "language_name": language_name(it.language)}
                                           for (it, g), st in zip(ok, styles)])
        for (it, g), r, st in zip(ok, res, styles):
            if not r.ok:
                errors.append((it.id, f"{st}: {r.error}"))
                continue
            if r.value.answer.strip() == g.value.answer.strip():
                errors.append((it.id, f"{st} rewrite equals the complete answer: no contrast"))
                continue
            pid = _pair_id("answer_relevance", it.id)
            a, b, better = _order(g.value.answer, r.value.answer, seed, pid)
            out.append(ContrastivePair(id=pid, kind="answer_relevance", question=it.question, context=it.chunk,
                                       option_a=a, option_b=b, better=better, language=it.language,
                                       source_id=it.id, detail=st, provenance=prov(r, p)))
    return out, errors


def build_pairs(runner: Any, items: list[ChunkQuestion], unrelated: list[tuple[str, str]], *, seed: int,
                kinds: Iterable[str] = KINDS, endpoint: Optional[str] = None,
                stage: str = "contrastive") -> tuple[list[ContrastivePair], list[tuple[str, str]]]:
    kinds = list(kinds)
    bad = set(kinds) - set(KINDS)
    if bad:
        raise ConfigError(f"unknown contrastive kind(s) {sorted(bad)}; allowed: {', '.join(KINDS)}")
    pairs: list[ContrastivePair] = []
    errors: list[tuple[str, str]] = []
    if "context_relevance" in kinds:
        pairs += context_relevance_pairs(items, unrelated, seed)
    llm_kinds = [k for k in kinds if k != "context_relevance"]
    if llm_kinds and items:
        more, errors = llm_pairs(runner, items, seed=seed, stage=stage, endpoint=endpoint, kinds=llm_kinds)
        pairs += more
    return sorted(pairs, key=lambda p: p.id), errors


def write_jsonl(path: Path, pairs: list[ContrastivePair]) -> None:
    atomic_write_text(path, "".join(p.model_dump_json() + "\n" for p in pairs))


def write_contrastive_pairs(config: Any, out: Path, kinds: Sequence[str] = KINDS, limit: Optional[int] = None,
                            max_chars: int = 1500) -> dict[str, Any]:
    """Contrastive pairs from a finished build's accepted questions (their selected one-step pairs and
    articles) into ``out`` (JSONL, atomic); returns a summary (written, by kind, failed, out)."""
    store = BuildStore(config.build_dir)
    qas = store.read("filters", QAItem)
    articles = {x.id: x for x in store.iter_read("ingest", Article)}
    items = chunk_questions(qas, articles, max_chars)[:limit]
    used = {it.id.rsplit(":", 1)[0] for it in items}
    support = {aid for q in qas if q.id in used for aid in q.article_ids}
    unrelated = [(x.id, f"{x.title}\n{x.text[:max_chars]}") for x in sorted(articles.values(), key=lambda x: x.id)
                 if x.id not in support and x.language == "en"]
    runner = get_runner(config) if set(kinds) - {"context_relevance"} else None
    pairs, errors = build_pairs(runner, items, unrelated, seed=config.project.seed, kinds=list(kinds))
    write_jsonl(Path(out), pairs)
    return {"written": len(pairs), "by_kind": {k: sum(p.kind == k for p in pairs) for k in KINDS},
            "failed": len(errors), "out": str(out)}
