"""The README stays a page a newcomer reads in minutes, and what it says about `make demo` is what the demo runs.

Figures about the demo's inputs are read from the code they describe (stage order from the declared stages,
corpus size from the shipped file, the demo's budget from its defaults); links in the README and docs/ must
reach a file and, with an anchor, a heading of that file.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path

from babelrag import cli, demo
from babelrag.stage import stage_names

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 200
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; move details to docs/ (≤ {MAX_LINES})"


def test_every_relative_link_in_readme_and_docs_resolves():
    broken = []
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not checked offline
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no heading #{anchor})")
    assert not broken, "\n".join(broken)


def test_readme_demo_stages_are_the_pipeline_order():
    text = " ".join(README.read_text(encoding="utf-8").split())
    chains = [re.findall(r"\w+", m) for m in re.findall(r"(\w+(?: → \w+){3,})", text)]
    assert chains, "the README lists no stage chain"
    assert list(stage_names()) in chains, (stage_names(), chains)


def test_readme_demo_figures_match_the_demo():
    text = " ".join(README.read_text(encoding="utf-8").split())
    articles = sum(1 for line in (demo.wikinews_corpus_dir() / "articles.jsonl").open(encoding="utf-8") if line.strip())
    assert f"{articles} real news articles" in text
    default_pairs = inspect.signature(cli.demo).parameters["max_pairs"].default.default
    assert f"--max-pairs {default_pairs}" in text
    assert f"{demo.DEMO_EVAL_INSTANCES} evaluated instances" in text
