"""Where the articles went: per language, articles → paired → relevant → questions → accepted → instances.

A curator whose build made one question out of 160 articles needs to see at which step each language thinned
out and why, without opening every manifest. The funnel reads only the id and language columns of each finished
stage (bounded memory on a large corpus) and every stage's drop reasons, in full.

A language's row counts: its ingested articles; those in at least one mined pair; those in at least one pair the
relevance check did not reject; the questions, and the accepted questions, made from a pair with one of its
articles; the benchmark instances whose question is in that language.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from babelrag.shards import RECORDS_FILE
from babelrag.store import BuildStore

COLUMNS = ("articles", "paired", "relevant", "questions", "accepted", "instances")


@dataclass
class LanguageFunnel:
    language: str
    articles: int = 0
    paired: int = 0
    relevant: int = 0
    questions: int = 0
    accepted: int = 0
    instances: int = 0


@dataclass
class Funnel:
    """Per-language counts plus each stage's drops (reason -> count, in full) and failed items."""

    languages: list[LanguageFunnel] = field(default_factory=list)
    drops: dict[str, dict[str, int]] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)  # calls that got no answer: a plain re-run retries them
    errors: dict[str, int] = field(default_factory=dict)  # items whose error is their final outcome
    missing_stages: list[str] = field(default_factory=list)  # not run yet (their columns stay 0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def render(self) -> Any:
        """A rich renderable: the table, then every drop reason on its own line (nothing cut)."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        table = Table(title="where the articles went (per language)")
        table.add_column("language")
        for col in COLUMNS:
            table.add_column(col, justify="right")
        for row in self.languages:
            table.add_row(row.language, *(str(getattr(row, c)) for c in COLUMNS))
        lines = [Text(f"{stage}: dropped {reason} = {n}") for stage, reasons in self.drops.items()
                 for reason, n in sorted(reasons.items())]
        lines += [Text(f"{stage}: {n} item(s) failed (a plain re-run retries them)") for stage, n in self.failed.items()]
        lines += [Text(f"{stage}: {n} item(s) ended in an error (final; errors.parquet says why)")
                  for stage, n in self.errors.items()]
        if self.missing_stages:
            lines.append(Text(f"not run yet: {', '.join(self.missing_stages)}"))
        return Group(table, *lines)


def _columns(store: BuildStore, stage: str, columns: list[str]) -> dict[str, list[Any]] | None:
    """Only these columns of a finished stage's records; None when the stage has no finished output."""
    if store.manifest(stage) is None:
        return None
    import pyarrow.parquet as pq

    path = store.stage_dir(stage) / RECORDS_FILE
    if not path.exists():
        return {c: [] for c in columns}
    return pq.read_table(path, columns=columns).to_pydict()


def build_funnel(store: BuildStore, stages: tuple[str, ...] = ("ingest", "pairs", "relevance", "questions",
                                                              "filters", "instances")) -> Funnel:
    funnel = Funnel()
    rows: dict[str, LanguageFunnel] = {}

    def row(lang: str) -> LanguageFunnel:
        return rows.setdefault(lang, LanguageFunnel(lang))

    language_of: dict[str, str] = {}
    articles = _columns(store, "ingest", ["id", "language"])
    if articles is not None:
        language_of = dict(zip(articles["id"], articles["language"]))
        for lang, n in Counter(language_of.values()).items():
            row(lang).articles = n

    def articles_in(pairs: dict[str, list[Any]], keep: list[bool]) -> Counter[str]:
        seen: set[str] = set()
        for a, b, k in zip(pairs["article_a"], pairs["article_b"], keep):
            if k:
                seen.update((a, b))
        return Counter(language_of.get(x, "?") for x in seen)

    pairs = _columns(store, "pairs", ["article_a", "article_b"])
    if pairs is not None:
        for lang, n in articles_in(pairs, [True] * len(pairs["article_a"])).items():
            row(lang).paired = n
    checked = _columns(store, "relevance", ["article_a", "article_b", "relevant"])
    if checked is not None:
        for lang, n in articles_in(checked, [r is not False for r in checked["relevant"]]).items():
            row(lang).relevant = n
    rejected: dict[str, int] = {}
    for stage, attr in (("questions", "questions"), ("filters", "accepted")):
        items = _columns(store, stage, ["article_ids", "accepted", "rejected_by"])
        if items is None:
            continue
        if stage == "filters":  # the stage keeps rejected questions (accepted: false, rejected_by)
            rejected = dict(Counter(f"rejected-by-{by or 'unknown'}"
                                    for ok, by in zip(items["accepted"], items["rejected_by"]) if not ok))
        per_lang: Counter[str] = Counter()
        for ids, accepted in zip(items["article_ids"], items["accepted"]):
            if stage == "filters" and not accepted:
                continue
            per_lang.update({language_of.get(x, "?") for x in ids})
        for lang, n in per_lang.items():
            setattr(row(lang), attr, n)
    instances = _columns(store, "instances", ["language"])
    if instances is not None:
        for lang, n in Counter(instances["language"]).items():
            row(lang).instances = n
    for stage in stages:
        manifest = store.manifest(stage)
        if manifest is None:
            funnel.missing_stages.append(stage)
            continue
        skipped = {k: int(v) for k, v in (manifest.counts.get("skipped") or {}).items() if v}
        if stage == "filters":
            skipped = {**skipped, **rejected}
        if skipped:
            funnel.drops[stage] = skipped
        failed, errors = int(manifest.counts.get("failed") or 0), int(manifest.counts.get("errors") or 0)
        if failed:
            funnel.failed[stage] = failed
        if errors > failed:
            funnel.errors[stage] = errors - failed
    funnel.languages = [rows[k] for k in sorted(rows)]
    return funnel

