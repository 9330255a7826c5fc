"""The dataset card (README.md): YAML header the Hub and ``load_dataset`` read, then the sections.

Everything comes from the build: stage manifests (counts, LLM usage and models, library versions, config
hashes, the filters that ran), record provenance (models, prompt ids and versions), the annotation summary if
there is one, and the release's own validation and version facts. Nothing in the card is typed by hand, and
the card declares only what the release holds: its languages are those of the released rows and documents
(not the config's or the corpus'), its filters those that ran, its licence the curator's or flagged as the
default nobody chose.
"""
from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Optional, get_args, get_origin

from pydantic import BaseModel

from babelrag.llm.local import MODEL_ALIAS
from babelrag.records import ANSWER_TYPES, MONOLINGUAL_SETTING, QUESTION_TYPES, Document, Instance
from babelrag.release import layout
from babelrag.release.citation import METHOD_PAPERS, release_bibtex
from babelrag.release.hub_metadata import bcp47, check_license, size_category

TASK_CATEGORIES = ["question-answering", "text-retrieval"]
TASK_IDS = ["open-domain-qa", "document-retrieval"]


@dataclass
class CardInputs:
    name: str
    version: str
    license: str
    configs: dict[str, dict[str, int]]  # config -> split -> rows
    config_meta: dict[str, tuple[str, str]]  # config -> (setting, language)
    manifests: dict[str, Any]  # stage -> babelrag.store.Manifest
    stage_descriptions: dict[str, str] = field(default_factory=dict)
    provenance: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (model, prompt, version) -> n
    annotation: Optional[dict[str, Any]] = None
    answer_types: dict[str, int] = field(default_factory=dict)  # a_type -> released rows
    corpus: dict[str, Any] = field(default_factory=dict)  # languages, date range
    validation: dict[str, Any] = field(default_factory=dict)
    change_lines: list[str] = field(default_factory=list)
    data_hash: str = ""
    seed: int = 0
    dev_fraction: float = 0.0
    questions: int = 0
    released: str = ""  # ISO date
    languages: list[str] = field(default_factory=list)  # of the released rows and documents (released_languages)
    license_chosen: bool = True  # False: ``release.license`` was not set, the default stands
    date_ranges: dict[str, Any] = field(default_factory=dict)  # config -> freshness.DateRange of its instances
    window: Optional[Any] = None  # freshness.DateWindow of a time-sliced release (``release.time_slices``)


SMALL_MODEL_MAX_B = 4.0  # a model whose name gives at most this many billion parameters is "small"
_PARAMS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*b(?![a-z])")


