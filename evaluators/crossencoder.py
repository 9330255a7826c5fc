"""Cross-encoder support features for MIRAGE: a reranker score and NLI-based support.

Both load a local model folder (``config.json`` + tokenizer + weights) — nothing is downloaded at run
time, a missing or unreadable folder is a one-line ConfigError — and import their libraries only when
loaded:

- **reranker** (MIRAGE's "reranker score"): relevance of the answer (citations stripped) to the
  question, ``sigmoid(logit)`` of a one-label cross-encoder such as bge-reranker-v2-m3, through
  sentence-transformers ``CrossEncoder`` (default) or FlagEmbedding ``FlagReranker``;
- **nli** (MIRAGE's NLI support): share of answer sentences that some shown document entails — the
  sentence counts as supported when ``entailment`` is the arg-max label of the cross-encoder on
  (document, sentence). The entailment label is found by name in the model's ``id2label``.

Eval mode; ``device`` ``auto`` (a GPU when torch sees one, else CPU), ``precision`` ``auto`` (fp16 on a
GPU, fp32 on CPU: on CPU the same folder and inputs give the same scores). Pairs are scored in batches of
neighbours in length (``babelrag/batching.py``), longest first, scores back in input order;
``batch_size: auto`` halves on out-of-memory instead of failing.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional, Union

from babelrag.batching import BatchSize, encode_sorted
from babelrag.devices import Precision, TorchView, resolve_devices, resolve_precision, torch_dtype
from babelrag.errors import ConfigError
from babelrag.sentences import split_sentences

RerankerBackend = Literal["sentence-transformers", "flagembedding"]
BACKENDS = ("sentence-transformers", "flagembedding")


@dataclass(frozen=True)
class CrossEncoderSpec:
    """Where and how to load a cross-encoder: ``path`` must be a local model folder."""

    path: str
    backend: RerankerBackend = "sentence-transformers"
    max_length: int = 512
    batch_size: Union[int, Literal["auto"]] = 16
    device: str = "auto"  # auto | cpu | cuda | cuda:N | mps (one device: a cross-encoder scores few pairs)
    precision: Precision = "auto"

    @staticmethod
    def placement_options(device: str, precision: str, batch_size: str) -> dict[str, Any]:
        """CLI strings -> spec fields, checked (a wrong value is a one-line ConfigError)."""
        if precision not in ("auto", "fp16", "bf16", "fp32"):
            raise ConfigError(f"--cross-encoder-precision {precision!r}: use auto, fp16, bf16 or fp32")
        if batch_size != "auto" and not (batch_size.isdigit() and int(batch_size) > 0):
            raise ConfigError(f"--cross-encoder-batch-size {batch_size!r}: a positive number or auto")
        resolve_devices(device, setting="--cross-encoder-device")  # fails now, before any answer is generated
        return {"device": device, "precision": precision,
                "batch_size": batch_size if batch_size == "auto" else int(batch_size)}

    def placement(self, role: str, view: Optional[TorchView] = None) -> tuple[str, str]:
        """``(device, precision)`` resolved against what torch sees."""
        device = resolve_devices(self.device, view, setting=f"{role} device")[0]  # auto: the first GPU
        return device, resolve_precision(self.precision, device)


def _check_folder(path: str | Path, role: str) -> Path:
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"{role}: {str(path)!r} is not a local model folder (nothing is downloaded at run time); "
                          "download the model once (e.g. `hf download <id> --local-dir DIR`) and pass DIR")
    if not (folder / "config.json").is_file():
        raise ConfigError(f"{role}: {folder} has no config.json; pass the folder that holds the model's "
                          "config.json, tokenizer and weights")
    return folder


def _as_spec(spec: "CrossEncoderSpec | str | Path", backend: Optional[str] = None) -> CrossEncoderSpec:
    if isinstance(spec, CrossEncoderSpec):
        return spec
    return CrossEncoderSpec(path=str(spec), backend=backend or "sentence-transformers")  # type: ignore[arg-type]


def _load_cross_encoder(folder: Path, spec: CrossEncoderSpec, role: str, device: str, precision: str) -> Any:
    try:
        from sentence_transformers import CrossEncoder
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise ConfigError(f"{role}: sentence-transformers is not installed ({exc}); pip install "
                          "sentence-transformers") from None
    import torch

    try:
        model = CrossEncoder(str(folder), device=device, local_files_only=True, max_length=spec.max_length,
                             activation_fn=torch.nn.Identity())
        if precision != "fp32":
            model.model.to(torch_dtype(precision))
    except Exception as exc:  # noqa: BLE001 - one line naming the folder
        raise ConfigError(f"{role}: cannot load a cross-encoder from {folder}: {type(exc).__name__}: "
                          f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}") from None
    model.eval()
    return model


def _predict(model: Any, pairs: Sequence[tuple[str, str]], batch: BatchSize) -> Any:
    """Logits of ``pairs`` (rows in input order), length-sorted batches, OOM back-off for ``auto``."""
    import numpy as np

    return encode_sorted(list(pairs), [len(a) + len(b) for a, b in pairs],
                         lambda b: np.asarray(model.predict(b, batch_size=len(b), show_progress_bar=False,
                                                            convert_to_numpy=True),
                                              dtype=np.float32).reshape(len(b), -1), batch)


class Reranker:
    """``score(pairs)`` -> sigmoid of the cross-encoder's single logit per (query, text) pair."""

    def __init__(self, spec: "CrossEncoderSpec | str | Path", backend: Optional[str] = None) -> None:
        self.spec = _as_spec(spec, backend)
        if self.spec.backend not in BACKENDS:
            raise ConfigError(f"reranker backend {self.spec.backend!r} is not one of {list(BACKENDS)}")
        folder = _check_folder(self.spec.path, "reranker")
        self.name = f"{self.spec.backend}:{folder.name}"
        self.device, self.precision = self.spec.placement("reranker")
        self.batch = BatchSize.from_setting(self.spec.batch_size, self.device, "reranker batch_size")
        if self.spec.backend == "flagembedding":
            try:
                from FlagEmbedding import FlagReranker
            except ImportError as exc:  # pragma: no cover - a core dependency
                raise ConfigError(f"reranker: FlagEmbedding is not installed ({exc}); pip install FlagEmbedding") \
                    from None
            try:
                # FlagReranker sorts by length and backs off on OOM inside compute_score itself
                self._model: Any = FlagReranker(str(folder), use_fp16=self.precision == "fp16", devices=self.device,
                                                batch_size=self.batch.size, max_length=self.spec.max_length)
                if self.precision == "bf16":
                    self._model.model.to(torch_dtype("bf16"))
            except Exception as exc:  # noqa: BLE001
                raise ConfigError(f"reranker: cannot load FlagReranker from {folder}: {type(exc).__name__}: "
                                  f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}") from None
        else:
            self._model = _load_cross_encoder(folder, self.spec, "reranker", self.device, self.precision)
            labels = int(getattr(self._model.model.config, "num_labels", 1))
            if labels != 1:
                raise ConfigError(f"reranker: {folder} is a {labels}-label classifier; a reranker has one output "
                                  "(use it as nli instead if it is an NLI model)")

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        if self.spec.backend == "flagembedding":
            raw = self._model.compute_score([list(p) for p in pairs], normalize=True, batch_size=self.batch.size)
            vals = raw if isinstance(raw, list) else [raw]
            return [float(v) for v in vals]
        logits = _predict(self._model, pairs, self.batch)
        return [1.0 / (1.0 + math.exp(-float(v))) for v in logits.reshape(-1)]


