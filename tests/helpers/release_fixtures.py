"""A small realistic finished build (ingest, filters, instances) for the release tests.

Four English-English questions (mono in de/zh, en-baseline, no-retrieval) and one German-English question
(multi-de); every instance has 2 supporting articles and 6 distractors published >= 14 days earlier.
"""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from babelrag.config import config_from_dict
from babelrag.records import Article, Document, Instance, Provenance, QAItem
from babelrag.store import BuildStore, Manifest

TOPICS = [
    # (English org A, org B, city, jobs)
    ("Nordwind Logistics", "Elbtal Freight", "Hamburg", 1200),
    ("Sonnental Energy", "Rheinstrom Power", "Cologne", 800),
    ("Alpenblick Rail", "Donau Transit", "Munich", 450),
    ("Havelwerk Steel", "Spreeguss Metals", "Berlin", 2300),
]

Q = {
    "en": "Which two companies announced a merger in {city}, and how many jobs did they promise to keep there?",
    "de": "Welche beiden Unternehmen haben in {city} eine Fusion angekündigt, und wie viele Arbeitsplätze "
          "wollen sie dort erhalten?",
    "zh": "哪两家公司在{city}宣布了合并计划，它们承诺在当地保留多少个工作岗位？",
}
A = {
    "en": "{a} and {b} announced the merger and promised to keep {jobs} jobs in {city}.",
    "de": "{a} und {b} haben die Fusion angekündigt und versprochen, in {city} {jobs} Arbeitsplätze zu erhalten.",
    "zh": "{a}和{b}宣布了合并，并承诺在{city}保留{jobs}个工作岗位。",
}

BASE = datetime.date(2024, 6, 1)


def _date(days: int) -> str:
    return (BASE + datetime.timedelta(days=days)).isoformat()


def article(aid: str, lang: str, published: str, title: str) -> Article:
    body = (f"{title}. The report describes the plans in detail, quotes company officials and local "
            f"politicians, and explains what the decision means for workers and customers in the region.")
    if lang == "de":
        body = (f"{title}. Der Bericht beschreibt die Pläne ausführlich, zitiert Vertreter der Unternehmen und "
                f"der Politik und erklärt, was die Entscheidung für Beschäftigte und Kunden bedeutet.")
    return Article(id=aid, title=title, text=body, language=lang, published=published, n_tokens=40)


def doc(a: Article, role: str, kind: str) -> Document:
    return Document(article_id=a.id, title=a.title, text=a.text, language=a.language,
                    published=a.published.isoformat(),
                    role=role, kind=kind)  # type: ignore[arg-type]


def make_records(verified: bool = True) -> tuple[list[Article], list[QAItem], list[Instance]]:
    articles: list[Article] = []
    qas: list[QAItem] = []
    instances: list[Instance] = []
    for t, (a, b, city, jobs) in enumerate(TOPICS + [("Nordwind Logistics", "Elbtal Freight", "Bremen", 300)]):
        multi = t == len(TOPICS)
        qa_id = f"qa-{t:03d}"
        lang_b = "de" if multi else "en"
        s1 = article(f"art-{t}-s1", "en", _date(40 + t), f"{a} and {b} plan merger in {city}")
        s2 = article(f"art-{t}-s2", lang_b, _date(42 + t), f"{city} welcomes {a}-{b} deal, {jobs} jobs kept"
                     if lang_b == "en" else f"{city} begrüßt Fusion von {a} und {b}")
        dis = [article(f"art-{t}-d{k}", "en", _date(k), f"Regional economy report number {k} for {city}")
               for k in range(6)]
        dis_de = [article(f"art-{t}-x{k}", "de", _date(k), f"Wirtschaftsbericht Nummer {k} für {city}")
                  for k in range(3)]
        articles += [s1, s2, *dis] + (dis_de if multi else [])
        fill = {"a": a, "b": b, "city": city, "jobs": jobs}
        qas.append(QAItem(id=qa_id, pair_id=f"pair-{t}", article_ids=[s1.id, s2.id], q_type="comparison",
                          question=Q["en"].format(**fill), answer=A["en"].format(**fill), verified=verified,
                          provenance=Provenance(model="qwen2.5-0.5b-instruct", prompt_id="xdoc_question",
                                                prompt_version="2", config_hash="cfg123")))
        docs_mono = [doc(s1, "supporting", "relevant"), doc(s2, "supporting", "relevant")] + \
            [doc(d, "distractor", "related" if k < 4 else "irrelevant") for k, d in enumerate(dis)]
        plan: list[tuple[str, str, list[Document]]]
        if multi:
            docs_multi = [doc(s1, "supporting", "relevant"), doc(s2, "supporting", "relevant")] + \
                [doc(d, "distractor", "related") for d in dis[:3]] + [doc(d, "distractor", "seemingly_relevant")
                                                                      for d in dis_de]
            plan = [("multi", "de", docs_multi)]
        else:
            plan = [("mono", "de", docs_mono), ("mono", "zh", docs_mono), ("en-baseline", "en", docs_mono),
                    ("no-retrieval", "de", [])]
        for setting, lang, docs in plan:
            instances.append(Instance(
                id=f"inst-{qa_id}-{setting}-{lang}", qa_id=qa_id, setting=setting, language=lang,
                question=Q[lang].format(**fill), answer=A[lang].format(**fill), en_question=Q["en"].format(**fill),
                en_answer=A["en"].format(**fill), q_type="comparison", documents=[d.model_copy() for d in docs],
                verified=verified,
                machine_translated=lang != "en", dates=[s1.published.isoformat(), s2.published.isoformat()]))
    return articles, qas, instances


def write_stage(store: BuildStore, stage: str, model: type, records: list[Any],
                usage: dict[str, Any] | None = None) -> None:
    staging = store.new_staging_dir(stage)
    manifest = Manifest(stage=stage, fingerprint=f"fp-{stage}", config_hash=f"cfg-{stage}", inputs={},
                        counts={"in": len(records), "out": len(records), "errors": 0, "skipped": {}, "resumed": 0},
                        versions={"python": "3.11", "datasets": "test"}, started_at=1_717_200_000.0,
                        finished_at=1_717_200_060.0, llm_usage=usage or {})
    store.commit(stage, staging, sorted(records, key=lambda r: r.id), model, [], manifest)


def make_build(root: Path, instances: list[Instance] | None = None, verified: bool = True,
               usage: dict[str, Any] | None = None) -> BuildStore:
    articles, qas, default_instances = make_records(verified=verified)
    store = BuildStore(root)
    write_stage(store, "ingest", Article, articles)
    write_stage(store, "filters", QAItem, qas, usage=(usage or {}).get("filters"))
    write_stage(store, "instances", Instance, default_instances if instances is None else instances)
    return store


def make_config(tmp: Path, **release: Any):
    return config_from_dict({
        "project": {"build_dir": str(tmp / "build"), "languages": ["en", "de", "zh", "es", "ar"], "seed": 13},
        "release": {"out_dir": str(tmp / "release"), "name": "demo-bench", "version": "0.1.0",
                    "dev_fraction": 0.4, **release},
    })
