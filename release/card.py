"""The dataset card (README.md): YAML header the Hub and ``load_dataset`` read, then the sections.

Everything comes from the build: stage manifests (counts, LLM usage, library versions, config hashes),
record provenance (models, prompt ids and versions), the annotation summary if there is one, and the
release's own validation and version facts. Nothing in the card is typed by hand.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Optional

from babelrag.records import ANSWER_TYPES
from babelrag.release import layout
from babelrag.release.citation import METHOD_PAPERS, release_bibtex
from babelrag.release.hub_metadata import bcp47, check_license, size_category

TASK_CATEGORIES = ["question-answering", "text-retrieval"]
TASK_IDS = ["open-domain-qa", "document-retrieval"]
SECTIONS = ("Dataset summary", "Configurations", "Data fields", "Construction", "Models and prompts",
            "Annotation", "LLM usage", "Validation", "Versioning", "Reproducibility", "Licence", "Citation")


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


def header(inp: CardInputs) -> dict[str, Any]:
    languages = sorted({lang for _, lang in inp.config_meta.values()} | set(inp.corpus.get("languages", {})))
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
        return f"**{unverified} instances are released unverified** (`verified=false`, `release.allow_unverified`)."
    if annotated:
        return "Every instance was verified by an annotator."
    return ("Every instance is marked `verified=true`; the build holds no annotation summary saying who verified "
            "them (see Annotation).")


def citation_section(bibtex: str, papers: tuple[str, ...]) -> str:
    """This release's BibTeX, then the method papers it follows."""
    out = f"If you use this release, please cite it:\n\n```bibtex\n{bibtex}\n```"
    for p in papers:
        out += f"\n\nand {METHOD_PAPERS[p].what}:\n\n```bibtex\n{METHOD_PAPERS[p].bibtex}\n```"
    return out


