"""Named entities of questions for the ``named_entity`` filter, found by the NER of the language they are written in.

A question written in English (every question of the XRAG settings, written English first) is read by the
filter's own spaCy model (``filters.spacy_model``, labels ``filters.entity_labels``), as always. A question
written in another language X (``questions.monolingual``) is read by X's title NER backend, as the language
capability table resolves it from the ``ner`` section (``babelrag construct status``): the spaCy model
``ner.spacy_models`` maps X to, jieba proper nouns for zh, stanza or the LLM (``ner.backend``), plus the known
names of ``ner.gazetteer``; the labels are still ``filters.entity_labels``. The English model is never run on
X text: it tags German and French function words as people and organisations, so it passed questions that
name nobody.

An LLM NER reply that stays unreadable after the repair re-ask says nothing about the question: it is judged by
``filters.on_llm_error`` like the other LLM filters' unusable replies (reject: status ``error``; keep: pass), not
failed as nameless, and counted as ``named_entity-unreadable`` with a report line.

An LLM NER call that got no answer (endpoint down, timeouts, 5xx after the retries) says nothing either, and
not for good: the question is a failed item like those of the other LLM filters (not written; the run exits 3;
the next plain run asks only its NER again, answered calls are cached), unless the gazetteer named an entity.

A language with no backend cannot say that a question names no entity. Its questions are kept unchecked and
counted as ``named_entity-unchecked-<lang>`` (the run report's notes), with a line saying how to give the
language a backend. With only a gazetteer, a question naming one of its entities passes and one naming none is
counted the same way (a list of known names cannot tell that a question names nobody).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from babelrag.construct.ner import EntityExtractor, JIEBA, SpacyNER, Unanswered, Unreadable, extractor_from_config
from babelrag.languages import language_label

ENGLISH = "en"
UNCHECKED = "named_entity-unchecked-{}"
UNREADABLE = "named_entity-unreadable"


def question_language(language: Optional[str]) -> str:
    """The language a question is written in: ``QAItem.language``, English when unset (the XRAG settings)."""
    return language or ENGLISH


@dataclass(frozen=True)
class Found:
    """What one question's language backend found: ``mentions`` (None: the language has no backend and the
    gazetteer found nothing, so the question is unchecked) and the backend that looked. ``unreadable``: the
    LLM backend's reply stayed unreadable after the repair re-ask (why), so nothing was found and nothing can be
    said about the question's entities (``filters.on_llm_error`` decides). ``unanswered``: the LLM layer's result
    of the NER call that got no answer (the question is a failed item)."""
    mentions: Optional[list[str]]
    backend: str
    unreadable: Optional[str] = None
    unanswered: Any = None


@dataclass
class QuestionNER:
    """Title NER of the ``ner`` section, per question language, for questions not written in English."""
    config: Any
    labels: Sequence[str]
    llm_factory: Optional[Callable[[], Any]] = None
    stage: str = "filters"
    _extractor: Optional[EntityExtractor] = field(default=None, init=False, repr=False)

    @property
    def extractor(self) -> EntityExtractor:
        if self._extractor is None:
            self._extractor = extractor_from_config(self.config, self.llm_factory, labels=self.labels,
                                                    stage=self.stage, stop_on_unanswered=False)
        return self._extractor

    def backend_name(self, language: str, has_model: bool) -> str:
        ner = self.config.ner
        gazetteer = " + gazetteer" if ner.gazetteer else ""
        if not has_model:
            return f"no NER model for {language}{gazetteer}"
        if ner.backend == "spacy":
            model = SpacyNER(ner.spacy_model, models=ner.spacy_models).model_for(language)
            return ("jieba proper nouns" if model == JIEBA else f"spaCy {model}") + gazetteer
        return f"{ner.backend}{gazetteer}"

    def find(self, questions: Sequence[str], language: str) -> list[Found]:
        """Entities of ``questions``, all written in ``language`` (not English). A mapped model that is not
        installed is a ConfigError naming it (raised before any question is judged)."""
        has_model = language not in self.extractor.prepare([language])
        backend = self.backend_name(language, has_model)
        found = self.extractor(list(questions), [language] * len(questions))
        return [Found(keys if keys or has_model else None, backend,
                      keys.error if isinstance(keys, Unreadable) else None,
                      keys.result if isinstance(keys, Unanswered) else None) for keys in found]


def unreadable_line(counts: Counter[str], on_error: str) -> str:
    """The run report's line for questions whose LLM NER reply stayed unreadable (``counts``: language ->
    questions)."""
    langs = ", ".join(f"{n} in {language_label(lang)}" for lang, n in sorted(counts.items()))
    outcome = "rejected" if on_error == "reject" else "kept"
    return (f"named_entity: the LLM NER reply stayed unreadable after the repair re-ask for {sum(counts.values())} "
            f"question(s) ({langs}): {outcome} (filters.on_llm_error: {on_error}), not judged nameless; the LLM cache "
            f"keeps those replies, `babelrag run --force filters --retry-unreadable` asks again")


def unchecked_line(counts: Counter[str]) -> str:
    """The run report's line for questions kept unchecked (``counts``: language -> questions)."""
    langs = ", ".join(f"{n} in {language_label(lang)}" for lang, n in sorted(counts.items()))
    return (f"named_entity: questions kept unchecked, no NER backend for their language ({langs}); map a spaCy "
            f"model in ner.spacy_models, set ner.gazetteer or ner.backend: llm / stanza, or turn "
            f"filters.named_entity off")
