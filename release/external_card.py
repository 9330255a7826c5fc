"""The dataset card of a folder made by ``release convert``: a converted benchmark is a release too, so
``load_dataset(folder, config)`` reads each config and ``release push`` uploads it with a card the Hub
accepts (header values from ``hub_metadata``), naming the source, its licence, its published evaluation
protocol and what could not be converted."""
from __future__ import annotations

from typing import Any

from babelrag.release.card import citation_section, configs_header
from babelrag.release.citation import release_bibtex
from babelrag.release.hub_metadata import bcp47, check_license, size_category


SOURCES: dict[str, dict[str, Any]] = {
    # licence of the published data: GaRAGe's repository and XRAG's dataset card state CC-BY-NC-4.0
    "garage": {"pretty": "GaRAGe", "license": "cc-by-nc-4.0", "source": "amazon-science/GaRAGe",
               "annotations": ["expert-generated"], "papers": ("garage",)},
    "xrag": {"pretty": "XRAG", "license": "cc-by-nc-4.0", "source": "AmazonScience/XRAG",
             "annotations": ["machine-generated", "expert-generated"], "papers": ("xrag",)},
    # a BEIR folder says nothing of its licence: "unknown" until its publisher's terms are checked
    "beir": {"pretty": "BEIR folder", "license": "unknown", "source": "", "annotations": ["other"], "papers": ()},
}


def header(name: str, fmt: str, configs: dict[str, dict[str, int]], languages: list[str]) -> dict[str, Any]:
    src = SOURCES[fmt]
    total = sum(sum(s.values()) for s in configs.values())
    return {
        "pretty_name": f"{name} ({src['pretty']}, converted)",
        "license": check_license(src["license"]),
        "language": languages,
        "language_details": [bcp47(x) for x in languages],
        "multilinguality": "multilingual" if len(languages) > 1 else "monolingual",
        "size_categories": [size_category(total)],
        "annotations_creators": src["annotations"],
        "language_creators": ["found"],
        "source_datasets": [f"extended|{src['source']}"] if src["source"] else ["original"],
        "task_categories": ["question-answering", "text-retrieval"],
        "tags": ["rag", "babelrag", f"converted-{fmt}"],
        "configs": configs_header(configs),
    }


def render(name: str, fmt: str, info: dict[str, Any], languages: list[str]) -> str:
    import yaml

    configs: dict[str, dict[str, int]] = info["configs"]
    head = yaml.safe_dump(header(name, fmt, configs, languages), sort_keys=False, allow_unicode=True, width=1000)
    src = SOURCES[fmt]
    rows = "\n".join(f"| {cfg} | " + ", ".join(f"{sp}: {n}" for sp, n in sorted(splits.items())) + " |"
                     for cfg, splits in sorted(configs.items()))
    skipped = info.get("not_converted") or {}
    notes = info.get("warnings") or {}
    protocol = info.get("protocol")
    lines = [
        f"# {name}", "",
        f"{info['records']} records of {src['pretty']} (`{info['source']}`) converted by `babelrag release convert "
        f"--format {fmt}` into babelrag instances. The records in their own format are kept in `source/` and "
        f"`babelrag release export FOLDER --format {fmt}` writes them back unchanged.", "",
        "```python\nfrom datasets import load_dataset\n"
        f"ds = load_dataset(\"<repo or folder>\", \"{sorted(configs)[0] if configs else 'garage-en'}\")\n```", "",
        "## Configurations", "", "| config | rows |", "|---|---|", rows, "",
        "## Conversion", "",
        *([f"- not converted: {n} ({reason}); kept in `source/`" for reason, n in sorted(skipped.items())]
          or ["- every record became an instance"]),
        *[f"- note: {n} {what}" for what, n in sorted(notes.items())], "",
        "## Evaluation protocol", "",
        (f"`babelrag evaluate run` shows the documents in their published order, labelled and cited as "
         f"`[{protocol['citation_label'].format(n='N')}]` ({protocol['reference']})."
         if protocol else "Documents are shown in a seeded shuffled order, numbered `[1]..[n]`."), "",
        "## Licence", "",
        f"`{src['license']}`, the licence of the published {src['pretty']} data; check it before redistributing.", "",
        "## Citation", "",
        citation_section(release_bibtex(name, info.get("version", ""), ""), src["papers"]),
    ]
    return f"---\n{head}---\n\n" + "\n".join(lines) + "\n"
