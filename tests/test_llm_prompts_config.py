"""Prompt files, endpoint/settings validation, the llm CLI and the scripted server's own contract."""
from __future__ import annotations

import json
import time

import pytest
from pydantic import ValidationError

from babelrag.errors import ConfigError, InputError
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.llm.prompts import Prompt
from babelrag.testing.scripted_server import (Fault, Faults, Rule, ScriptedProcess, ScriptedServer,
                                              hash_embedding)


def write(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_prompt_file_renders_with_literal_braces(tmp_path):
    path = write(tmp_path, 'id: qa.gen\nversion: 3\nsystem: "Be brief."\n'
                           'user: |\n  Article: {article}\n  Reply like {{"q": "..."}}\n'
                           'sampling: {temperature: 0.7}\n')
    p = Prompt.load(path)
    assert p.ref == "qa.gen@3" and p.version == "3" and p.variables == {"article"}
    assert p.sampling == {"temperature": 0.7}
    msgs = p.render(article="Spain won.")
    assert msgs == [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": 'Article: Spain won.\nReply like {"q": "..."}'}]


def test_prompt_beside_module_file(tmp_path):
    write(tmp_path, "id: a\nversion: '1'\nuser: hi {x}\n", "chain.yaml")
    p = Prompt.beside(tmp_path / "chain.py", "chain.yaml")
    assert p.render(x=1) == [{"role": "user", "content": "hi 1"}]


@pytest.mark.parametrize("text,match", [
    ("id: a\nuser: hi\n", "version"),
    ("version: 1\nuser: hi\n", "'id'"),
    ("id: a\nversion: 1\nuser: hi\nsytem: typo\n", "sytem"),
    ("id: a\nversion: 1\nuser: [unclosed\n", "not valid YAML"),
    ("- just\n- a list\n", "must be a mapping"),
])
def test_bad_prompt_files_name_the_file(tmp_path, text, match):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=match) as exc:
        Prompt.load(path)
    assert str(path) in str(exc.value)


def test_unbalanced_brace_fails_at_load(tmp_path):
    path = write(tmp_path, "id: a\nversion: 1\nuser: 'bad {brace'\n")
    with pytest.raises(ValueError):
        Prompt.load(path)


def test_missing_prompt_variable_is_input_error():
    p = Prompt(id="a", version="1", user="{x} and {y}")
    with pytest.raises(InputError, match=r"\['y'\]"):
        p.render(x=1)


def test_endpoint_config_is_strict():
    with pytest.raises(ValidationError, match="extra"):
        EndpointConfig(base_url="http://x/v1", model="m", api_key="sk-123")
    with pytest.raises(ValidationError, match="NAME of an environment variable"):
        EndpointConfig(base_url="http://x/v1", model="m", api_key_env="sk-abc123")
    with pytest.raises(ValidationError, match="http"):
        EndpointConfig(base_url="localhost:8000", model="m")
    ep = EndpointConfig(base_url="http://x/v1/", model="m", temperature=None)
    assert ep.base_url == "http://x/v1" and "temperature" not in ep.sampling()


def test_missing_key_env_is_config_error(monkeypatch):
    monkeypatch.delenv("BABELRAG_NOPE", raising=False)
    ep = EndpointConfig(base_url="http://x/v1", model="m", api_key_env="BABELRAG_NOPE")
    with pytest.raises(ConfigError, match="BABELRAG_NOPE"):
        ep.api_key("judge-1")


def test_endpoint_lookup_and_fallback():
    a = EndpointConfig(base_url="http://a/v1", model="a")
    b = EndpointConfig(base_url="http://b/v1", model="b")
    s = LLMSettings(endpoints={"generator": a, "judge-1": b}, default_endpoint="generator")
    assert s.endpoint("judge-1")[0] == "judge-1"
    assert s.endpoint("judge-2")[0] == "generator"  # unconfigured names use the default
    assert s.endpoint(None)[0] == "generator"
    with pytest.raises(ConfigError, match="judge-2"):
        LLMSettings(endpoints={"generator": a, "judge-1": b}).endpoint("judge-2")
    assert LLMSettings(endpoints={"only": a}).endpoint("whatever")[0] == "only"
    with pytest.raises(ConfigError, match="no LLM endpoint"):
        LLMSettings().endpoint("generator")
    with pytest.raises(ValidationError, match="default_endpoint"):
        LLMSettings(endpoints={"generator": a}, default_endpoint="nope")


def test_settings_embed_in_main_config(tmp_path):
    from babelrag.config import config_from_dict
    from babelrag.llm.client import runner_from_config

    cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "build")},
                            "llm": {"endpoints": {"generator": {"base_url": "http://127.0.0.1:9/v1",
                                                                "model": "m", "rpm": 60}}}})
    runner = runner_from_config(cfg)
    assert runner.cache is not None and runner.cache.path.parent == tmp_path / "build" / "cache" / "llm"
    runner.close()


