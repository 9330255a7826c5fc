"""BibTeX for dataset cards: the release's own entry and the method papers it follows.

The method papers' entries hold only facts checked against the papers' arXiv pages (title, authors,
year, arXiv id); ``release_bibtex`` is made from the release's name, version and date.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    what: str  # one line: what the paper is to this release
    bibtex: str


METHOD_PAPERS: dict[str, Paper] = {
    "xrag": Paper("XRAG, whose construction and evaluation this release follows", """@misc{liu2025xrag,
  title = {{XRAG}: Cross-lingual Retrieval-Augmented Generation},
  author = {Liu, Wei and Trenous, Sony and Ribeiro, Leonardo F. R. and Byrne, Bill and Hieber, Felix},
  year = {2025},
  eprint = {2505.10089},
  archivePrefix = {arXiv}
}"""),
    "garage": Paper("GaRAGe, the benchmark this folder was converted from", """@misc{sorodoc2025garage,
  title = {{GaRAGe}: A Benchmark with Grounding Annotations for {RAG} Evaluation},
  author = {Sorodoc, Ionut-Teodor and Ribeiro, Leonardo F. R. and Blloshmi, Rexhina and Davis, Christopher and de Gispert, Adri{\\`a}},
  year = {2025},
  eprint = {2506.07671},
  archivePrefix = {arXiv}
}"""),
}


def release_bibtex(name: str, version: str, released: str = "") -> str:
    """A ``@misc`` entry for one release (key: name + version, BibTeX-safe)."""
    key = re.sub(r"[^A-Za-z0-9]+", "_", f"{name}_{version}").strip("_").lower()
    year = released[:4] if re.match(r"^\d{4}", released or "") else ""
    lines = [f"@misc{{{key},", f"  title = {{{{{name}}}: a babelrag release}},", f"  version = {{{version}}},"]
    if year:
        lines.append(f"  year = {{{year}}},")
    lines.append("  note = {Built with babelrag}")
    return "\n".join(lines) + "\n}"