def count_noun(n: int, singular: str, plural: Optional[str] = None) -> str:
    """``1 question``, ``2 questions``: the card never says "1 questions"."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def released_languages(instances: Iterable[Instance], pivot: str) -> list[str]:
    """The languages the release holds: question languages, document languages, and the language of the
    ``en_question`` / ``en_answer`` fields (the pivot; X for a monolingual question) — never a configured
    language no row or document has."""
    out: set[str] = set()
    for inst in instances:
        out.add(inst.language)
        out.update(d.language for d in inst.documents)
        if inst.en_question.strip() or inst.en_answer.strip():
            out.add(inst.source_language(pivot))
    return sorted(out)


def small_model(model: str) -> bool:
    """The embedded offline model, or a model whose name says it has at most ``SMALL_MODEL_MAX_B`` billion
    parameters (``qwen2.5-0.5b-instruct``, ``llama-3.2-3b``)."""
    name = model.lower().rsplit("/", 1)[-1]
    if name == MODEL_ALIAS:
        return True
    return any(float(m) <= SMALL_MODEL_MAX_B for m in _PARAMS.findall(name))


def header_languages(inp: CardInputs) -> list[str]:
    """The languages the card declares: those of the released rows and documents."""
    return inp.languages or sorted({lang for _, lang in inp.config_meta.values()})


def header(inp: CardInputs) -> dict[str, Any]:
    languages = header_languages(inp)
    total = sum(sum(s.values()) for s in inp.configs.values())
    return {
        "pretty_name": inp.name,
        "license": check_license(inp.license),
        "language": languages,
        "language_details": [bcp47(x) for x in languages],
        "multilinguality": "multilingual" if len(languages) > 1 else "monolingual",
        "size_categories": [size_category(total)],
        # questions and answers are written by an LLM and checked by annotators when the build was annotated;
        # the documents are news articles found on the web (plus machine translations in some settings)
        "annotations_creators": ["expert-generated"] if inp.annotation else ["machine-generated"],
        "language_creators": ["found", "machine-generated"],
        "source_datasets": ["original"],
        "task_categories": TASK_CATEGORIES,
        "task_ids": TASK_IDS,
        "tags": ["rag", "cross-lingual", "multilingual", "babelrag"],
        "version": inp.version,
        "configs": configs_header(inp.configs),
    }


def configs_header(configs: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """The header's ``configs``: each config's data file per split (what ``load_dataset(folder, config)`` reads)."""
    return [{"config_name": cfg, "data_files": [{"split": split, "path": layout.split_path(cfg, split)}
                                                for split in sorted(splits)]}
            for cfg, splits in sorted(configs.items())]


def _table(rows: list[list[Any]], cols: list[str]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}"
        return str(v).replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out)


def _annotation_section(summary: Optional[dict[str, Any]]) -> str:
    if not summary:
        return "Not annotated: no `annotate/summary.json` or `annotate/<project>.agreement.json` in the build. Instances carry `verified=false` " \
               "unless a human verified them."
    parts = []
    scalars = [(k, v) for k, v in summary.items() if not isinstance(v, (list, dict))]
    if scalars:
        parts.append("\n".join(f"- {k}: {v}" for k, v in scalars))
    for key, value in summary.items():
        if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
            cols = list(dict.fromkeys(c for r in value for c in r))
            parts.append(f"**{key}**\n\n" + _table([[r.get(c, "") for c in cols] for r in value], cols))
        elif isinstance(value, dict):
            flat = [(k, v) for k, v in value.items() if not isinstance(v, (list, dict))]
            nested = [(k, v) for k, v in value.items() if isinstance(v, dict)]
            lines = [f"- {k}: {v}" for k, v in flat]
            for k, v in nested:
                lines.append(f"- {k}: " + ", ".join(f"{a}={b}" for a, b in v.items()))
            parts.append(f"**{key}**\n\n" + "\n".join(lines))
    return "\n\n".join(parts)


def answer_types_line(counts: dict[str, int]) -> str:
    """Where the released gold answers come from (rows per ``a_type``), so the card's claim about human
    work is a count of rows that carry it."""
    if not counts:
        return ""
    shown = ", ".join(f"{counts.get(t, 0)} `{t}`" for t in ANSWER_TYPES)
    return (f"Gold answers (released rows by `a_type`): {shown}. `human_corrected`: annotators corrected the "
            "English answer (translated rows carry a translation of the corrected text); `human_translated`: a "
            "human translated the row's question and answer; `original`: the model's answer. The XRAG export maps "
            "them to XRAG's `corrected` / `original` (a human translation of an uncorrected answer is `original`).")


def annotation_section(summary: Optional[dict[str, Any]], answer_types: dict[str, int]) -> str:
    """The card's Annotation section: the annotation summary, then where the gold answers come from."""
    return "\n\n".join(p for p in (_annotation_section(summary), answer_types_line(answer_types)) if p)


def _verification_sentence(unverified: int, annotated: bool) -> str:
    """One statement about verification that cannot contradict the Annotation section."""
    if unverified:
        verb = "is" if unverified == 1 else "are"
        return (f"**{count_noun(unverified, 'instance')} {verb} released unverified** (`verified=false`, "
                "`release.allow_unverified`).")
    if annotated:
        return "Every instance was verified by an annotator."
    return ("Every instance is marked `verified=true`; the build holds no annotation summary saying who verified "
            "them (see Annotation).")


def publication_dates_section(ranges: dict[str, Any], window: Optional[Any] = None) -> str:
    """Each config's supporting-article publication range, so a user can pick instances newer than a model's
    training cutoff (``evaluate run --after``); a time-sliced release names its window first."""
    intro = ""
    if window is not None:
        intro = (f"This release is a time slice: it holds only instances whose supporting articles were all "
                 f"{window.describe()} (bounds exclusive).\n\n")
    if not ranges:
        return intro + "No instances."
    rows = [[cfg, str(r.first or "-"), str(r.last or "-"), r.dated, r.undated] for cfg, r in sorted(ranges.items())]
    return (intro + _table(rows, ["config", "earliest", "latest", "dated instances", "undated instances"])
            + "\n\nDates are the supporting articles' publication dates (`dates`). To score only what a model "
            "cannot have seen in training: `babelrag evaluate run RELEASE --after <training cutoff>`; undated "
            "instances are then left out and counted.")


def citation_section(bibtex: str, papers: tuple[str, ...]) -> str:
    """This release's BibTeX, then the method papers it follows."""
    out = f"If you use this release, please cite it:\n\n```bibtex\n{bibtex}\n```"
    for p in papers:
        out += f"\n\nand {METHOD_PAPERS[p].what}:\n\n```bibtex\n{METHOD_PAPERS[p].bibtex}\n```"
    return out