def test_embedded_endpoint_passes_configured_settings_through():
    from babelrag.llm.local import embedded_endpoint

    s = LLMSettings(endpoints={"g": EndpointConfig(base_url="http://a/v1", model="a")})
    with embedded_endpoint(s) as got:
        assert got is s  # nothing started


# --- the scripted server itself ----------------------------------------------------------------
def _post(url, body):
    import urllib.request

    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def test_scripted_server_faults_are_seeded_and_order_independent():
    def faults_seen(order):
        with ScriptedServer(faults=Faults.mixed(0.5, seed=42, hang_s=0.01)) as srv:
            for i in order:
                try:
                    _post(f"{srv.base_url}/chat/completions", {"model": "m", "messages": [{"role": "user", "content": f"m{i}"}]})
                except Exception:
                    pass
            return {e["last_user"]: e["fault"] for e in srv.log}

    a = faults_seen(range(30))
    b = faults_seen(reversed(range(30)))
    assert a == b and 5 < sum(1 for f in a.values() if f) < 25


def test_scripted_server_handles_64_concurrent_connections():
    import concurrent.futures

    with ScriptedServer(faults=Faults(latency_s=0.3)) as srv:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        with concurrent.futures.ThreadPoolExecutor(64) as pool:
            list(pool.map(lambda _: _post(f"{srv.base_url}/chat/completions", body), range(64)))
        log = srv.log
    first_end = min(e["t_end"] for e in log)
    assert len(log) == 64
    assert all(e["t"] < first_end for e in log)  # all 64 were being served at the same moment


def test_scripted_server_embeddings_and_cli_process():
    with ScriptedProcess(Faults(latency_s=0.0), default_reply='{"ok": true}') as srv:
        out = _post(f"{srv.base_url}/embeddings", {"model": "e", "input": ["a", "b"]})
        assert out["data"][0]["embedding"] == pytest.approx(hash_embedding("a"))
        assert out["data"][1]["embedding"] == pytest.approx(hash_embedding("b"))
        chat = _post(f"{srv.base_url}/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert json.loads(chat["choices"][0]["message"]["content"]) == {"ok": True}
        assert srv.summary()["by_path"] == {"embed": 1, "chat": 1}


def test_llm_ping_cli_against_scripted_server():
    from typer.testing import CliRunner

    from babelrag.llm.cli import app

    with ScriptedServer([Rule(".", reply={"ok": True})]) as srv:
        res = CliRunner().invoke(app, ["ping", "--base-url", srv.base_url, "--model", "m"])
        assert res.exit_code == 0, res.output
        assert "ping: ok" in res.output
    with ScriptedServer([Rule(".", sequence=[Fault("401")])]) as srv:
        res = CliRunner().invoke(app, ["ping", "--base-url", srv.base_url])
        assert res.exit_code == 1 and "auth" in res.output
