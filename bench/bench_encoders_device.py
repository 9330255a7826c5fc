"""The project's BGE-M3 encode path against FlagEmbedding's own ``BGEM3FlagModel.encode``: same model,
device, precision and batch size, in one run; articles/s of each and the ratio (target >= 0.95x).

The model is BGE-M3-shaped and built here with random weights (``babelrag/testing/bge_m3.py``; no
download): ``--shape small`` (4 layers, 256 hidden; the CPU default) or ``--shape full`` (BGE-M3's own
XLM-R large: 24 layers, 1024 hidden, 8194 positions). Articles are the sample corpus's news articles
joined to ``--lengths fixed`` (every article at least ``--max-length`` tokens: the issue's 512-token
setting, where sorting cannot help) or ``mixed`` (lengths spread from 32 tokens to ``--max-length``,
as a real corpus of titles, briefs and long reports). Both paths get the whole list in one call
(FlagEmbedding sorts each call by length; ours sorts by token count and skips FlagEmbedding's probe
pass of the longest input per call). The two alternate ``--rounds`` times, the best of each counts, and
the vectors must agree (fp32: 1e-4; half precision: 2e-2). One untimed run of each comes first.

``--per-batch`` adds the encoder as it was before issue 26 (``BGEM3FlagModel.encode`` called once per
batch of texts in cache-key order, so every batch pays the probe pass and pads to its longest text).

    python bench/bench_encoders_device.py [--device auto] [--precision auto] [--batch-size 16]
        [--shape small|full] [--lengths fixed|mixed] [--articles 128] [--max-length 512] [--per-batch]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SAMPLE = ROOT / "babelrag" / "data" / "sample" / "articles.jsonl"


def articles(n: int, max_length: int, lengths: str, seed: int = 0) -> list[str]:
    """``n`` news texts of about the wanted token counts, made by joining sample articles."""
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    words = [w for r in rows for w in f"{r['title']}. {r['maintext']}".split()]
    rng = random.Random(seed)
    out = []
    for i in range(n):
        want = max_length + 16 if lengths == "fixed" else rng.randint(32, max_length)
        start = rng.randrange(len(words))
        out.append(" ".join(words[(start + k) % len(words)] for k in range(want)))
    return out


def quiet() -> Any:
    """FlagEmbedding draws progress bars on stderr in every call (its own ``disable`` wins over TQDM_DISABLE)."""
    import contextlib
    import io

    return contextlib.redirect_stderr(io.StringIO())


def best_of(runs: dict[str, float], name: str, fn: Callable[[], np.ndarray]) -> np.ndarray:
    t0 = time.perf_counter()
    out = fn()
    secs = time.perf_counter() - t0
    runs[name] = min(runs.get(name, secs), secs)
    print(f"  ({name}: {secs:.2f} s, load average {os.getloadavg()[0]:.1f})", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="auto", choices=["auto", "fp16", "bf16", "fp32"])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--shape", default="small", choices=["small", "full"])
    parser.add_argument("--lengths", default="mixed", choices=["fixed", "mixed"])
    parser.add_argument("--articles", type=int, default=128)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-batch", action="store_true", help="also time the pre-issue-26 per-batch path")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)

    import torch
    from FlagEmbedding import BGEM3FlagModel

    from babelrag.construct.encoders import build_encoder
    from babelrag.devices import resolve_devices, resolve_precision
    from babelrag.testing.bge_m3 import make_bge_m3

    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_devices(args.device, setting="--device")[0]
    precision = resolve_precision(args.precision, device)  # type: ignore[arg-type]
    texts = articles(args.articles, args.max_length, args.lengths)
    with tempfile.TemporaryDirectory(prefix="bench-m3-") as tmp:
        folder = make_bge_m3(Path(tmp) / "m3", texts, args.shape)
        ours = build_encoder(SimpleNamespace(kind="bge-m3", name_or_path=str(folder), batch_size=args.batch_size,
                                             device=device, precision=precision, max_length=args.max_length))
        flag: Any = BGEM3FlagModel(str(folder), use_fp16=precision == "fp16", devices=device)
        if precision == "bf16":
            flag.model.to(torch.bfloat16)
        n_tokens = [len(x) for x in flag.tokenizer(texts, truncation=True, max_length=args.max_length)["input_ids"]]
        print(f"BGE-M3-shaped model ({args.shape}), {device} {precision}, batches of {args.batch_size}, "
              f"{len(texts)} articles of {min(n_tokens)}-{max(n_tokens)} tokens (mean {np.mean(n_tokens):.0f}), "
              f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads", flush=True)

        def flag_encode() -> np.ndarray:
            with quiet():
                return flag.encode(texts, batch_size=args.batch_size, max_length=args.max_length)["dense_vecs"]


        def per_batch() -> np.ndarray:
            order = sorted(range(len(texts)), key=lambda i: hash(texts[i]))  # cache-key order: unsorted
            out = np.empty((len(texts), ours.dim), dtype=np.float32)
            for s in range(0, len(order), args.batch_size):
                idx = order[s:s + args.batch_size]
                with quiet():
                    out[idx] = flag.encode([texts[i] for i in idx], batch_size=len(idx),
                                           max_length=args.max_length)["dense_vecs"]
            return out

        # one untimed run of each: the first pass over new batch shapes is several times slower (allocator,
        # kernel selection) and would count against whichever path went first
        ours.encode(texts)
        flag_encode()
        runs: dict[str, float] = {}
        for _ in range(args.rounds):
            want = best_of(runs, "FlagEmbedding encode", flag_encode)
            got = best_of(runs, "babelrag encode", lambda: ours.encode(texts))
            if args.per_batch:
                best_of(runs, "per-batch (before)", per_batch)
        want = want.astype(np.float32)
        want /= np.linalg.norm(want, axis=1, keepdims=True)
        tolerance = 1e-4 if precision == "fp32" else 2e-2
        diff = float(np.abs(got - want).max())
        base = len(texts) / runs["FlagEmbedding encode"]
        print(f"\n{'path':24s} {'articles/s':>10s}  ratio")
        for name, secs in runs.items():
            print(f"{name:24s} {len(texts) / secs:10.2f}  {len(texts) / secs / base:5.2f}x")
        print(f"vectors equal within {tolerance:g}: {'yes' if diff <= tolerance else 'NO'} (max |diff| {diff:.2e})")
        if diff > tolerance:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
