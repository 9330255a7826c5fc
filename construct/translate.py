"""Machine translation through the LLM layer: questions/answers (stage ``questions``) and articles
(stage ``instances``, for the +ES/+ED variants). Everything produced here is flagged machine-translated;
human post-editing happens in annotation.

Named entities: the prompt lists the entities of the English question and asks for the common target form
or, when there is none, the original spelling. ``entity_forms`` keeps the model's mapping next to the
translation, and a named entity that vanished from the translation (neither its original nor its declared
target form appears) is recorded so annotators can check it.
"""
from __future__ import annotations

import re
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from babelrag import records
from babelrag.languages import language_label, language_name  # every language by its name
from babelrag.records import Article, DistractorSet, QAItem, Translation
from babelrag.langcheck import LanguageChecker
from babelrag.llm.prompts import Prompt

class EntityForm(BaseModel):
    """An entity form as the model replies it (lenient); stored as ``records.EntityForm``."""

    model_config = ConfigDict(extra="ignore")
    source: str = ""
    target: str = ""


class TranslatedQA(BaseModel):
    """Schema of the translate_qa step (small models add keys: ignored)."""

    model_config = ConfigDict(extra="ignore")
    question: str = Field(min_length=3)
    answer: str = Field(min_length=1)
    entities: list[EntityForm] = Field(default_factory=list)

    @field_validator("question", "answer", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        if isinstance(v, list):  # "answer": ["a", "b"] from a set question
            return ", ".join(str(x) for x in v)
        return v.strip() if isinstance(v, str) else v


class TranslatedArticle(BaseModel):
    model_config = ConfigDict(extra="ignore")
    title: str = Field(min_length=1)
    text: str = Field(min_length=1)


_CAPS = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:(?:of|de|la|von|van|al|the)\s+)*[A-Z][\w'’-]*)*")
_LINKS = {"of", "de", "la", "von", "van", "al", "the"}
_QWORDS = {"What", "Which", "Who", "Whom", "Whose", "When", "Where", "Why", "How", "Did", "Do", "Does", "Is",
           "Are", "Was", "Were", "In", "On", "At", "Both", "The", "A", "An", "After", "Before", "Has", "Have",
           "Can", "Could", "Would", "Will", "Should", "Name", "List", "According"}


def guess_entities(text: str) -> list[str]:
    """Capitalised spans that are not sentence-initial question words (cheap, script-agnostic enough
    for English source text; the spaCy check lives in the filters). A lone capitalised word that
    starts a sentence ("Taken together, ...", "One report ...") counts only if it is also capitalised
    mid-sentence somewhere in the text."""
    out: list[str] = []
    spans = []
    for m in _CAPS.finditer(text):
        span = m.group(0).strip(" .")
        words = span.split()
        initial = _sentence_start(text, m.start())
        while words and (words[0] in _QWORDS or words[0] in _LINKS):
            words, initial = words[1:], False
        spans.append((" ".join(words), initial))
    inside = {span for span, initial in spans if not initial}
    for span, initial in spans:
        if initial and " " not in span and span not in inside:
            continue
        if span and span not in out:
            out.append(span)
    return out


def _sentence_start(text: str, pos: int) -> bool:
    before = text[:pos].rstrip(" \"'“‘(")
    return not before or before[-1] in ".?!:;\n"


def missing_entities(entities: list[str], forms: list[EntityForm], translated: str) -> list[str]:
    """Entities whose original and declared target form are both absent from ``translated``."""
    declared = {f.source: f.target for f in forms}
    low = translated.lower()
    return [e for e in entities if e.lower() not in low and (declared.get(e) or "\0").lower() not in low]


def translate_qas(runner: Any, qas: list[QAItem], languages: list[str], *, stage: str,
                  endpoint: Optional[str] = None, source_language: str = "en") -> dict[str, dict[str, Translation]]:
    """Translate each item's English question/answer into ``languages``.

    Returns ``{qa_id: {lang: Translation}}``: the translated question and answer with the entity forms
    used, the English entities lost, prompt and model; or a ``Translation`` with ``error`` set (kept so a
    failure is visible).
    A reply still in the source language (whole, or question / answer) is an error: the release
    would reject the instance, so it is dropped here and counted.
    """
    checker = LanguageChecker(sorted(set(languages) | {source_language}))

    prompt = Prompt.beside(__file__, "chains/prompts/translate_qa.yaml")
    items, ids, keys = [], [], []
    for qa in qas:
        ents = guess_entities(qa.question + " " + qa.answer)
        for lang in languages:
            items.append({"language_name": language_name(lang), "question": qa.question, "answer": qa.answer,
                          "entities": ", ".join(ents) if ents else "(none)"})
            ids.append(f"{qa.id}:{lang}")
            keys.append((qa.id, lang, ents))
    out: dict[str, dict[str, Translation]] = {qa.id: {} for qa in qas}
    qa_by_id = {qa.id: qa for qa in qas}
    if not items:
        return out
    results = runner.map_structured(endpoint=endpoint, prompt=prompt, items=items, schema=TranslatedQA,
                                    stage=stage, item_ids=ids)
    for (qa_id, lang, ents), res in zip(keys, results):
        if not res.ok:
            out[qa_id][lang] = Translation(language=lang, error=res.error or "failed")
            continue
        v: TranslatedQA = res.value
        if _same(v.question, qa_by_id[qa_id].question):
            out[qa_id][lang] = Translation(language=lang, error="untranslated: the reply repeats the English question")
            continue
        wrong = [f"{name} looks {language_label(found)}" for name, text in (("question", v.question), ("answer", v.answer))
                 if (found := checker.check(text, lang))]
        if wrong:
            out[qa_id][lang] = Translation(language=lang,
                                           error=f"wrong language: {', '.join(wrong)}, expected {language_label(lang)}")
            continue
        text = v.question + " " + v.answer
        # keep only mappings the translation actually uses (small models map names to anything)
        used = {f.source: f.target for f in v.entities if f.source and f.target and f.target in text}
        out[qa_id][lang] = Translation(
            language=lang, question=v.question, answer=v.answer, machine_translated=True,
            entities=[records.EntityForm(source=a, target=b) for a, b in used.items()],
            missing_entities=missing_entities(ents, v.entities, v.question + " " + v.answer),
            prompt=prompt.ref, model=res.model or "", source=qa_by_id[qa_id].source_fingerprint)
    return out


def _same(a: str, b: str) -> bool:
    norm = lambda x: re.sub(r"\W+", " ", x).strip().lower()  # noqa: E731
    return norm(a) == norm(b)


def translate_articles(runner: Any, articles: list[Article], target: str, *, stage: str,
                       endpoint: Optional[str] = None, max_chars: int = 2000) -> dict[str, Any]:
    """``{article_id: (title, text)}`` or ``{article_id: "error text"}`` for failures."""
    prompt = Prompt.beside(__file__, "chains/prompts/translate_article.yaml")
    items = [{"language_name": language_name(target), "title": a.title, "text": a.text[:max_chars]}
             for a in articles]
    results = runner.map_structured(endpoint=endpoint, prompt=prompt, items=items, schema=TranslatedArticle,
                                    stage=stage, item_ids=[f"{a.id}:{target}" for a in articles])
    out: dict[str, Any] = {}
    for a, res in zip(articles, results):
        out[a.id] = (res.value.title, res.value.text) if res.ok else (res.error or "failed")
    return out


def needed_document_translations(qas: list[QAItem], dsets: dict[str, DistractorSet],
                                 articles: dict[str, Article], pivot: str, per_language: int) -> list[str]:
    """Ids of non-pivot articles that +ES/+ED instances will show in translation (sorted, unique)."""
    need: set[str] = set()
    for qa in qas:
        langs = {articles[a].language for a in qa.article_ids if a in articles}
        others = [a for a in qa.article_ids if a in articles and articles[a].language != pivot]
        if len(others) != 1 or pivot not in langs:
            continue
        need.update(others)
        x = articles[others[0]].language
        dset = dsets.get(qa.id)
        picked = [d.article_id for d in (dset.distractors if dset else [])
                  if d.language == x and d.article_id in articles and d.article_id not in qa.article_ids]
        need.update(list(dict.fromkeys(picked))[:per_language])
    return sorted(need)