# what the LLM calls of a stage are for (the card says which model generated and which judged)
STAGE_ROLES = {
    "ingest": "title entities (LLM NER)", "pairs": "embedded the articles (OpenAI-compatible encoder)",
    "index": "embedded the articles (OpenAI-compatible encoder)",
    "relevance": "judged whether paired articles are related",
    "questions": "generated the questions and answers",
    "filters": "judged the questions (LLM filters)",
    "instances": "translated questions, answers and documents",
}


def stage_models(manifests: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(stage, endpoint, model) of every LLM endpoint a stage called, from the manifests' LLM usage (an
    older manifest without ``models`` names the endpoint only: model ``?``)."""
    out = []
    for stage, m in manifests.items():
        u = m.llm_usage or {}
        models = u.get("models") or {}
        for endpoint in u.get("endpoints", []):
            out.append((stage, endpoint, models.get(endpoint, "?")))
    return out


def _models_section(inp: CardInputs) -> str:
    used = stage_models(inp.manifests)
    parts = []
    if used:
        parts.append(_table([[stage, STAGE_ROLES.get(stage, inp.stage_descriptions.get(stage, "")), ep, model]
                             for stage, ep, model in used], ["stage", "what the model did", "endpoint", "model"]))
    else:
        parts.append("The build manifests record no LLM calls (a cached or offline build): the models are those "
                     "of the question provenance below.")
    parts.append(_table([[m or "-", p or "-", v or "-", n] for (m, p, v), n in sorted(inp.provenance.items())],
                        ["model", "prompt id", "prompt version", "questions"]) if inp.provenance else
                 "No provenance recorded on the released questions.")
    return "\n\n".join(parts)


def small_model_notice(inp: CardInputs) -> str:
    """A warning naming every small model that generated or judged this release ("" when none did)."""
    models = {model for _, _, model in stage_models(inp.manifests)} | {m for m, _, _ in inp.provenance if m}
    small = sorted(m for m in models if small_model(m))
    if not small:
        return ""
    names = ", ".join(f"`{m}`" + (" (babelrag's embedded 0.5B offline model)" if m == MODEL_ALIAS else "")
                      for m in small)
    return (f"> **Small model notice**: {names} generated or judged this release (see Models and prompts). "
            "A model this small writes and checks questions far less reliably than a benchmark needs: read "
            "this release as a trial of the pipeline, unless annotators verified every instance.")


def _filters_section(manifest: Any) -> tuple[str, str]:
    """(what the filters stage did, a table of the filters that ran with their counts); from the
    manifest's ``extra["filters"]`` (filter -> pass/fail/error), so a filter switched off is never listed."""
    ran = (manifest.extra or {}).get("filters") if manifest is not None else None
    if ran is None:
        return "quality filters (which ran is not recorded in this build's manifest)", ""
    if not ran:
        return "no quality filter ran (all switched off)", ""
    order = [n for n in manifest.extra.get("filter_order", []) if n in ran]
    names = order + sorted(n for n in ran if n not in order)
    rows = [[name, ran[name].get("pass", 0), ran[name].get("fail", 0), ran[name].get("error", 0)] for name in names]
    how = "in the order they ran (each sees the questions the ones before it passed)" if order else "by name"
    table = (f"Quality filters that ran, {how}; no other filter ran:\n\n"
             + _table(rows, ["filter", "passed", "failed", "errors"]))
    return "quality filters that ran: " + ", ".join(names), table


def licence_section(license_id: str, chosen: bool) -> str:
    rights = ("The articles keep their publishers' rights; check the source licences before redistributing "
              "the documents.")
    if chosen:
        return f"`{license_id}`, chosen by the curator (`release.license`). {rights}"
    return (f"**`{license_id}` is babelrag's default, not a choice**: `release.license` is not set in the build's "
            f"config. Set it to the licence this release is published under (a Hub identifier, e.g. cc-by-4.0, "
            f"cc-by-nc-4.0) and rebuild. {rights}")


_MONOLINGUAL_SUMMARY = (", and monolingual questions as MIRAGE-Bench evaluates each language (`monolingual-<x>`: "
                        "the question, answer and every document in one language X)")
_MONOLINGUAL_SETTING_NOTE = ("`monolingual` question and answer written in X (not translated) from two X articles, "
                             "supporting and distracting documents all in X (MIRAGE-Bench's per-language setting; "
                             "its `no-retrieval` / `oracle` rows are in X too); ")


