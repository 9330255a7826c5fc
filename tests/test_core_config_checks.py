"""Config values that validate but empty the build are refused at load; every input file the config names is
checked before the first stage runs; an API key pasted into ``api_key_env`` is never printed back."""
import typing

import pytest
from pydantic import BaseModel

from babelrag.config import config_from_dict, config_model, load_config
from babelrag.errors import ConfigError
from tests.helpers.count_cli import ROOT, run_babelrag

SAMPLE = "babelrag/data/sample/articles.jsonl"


def refused(tmp_path, yaml_text: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


def test_pivot_not_among_languages_is_refused(tmp_path):
    msg = refused(tmp_path, "project:\n  languages: [en, de]\n  pivot_language: fr\n")
    assert "pivot_language 'fr' is not among project.languages" in msg and "got {" not in msg
    # the CLI stops before anything is written
    build = tmp_path / "build"
    config = tmp_path / "run.yaml"
    config.write_text(f"project:\n  build_dir: {build}\n  languages: [de, es]\n", encoding="utf-8")
    res = run_babelrag("run", "-c", str(config))
    assert res.returncode == 2 and "pivot_language 'en'" in res.stderr and "Traceback" not in res.stderr
    assert not build.exists()


def test_a_language_listed_twice_is_refused(tmp_path):
    msg = refused(tmp_path, "project:\n  languages: [en, en, de]\n")
    assert "['en'] listed more than once" in msg


@pytest.mark.parametrize("key, value", [
    ("questions.max_pairs", -2), ("questions.max_pairs", 0), ("pairs.max_pairs", 0), ("relevance.max_pairs", -1),
    ("instances.mono_supporting", 0), ("instances.mono_supporting", 3), ("instances.mono_distracting", -1),
    ("instances.multi_distracting_per_language", -1), ("corpus.min_tokens", -5), ("dense.min_score", 7.0),
])
def test_counts_that_would_empty_the_build_are_refused(key, value):
    section, field = key.split(".")
    with pytest.raises(ConfigError, match=f"'{key}'"):
        config_from_dict({section: {field: value}})


def _int_fields(model: type[BaseModel], prefix: str = "") -> typing.Iterator[tuple[str, object]]:
    for name, info in model.model_fields.items():
        args = (info.annotation, *typing.get_args(info.annotation))
        nested = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        for value_type in (t for a in args if typing.get_origin(a) in (dict, list) for t in typing.get_args(a)):
            if isinstance(value_type, type) and issubclass(value_type, BaseModel):
                nested.append(value_type)
        for sub in nested:
            yield from _int_fields(sub, f"{prefix}{name}.")
        if not nested and int in args:
            yield f"{prefix}{name}", info


def test_every_count_in_the_config_has_a_lower_bound():
    """Audit: an int setting without a lower bound (a seed aside) takes -2 and silently empties a stage."""
    unbounded = [key for key, info in _int_fields(config_model())
                 if not key.endswith("seed") and key != "dense.encoder.batch_size"  # its own validator
                 and not any(type(m).__name__ in ("Ge", "Gt") for m in info.metadata)]
    assert unbounded == []


def test_missing_input_files_are_named_before_the_first_stage(tmp_path):
    """Before, a missing instances.reviewed_qa surfaced after every LLM stage had run (and paid)."""
    build = tmp_path / "build"
    config = tmp_path / "c.yaml"
    sample = ROOT / SAMPLE
    config.write_text(f"""project:
  build_dir: {build}
corpus:
  inputs: [{{path: {sample}, format: jsonl}}]
ner:
  gazetteer: no-such-gazetteer.jsonl
dense:
  events_file: events-typo.jsonl
instances:
  reviewed_qa: reviewed/qa.merged.jsonl
""", encoding="utf-8")
    res = run_babelrag("run", "-c", str(config))
    assert res.returncode == 2, res.stderr
    line = res.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    for key in ("ner.gazetteer: no-such-gazetteer.jsonl", "dense.events_file: events-typo.jsonl",
                "instances.reviewed_qa: reviewed/qa.merged.jsonl"):
        assert key in line
    assert str(tmp_path / "reviewed" / "qa.merged.jsonl") in line  # resolved against the config's folder
    assert not (build / "ingest").exists() and not (build / ".partial").exists()


def test_an_events_file_is_not_required_when_it_is_not_read(tmp_path):
    from babelrag.pipeline import check_input_paths
    from babelrag.stage import stages

    cfg = config_from_dict({"dense": {"queries": "articles", "events_file": "gone.jsonl"}}, base_dir=tmp_path)
    check_input_paths(cfg, stages())  # articles mode never opens it: no error


SECRETS = ["sk-proj-4fQ9xTz81LmNpQr7sTuVwXyZ", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz123456",
           "Zx81LmNpQr7sTuVwXyZ4fQ9xTz81LmNpQr7sTuVw", "ghp_1234567890abcdefghijABCDEFGHIJ"]


@pytest.mark.parametrize("secret", SECRETS)
def test_a_key_pasted_into_api_key_env_is_never_printed(tmp_path, secret):
    config = tmp_path / "c.yaml"
    config.write_text(f"project:\n  build_dir: {tmp_path / 'b'}\nllm:\n  endpoints:\n    g:\n"
                      f"      base_url: http://127.0.0.1:9/v1\n      model: m\n      api_key_env: {secret}\n",
                      encoding="utf-8")
    res = run_babelrag("run", "-c", str(config))
    assert res.returncode == 2
    assert "api_key_env" in res.stderr and "NAME of an environment variable" in res.stderr
    assert secret not in res.stdout + res.stderr and secret[:12] not in res.stderr


def test_other_secret_values_are_never_printed():
    with pytest.raises(ConfigError) as info:  # a token pasted into the Milvus token's variable name
        config_from_dict({"dense": {"milvus": {"token_env": SECRETS[1]}}})
    assert "'dense.milvus.token_env'" in str(info.value) and SECRETS[1] not in str(info.value)
    with pytest.raises(ConfigError) as info:  # a password too short: said, not shown
        config_from_dict({"annotate": {"users": [{"username": "ann", "password": "hunter2"}]}})
    assert "password" in str(info.value) and "hunter2" not in str(info.value)


def test_llm_ping_never_prints_a_pasted_key():
    secret = SECRETS[0]
    res = run_babelrag("llm", "ping", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", secret)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert secret not in res.stdout + res.stderr


def test_variable_names_still_pass():
    for name in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY_FOR_PRODUCTION_2026", "my_key", "GROQ_KEY_2"):
        cfg = config_from_dict({"llm": {"endpoints": {"g": {"base_url": "http://x/v1", "model": "m",
                                                             "api_key_env": name}}}})
        assert cfg.llm.endpoints["g"].api_key_env == name