class NLIJudge:
    """``entails(pairs)`` -> whether ``entailment`` is the arg-max label for each (premise, hypothesis)."""

    def __init__(self, spec: "CrossEncoderSpec | str | Path") -> None:
        self.spec = _as_spec(spec)
        folder = _check_folder(self.spec.path, "nli")
        self.name = f"nli:{folder.name}"
        self.device, self.precision = self.spec.placement("nli")
        self.batch = BatchSize.from_setting(self.spec.batch_size, self.device, "nli batch_size")
        self._model = _load_cross_encoder(folder, self.spec, "nli", self.device, self.precision)
        id2label = {int(k): str(v) for k, v in getattr(self._model.model.config, "id2label", {}).items()}
        hits = [k for k, v in id2label.items() if v.lower().startswith("entail")]
        if len(hits) != 1:
            raise ConfigError(f"nli: {folder} must have exactly one 'entailment' label in config.json id2label, "
                              f"has {sorted(id2label.values())}")
        self.entailment = hits[0]

    def entails(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        if not pairs:
            return []
        logits = _predict(self._model, pairs, self.batch)
        return [int(row.argmax()) == self.entailment for row in logits]


def reranker_scores(reranker: Any, questions: Sequence[str], answers: Sequence[str]) -> list[float]:
    """MIRAGE reranker feature: score of each (question, answer); an empty answer scores NaN."""
    out = [math.nan] * len(answers)
    idx = [k for k, a in enumerate(answers) if a.strip()]
    for k, s in zip(idx, reranker.score([(questions[k], answers[k]) for k in idx])):
        out[k] = float(s)
    return out


def nli_support(nli: Any, records: Sequence[Mapping[str, Any]]) -> list[float]:
    """Share of each response's sentences entailed by at least one of its ``passages`` ({id: text}).

    NaN for a response with no sentences (as the LLM-judged support feature)."""
    pairs: list[tuple[str, str]] = []
    index: list[tuple[int, int]] = []  # (record, sentence) per pair
    sizes = []
    for r, rec in enumerate(records):
        sents = split_sentences(rec["response"])
        sizes.append(len(sents))
        for s, sent in enumerate(sents):
            for text in rec["passages"].values():
                pairs.append((text, sent))
                index.append((r, s))
    verdicts = nli.entails(pairs)
    supported: set[tuple[int, int]] = {where for where, ok in zip(index, verdicts) if ok}
    out = []
    for r, n in enumerate(sizes):
        out.append(math.nan if n == 0 else sum((r, s) in supported for s in range(n)) / n)
    return out
