"""Budget profiles and the embedded model's defaults, shared by `babelrag run` and `babelrag demo`.

A curator trying the pipeline wants the demo's small caps without mapping them to config keys by hand:
``--profile small`` sets the same caps the demo sets, ``--max-pairs N`` the pair budget alone. Both are
config overrides (they win over the YAML), so the stage fingerprints see them like any other value.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from babelrag.config import Config, config_from_dict, deep_merge, read_config_file
from babelrag.errors import ConfigError

#: How many pairs each question needs checked: twice as many pairs are relevance-checked as are turned into
#: questions, so a pair the judge calls unrelated does not leave the questions stage short.
RELEVANCE_PAIRS_PER_QUESTION_PAIR = 2

#: The caps `babelrag demo` runs with (the embedded CPU model costs seconds per call: ~40 prompt tokens/s on
#: 2 cores), without the pair budget, which ``pair_budget`` sets.
SMALL_CAPS: dict[str, Any] = {
    "relevance": {"excerpt_chars": 800},
    "questions": {"max_article_chars": 2000},
    "filters": {"max_article_chars": 1500},
    "instances": {"mono_distracting": 2, "multi_distracting_per_language": 1, "translate_max_chars": 600},
    "evaluate": {"max_document_chars": 600},
}

#: ``--profile NAME``: (caps, pair budget).
PROFILES: dict[str, tuple[dict[str, Any], int]] = {"small": (SMALL_CAPS, 4)}

# The filters whose verdict is the LLM's own judgement (does one article alone answer it? does the model know
# it without documents?). The 0.5B embedded model's verdicts there are noise, and with it they reject nearly
# every question, so they are off by default when the embedded model runs (a curator's YAML can turn them back
# on); with a real endpoint they stay on. The other filters (well-formed, named entity, near-duplicate,
# verbatim) run either way.
EMBEDDED_MODEL_DEFAULTS: dict[str, Any] = {"filters": {"needs_both_articles": False, "needs_retrieval": False}}


def pair_budget(max_pairs: int) -> dict[str, Any]:
    """The config values behind a pair budget: ``max_pairs`` pairs become questions."""
    if max_pairs < 1:
        raise ConfigError(f"--max-pairs must be at least 1 (got {max_pairs})")
    return {"relevance": {"max_pairs": RELEVANCE_PAIRS_PER_QUESTION_PAIR * max_pairs},
            "questions": {"max_pairs": max_pairs}}


def run_overrides(profile: str | None, max_pairs: int | None) -> dict[str, Any]:
    """Config overrides for ``--profile`` and ``--max-pairs`` (the latter wins over the profile's budget)."""
    out: dict[str, Any] = {}
    if profile is not None:
        if profile not in PROFILES:
            raise ConfigError(f"unknown --profile {profile!r}; choose one of {', '.join(sorted(PROFILES))}")
        caps, budget = PROFILES[profile]
        out = deep_merge(caps, pair_budget(budget))
    if max_pairs is not None:
        out = deep_merge(out, pair_budget(max_pairs))
    return out


def load_run_config(path: Path, overrides: dict[str, Any]) -> Config:
    """`babelrag run`'s config, read and validated once: when the embedded model runs (``llm.embedded`` in the
    YAML or from ``--embedded`` in ``overrides``), ``EMBEDDED_MODEL_DEFAULTS`` apply under the YAML's own values."""
    raw = read_config_file(Path(path))
    merged = deep_merge(raw, overrides)
    if _embedded(merged):
        merged = deep_merge(deep_merge(EMBEDDED_MODEL_DEFAULTS, raw), overrides)
    return config_from_dict(merged, source=str(path), base_dir=Path(path).parent)


def _embedded(raw: dict[str, Any]) -> bool:
    """``llm.embedded`` as the config's validation will read it (a value it rejects: False here, the
    validation reports it)."""
    llm = raw.get("llm")
    try:
        return isinstance(llm, dict) and TypeAdapter(bool).validate_python(llm.get("embedded", False))
    except ValidationError:
        return False