def render(inp: CardInputs) -> str:
    import yaml

    head = yaml.safe_dump(header(inp), sort_keys=False, allow_unicode=True, width=1000)
    total = sum(sum(s.values()) for s in inp.configs.values())
    cfg_rows = [[cfg, inp.config_meta[cfg][0], f"{inp.config_meta[cfg][1]} ({bcp47(inp.config_meta[cfg][1])})",
                 inp.configs[cfg].get("dev", 0), inp.configs[cfg].get("test", 0)] for cfg in sorted(inp.configs)]
    stage_rows = []
    usage_rows = []
    versions: dict[str, str] = {}
    hashes = []
    for stage, m in inp.manifests.items():
        counts = m.counts or {}
        skipped = ", ".join(f"{k}={v}" for k, v in sorted((counts.get("skipped") or {}).items())) or "-"
        stage_rows.append([stage, inp.stage_descriptions.get(stage, ""), counts.get("in", 0), counts.get("out", 0),
                           counts.get("errors", 0), skipped])
        u = m.llm_usage or {}
        if u.get("calls") or u.get("prompt_tokens"):
            usage_rows.append([stage, ", ".join(u.get("endpoints", [])), u.get("calls", 0), u.get("cached", 0),
                               u.get("prompt_tokens", 0), u.get("completion_tokens", 0),
                               u.get("prompt_tokens", 0) + u.get("completion_tokens", 0), f"{u.get('cost', 0.0):.4f}"])
        versions.update(m.versions or {})
        hashes.append([stage, m.config_hash[:12], m.output_fingerprint[:12]])
    if usage_rows:
        tot = [sum(r[i] for r in usage_rows) for i in (2, 3, 4, 5, 6)]
        usage_rows.append(["**total**", "", *tot, f"{sum(float(r[7]) for r in usage_rows):.4f}"])
        usage = _table(usage_rows, ["stage", "endpoints", "calls", "cached", "prompt tokens", "completion tokens",
                                    "total tokens", "cost (USD)"])
    else:
        usage = "No LLM calls were recorded in the build manifests (cached or offline build)."
    prov = _table([[m or "-", p or "-", v or "-", n] for (m, p, v), n in sorted(inp.provenance.items())],
                  ["model", "prompt id", "prompt version", "questions"]) if inp.provenance else \
        "No provenance recorded on the released questions."
    corpus = inp.corpus
    corpus_line = ""
    if corpus:
        langs = ", ".join(f"{k}: {v}" for k, v in sorted(corpus.get("languages", {}).items()))
        corpus_line = (f"The corpus after ingestion holds {corpus.get('articles', 0)} news articles ({langs}), "
                       f"published {corpus.get('date_min', '?')} to {corpus.get('date_max', '?')}.\n\n")
    val = inp.validation
    unverified = val.get("unverified_released", 0)
    sections = {
        "Dataset summary": (
            f"**{inp.name}** version **{inp.version}**: {total} instances from {inp.questions} questions in "
            f"{len(inp.configs)} configurations (one per retrieval setting and question language), built with "
            "babelrag following the XRAG construction (cross-document questions over related news articles, "
            "with distractors).\n\n```python\nfrom datasets import load_dataset\n"
            f"ds = load_dataset(\"<repo or folder>\", \"{sorted(inp.configs)[0] if inp.configs else 'mono-de'}\")\n```"),
        "Configurations": _table(cfg_rows, ["config", "setting", "question language", "dev", "test"]) + (
            "\n\nSettings: `mono` question in X, English documents; `multi` question in X, supporting and "
            "distracting documents in English and X; `en-baseline` the English question; `+EQ/+ES/+ED` English "
            "question / supporting / distracting documents (machine-translated copies are flagged); "
            "`no-retrieval` question only; `oracle` supporting documents only."),
        "Data fields": (
            "`id`, `qa_id` (shared by every setting of one question), `setting`, `language` (question language), "
            "`question`, `answer`, `en_question`, `en_answer`, `q_type` (aggregation, comparison, multi-hop, set), "
            "`documents` (list of `article_id, title, text, language, published, role` (supporting|distractor), "
            "`kind` (relevant|related|irrelevant|seemingly_relevant), `machine_translated`), `verified`, "
            "`machine_translated`, `dates` (supporting articles' publication dates), `a_type`, `crossdoc_type`. "
            "JSON Schemas are in `schema/`."),
        "Construction": corpus_line + _table(stage_rows, ["stage", "what it does", "in", "out", "errors", "skipped"]),
        "Models and prompts": prov,
        "Annotation": annotation_section(inp.annotation, inp.answer_types),
        "LLM usage": usage,
        "Validation": (
            f"Checked before writing: schema, declared languages (lingua), distractors published at least the "
            f"configured number of days before the supporting articles, no supporting article among distractors, "
            f"no instance id / question / article pair shared across splits, verification, no empty texts. "
            f"{val.get('checked', 0)} instances checked, 0 violations; {val.get('unchecked_language', 0)} texts too "
            f"short for a language check. "
            + _verification_sentence(unverified, bool(inp.annotation))),
        "Versioning": (
            f"Version {inp.version}. " + " ".join(inp.change_lines) +
            "\n\nRule: a change that can alter any score (any released row) is a new version; `release.json` "
            f"stores a hash per config/split. Data hash: `{inp.data_hash}`. Splits: question-level hash of the "
            f"seed ({inp.seed}) and the question id (questions sharing a supporting article stay together), "
            f"dev fraction {inp.dev_fraction}. See `CHANGELOG.md`."),
        "Reproducibility": (
            _table(hashes, ["stage", "config hash", "output fingerprint"]) + "\n\nLibraries: " +
            ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + f"\n\nReleased {inp.released}."),
        "Licence": (f"`{inp.license}`. The articles keep their publishers' rights; check the source licences "
                    "before redistributing the documents."),
        "Citation": citation_section(release_bibtex(inp.name, inp.version, inp.released), ("xrag",)),
    }
    body = "\n\n".join(f"## {name}\n\n{sections[name]}" for name in SECTIONS)
    return f"---\n{head}---\n\n# {inp.name}\n\n{body}\n"


def released_date(manifests: dict[str, Any]) -> str:
    """The release date is the build's (last finished stage), so rebuilding gives the same card."""
    last = max((m.finished_at for m in manifests.values()), default=0.0)
    return datetime.datetime.fromtimestamp(last, tz=datetime.timezone.utc).date().isoformat()