def _has_monolingual(inp: CardInputs) -> bool:
    return any(setting == MONOLINGUAL_SETTING for setting, _ in inp.config_meta.values())


def _summary_section(inp: CardInputs) -> str:
    notice = small_model_notice(inp)
    total = sum(sum(s.values()) for s in inp.configs.values())
    first = sorted(inp.configs)[0] if inp.configs else "mono-de"
    return ((notice + "\n\n" if notice else "") +
            f"**{inp.name}** version **{inp.version}**: {count_noun(total, 'instance')} from "
            f"{count_noun(inp.questions, 'question')} in {count_noun(len(inp.configs), 'configuration')} (one per "
            f"retrieval setting and question language) in {_held(inp)}, built with "
            "babelrag following the XRAG construction (cross-document questions over related news articles, "
            "with distractors)" + (_MONOLINGUAL_SUMMARY if _has_monolingual(inp) else "") + ".\n\n```python\n"
            "from datasets import load_dataset\n"
            f"ds = load_dataset(\"<repo or folder>\", \"{first}\")\n```")


def _held(inp: CardInputs) -> str:
    return ", ".join(bcp47(x) for x in header_languages(inp)) or "-"


def _configurations_section(inp: CardInputs) -> str:
    rows = [[cfg, inp.config_meta[cfg][0], f"{inp.config_meta[cfg][1]} ({bcp47(inp.config_meta[cfg][1])})",
             inp.configs[cfg].get("dev", 0), inp.configs[cfg].get("test", 0)] for cfg in sorted(inp.configs)]
    return _table(rows, ["config", "setting", "question language", "dev", "test"]) + (
        "\n\nSettings: `mono` question in X, English documents; `multi` question in X, supporting and "
        "distracting documents in English and X; `en-baseline` the English question; `+EQ/+ES/+ED` English "
        "question / supporting / distracting documents (machine-translated copies are flagged); "
        + (_MONOLINGUAL_SETTING_NOTE if _has_monolingual(inp) else "") +
        "`no-retrieval` question only; `oracle` supporting documents only. Config names: the setting, the "
        "question language, then the controlled variants spelled out: `multi-de-en_support` is `multi+ES` "
        "with German questions (`en_question` +EQ, `en_support` +ES, `en_distractors` +ED); releases before "
        "this naming called it `multi-es-de`, and readers still accept that name.")


# what a released row's field holds, where its name and type do not say it (a Literal's choices come from its type)
INSTANCE_NOTES = {"qa_id": "shared by every setting of one question", "language": "question language",
                  "en_answer": "like en_question, the question and answer as written: English; a monolingual "
                               "question's rows repeat its question and answer in X, as there is no English version",
                  "q_type": ", ".join(QUESTION_TYPES), "dates": "supporting articles' publication dates"}


def _field_list(model: type[BaseModel], notes: dict[str, str]) -> str:
    """The model's fields in declared order, each with its note or its choices; ``documents`` lists its own."""
    out = []
    for name, info in model.model_fields.items():
        choices = get_args(info.annotation) if get_origin(info.annotation) is Literal else ()
        note = notes.get(name) or "|".join(choices)
        if name == "documents":
            note = f"list of {_field_list(Document, {})}"
        out.append(f"`{name}`" + (f" ({note})" if note else ""))
    return ", ".join(out)


def data_fields_section() -> str:
    """The released row's fields, from the record type itself (``babelrag.records.Instance``)."""
    return f"{_field_list(Instance, INSTANCE_NOTES)}. JSON Schemas are in `schema/`."


def _construction_section(inp: CardInputs) -> str:
    rows = []
    for stage, m in inp.manifests.items():
        counts = m.counts or {}
        skipped = ", ".join(f"{k}={v}" for k, v in sorted((counts.get("skipped") or {}).items())) or "-"
        what = _filters_section(m)[0] if stage == "filters" else inp.stage_descriptions.get(stage, "")
        rows.append([stage, what, counts.get("in", 0), counts.get("out", 0), counts.get("errors", 0), skipped])
    corpus, corpus_line = inp.corpus, ""
    if corpus:
        langs = ", ".join(f"{k}: {v}" for k, v in sorted(corpus.get("languages", {}).items()))
        corpus_line = (f"The corpus after ingestion holds {count_noun(corpus.get('articles', 0), 'news article')} "
                       f"({langs}), published {corpus.get('date_min', '?')} to {corpus.get('date_max', '?')}; "
                       f"the release's rows and documents are in {_held(inp)}.\n\n")
    filters_table = _filters_section(inp.manifests["filters"])[1] if "filters" in inp.manifests else ""
    return (corpus_line + _table(rows, ["stage", "what it does", "in", "out", "errors", "skipped"])
            + (f"\n\n{filters_table}" if filters_table else ""))


