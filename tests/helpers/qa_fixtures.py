"""Small hand-made corpora for the question/filter/distractor/instance tests (issue 5).

``seed_stage`` writes a finished stage folder directly, so one stage can be tested on exact inputs
without running its upstream stages.
"""
from __future__ import annotations

from pathlib import Path

from babelrag.records import Article, Distractor, DistractorSet, QAItem, SimpleQA, Translation
from babelrag.store import BuildStore, Manifest


def seed_stage(build: Path, stage: str, records: list, model: type) -> None:
    store = BuildStore(build)
    store.root.mkdir(parents=True, exist_ok=True)
    staging = store.new_staging_dir(stage)
    store.commit(stage, staging, sorted(records, key=lambda r: r.id), model, [],
                 Manifest(stage=stage, fingerprint=f"seeded-{stage}", config_hash="", inputs={}))


def art(id_: str, lang: str, date: str, title: str = "", text: str = "") -> Article:
    return Article(id=id_, title=title or f"Title {id_}", text=text or f"Body of {id_}. " * 20,
                   language=lang, published=date)


def corpus() -> dict[str, Article]:
    """en pair a1/a2 (Aug 20/22), de article d1 (Aug 21) paired with a1; old distractors + one too recent."""
    arts = [
        art("a1", "en", "2026-08-20", "Lumen Bank opens office in Porto", "Lumen Bank opened an office in Porto."),
        art("a2", "en", "2026-08-22", "Lumen Bank hires 300 staff", "Lumen Bank will hire 300 staff in Porto."),
        art("d1", "de", "2026-08-21", "Lumen Bank eröffnet Büro in Porto", "Die Lumen Bank eröffnete ein Büro."),
    ]
    arts += [art(f"e{i}", "en", f"2026-07-{i + 1:02d}") for i in range(8)]
    arts += [art(f"g{i}", "de", f"2026-07-{i + 1:02d}") for i in range(4)]
    arts.append(art("late", "en", "2026-08-15"))  # only 5 days before a1: must never be a distractor
    return {a.id: a for a in arts}


def qa(id_: str, a: str, b: str, q_type: str = "comparison", translations: dict | None = None,
       accepted: bool = True) -> QAItem:
    return QAItem(id=id_, pair_id=f"{a}|{b}", article_ids=[a, b], q_type=q_type,
                  question="How many staff will Lumen Bank hire after opening its Porto office?",
                  answer="300 staff.", summaries=["s1", "s2"],
                  selected=[SimpleQA(article_id=a, question="q", answer="x"),
                            SimpleQA(article_id=b, question="q", answer="y")],
                  translations=[Translation(language=lang, **tr) for lang, tr in sorted((translations or {}).items())],
                  accepted=accepted)


DE = {"de": {"question": "Wie viele Mitarbeiter stellt die Lumen Bank ein?", "answer": "300.",
             "machine_translated": True}}
ES = {"es": {"question": "¿Cuántos empleados contratará Lumen Bank?", "answer": "300.",
             "machine_translated": True}}


def dset(qa_id: str, ids: list[tuple[str, str]]) -> DistractorSet:
    return DistractorSet(id=qa_id, qa_id=qa_id,
                         distractors=[Distractor(article_id=i, language=lang, kind="related") for i, lang in ids])