def _llm_usage_section(inp: CardInputs) -> str:
    rows = []
    for stage, m in inp.manifests.items():
        u = m.llm_usage or {}
        if u.get("calls") or u.get("prompt_tokens"):
            rows.append([stage, ", ".join(u.get("endpoints", [])), u.get("calls", 0), u.get("cached", 0),
                         u.get("prompt_tokens", 0), u.get("completion_tokens", 0),
                         u.get("prompt_tokens", 0) + u.get("completion_tokens", 0), f"{u.get('cost', 0.0):.4f}"])
    if not rows:
        return "No LLM calls were recorded in the build manifests (cached or offline build)."
    tot = [sum(r[i] for r in rows) for i in (2, 3, 4, 5, 6)]
    rows.append(["**total**", "", *tot, f"{sum(float(r[7]) for r in rows):.4f}"])
    return _table(rows, ["stage", "endpoints", "calls", "cached", "prompt tokens", "completion tokens",
                         "total tokens", "cost (USD)"])


def _validation_section(inp: CardInputs) -> str:
    val = inp.validation
    return (f"Checked before writing: schema, declared languages (lingua, on the function words: names are "
            f"masked), distractors published at least the "
            f"configured number of days before the supporting articles, no supporting article among distractors, "
            f"no instance id / question / article pair shared across splits, verification, no empty texts. "
            f"{count_noun(val.get('checked', 0), 'instance')} checked, 0 violations; "
            f"{count_noun(val.get('unchecked_language', 0), 'text')} too short or made only of names for a language "
            f"check. "
            + _verification_sentence(val.get("unverified_released", 0), bool(inp.annotation)))


def _versioning_section(inp: CardInputs) -> str:
    return (f"Version {inp.version}. " + " ".join(inp.change_lines) +
            "\n\nRule: a change that can alter any score (any released row) is a new version; `release.json` "
            f"stores a hash per config/split. Data hash: `{inp.data_hash}`. Splits: question-level hash of the "
            f"seed ({inp.seed}) and the question id (questions sharing a supporting article stay together), "
            f"dev fraction {inp.dev_fraction}. See `CHANGELOG.md`.")


def _reproducibility_section(inp: CardInputs) -> str:
    versions: dict[str, str] = {}
    for m in inp.manifests.values():
        versions.update(m.versions or {})
    hashes = [[stage, m.config_hash[:12], m.output_fingerprint[:12]] for stage, m in inp.manifests.items()]
    return (_table(hashes, ["stage", "config hash", "output fingerprint"]) + "\n\nLibraries: " +
            ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + f"\n\nReleased {inp.released}.")


# section title -> its text from the card's inputs, in the order the card shows them
SECTION_WRITERS: dict[str, Callable[[CardInputs], str]] = {
    "Dataset summary": _summary_section,
    "Configurations": _configurations_section,
    "Publication dates": lambda inp: publication_dates_section(inp.date_ranges, inp.window),
    "Data fields": lambda inp: data_fields_section(),
    "Construction": _construction_section,
    "Models and prompts": _models_section,
    "Annotation": lambda inp: annotation_section(inp.annotation, inp.answer_types),
    "LLM usage": _llm_usage_section,
    "Validation": _validation_section,
    "Versioning": _versioning_section,
    "Reproducibility": _reproducibility_section,
    "Licence": lambda inp: licence_section(inp.license, inp.license_chosen),
    "Citation": lambda inp: citation_section(release_bibtex(inp.name, inp.version, inp.released), ("xrag",)),
}
SECTIONS = tuple(SECTION_WRITERS)


def render(inp: CardInputs) -> str:
    """The card: the YAML header, then each section in ``SECTIONS`` order."""
    import yaml

    head = yaml.safe_dump(header(inp), sort_keys=False, allow_unicode=True, width=1000)
    body = "\n\n".join(f"## {name}\n\n{write(inp)}" for name, write in SECTION_WRITERS.items())
    return f"---\n{head}---\n\n# {inp.name}\n\n{body}\n"


def released_date(manifests: dict[str, Any]) -> str:
    """The release date is the build's (last finished stage), so rebuilding gives the same card."""
    last = max((m.finished_at for m in manifests.values()), default=0.0)
    return datetime.datetime.fromtimestamp(last, tz=datetime.timezone.utc).date().isoformat()
