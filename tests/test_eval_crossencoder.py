"""MIRAGE support features from local cross-encoders: reranker score and NLI support.

The models are tiny randomly initialised XLM-R classifiers with a word-level tokenizer, built and saved
here the same way the construct tests build their tiny BGE-M3 (``_tiny_bge_m3`` in
test_construct_encoders), plus a classification head. Nothing is downloaded.
"""
import json
import math

import numpy as np
import pytest

from babelrag.errors import ConfigError
from babelrag.evaluators.citations import strip_citations
from babelrag.evaluators.crossencoder import CrossEncoderSpec, NLIJudge, Reranker, nli_support, reranker_scores
from babelrag.evaluators.execution import run_evaluation
from babelrag.evaluators.settings import EvalSettings
from tests.test_eval_runner import _instances, _runner

NLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}


def _texts():
    out = []
    for inst in _instances():
        out += [inst.question, inst.answer] + [f"{d.title}: {d.text}" for d in inst.documents]
    out += ["I am not sure, it may have been somewhere in Europe [1].", "Where was the deal made?",
            "The deal was made in Brussels.", "Nobody knows."]
    return out


def _tiny_classifier(folder, num_labels=1, id2label=None, seed=0):
    """A 1-layer XLM-R sequence classifier (wide init so scores differ visibly) + word-level tokenizer."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaForSequenceClassification

    folder.mkdir(parents=True, exist_ok=True)
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    words = sorted({w for t in _texts() for w, _ in pre_tokenizers.Whitespace().pre_tokenize_str(t)})
    vocab = {w: i for i, w in enumerate(specials + words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", cls_token="<s>", sep_token="</s>", mask_token="<mask>")
    fast.save_pretrained(folder)
    torch.manual_seed(seed)
    labels = {"id2label": id2label, "label2id": {v: k for k, v in id2label.items()}} if id2label else {}
    cfg = XLMRobertaConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=130, pad_token_id=1,
                           initializer_range=0.5, num_labels=num_labels, **labels)
    XLMRobertaForSequenceClassification(cfg).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def reranker_dir(tmp_path_factory):
    return _tiny_classifier(tmp_path_factory.mktemp("models") / "tiny-reranker")


@pytest.fixture(scope="module")
def nli_dir(tmp_path_factory):
    return _tiny_classifier(tmp_path_factory.mktemp("models") / "tiny-nli", num_labels=3, id2label=NLI_LABELS, seed=1)


def _direct_logits(folder, pairs):
    """The same model through plain transformers (no sentence-transformers / FlagEmbedding)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    out = []
    with torch.no_grad():
        for q, t in pairs:  # one at a time: no padding involved
            out.append(model(**tok(q, t, return_tensors="pt", truncation=True, max_length=512)).logits[0].numpy())
    return np.array(out)


PAIRS = [("Where was the deal made?", "The deal was made in Brussels."),
         ("Where was the deal made?", "Nobody knows."),
         ("Wo wurde die Einigung erzielt? (0)", "Die Einigung wurde in Brüssel erzielt.")]


def test_reranker_scores_are_the_models_sigmoid_logits_and_deterministic(reranker_dir):
    rr = Reranker(str(reranker_dir))
    scores = rr.score(PAIRS)
    expected = 1.0 / (1.0 + np.exp(-_direct_logits(reranker_dir, PAIRS)[:, 0]))
    assert scores == pytest.approx(expected.tolist(), abs=1e-5)
    assert len({round(s, 4) for s in scores}) == 3  # the inputs matter
    assert rr.score(PAIRS) == scores and Reranker(str(reranker_dir)).score(PAIRS) == scores  # deterministic
    assert rr.score(list(reversed(PAIRS))) == pytest.approx(list(reversed(scores)), abs=1e-6)  # batch order
    # FlagEmbedding's FlagReranker on the same folder gives the same numbers
    flag = Reranker(CrossEncoderSpec(str(reranker_dir), backend="flagembedding"))
    assert flag.score(PAIRS) == pytest.approx(scores, abs=1e-5)


def test_reranker_scores_feature_handles_empty_answers(reranker_dir):
    rr = Reranker(reranker_dir)
    got = reranker_scores(rr, ["Where was the deal made?"] * 2, ["The deal was made in Brussels.", "  "])
    assert got[0] == pytest.approx(rr.score([PAIRS[0]])[0]) and math.isnan(got[1])


def test_missing_or_wrong_model_folders_are_clear_config_errors(tmp_path, reranker_dir, nli_dir):
    with pytest.raises(ConfigError, match=r"reranker: .*nothing-here.* is not a local model folder"):
        Reranker(tmp_path / "nothing-here")
    with pytest.raises(ConfigError, match="not a local model folder"):  # a Hub name is not fetched
        Reranker("BAAI/bge-reranker-v2-m3")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="has no config.json"):
        NLIJudge(tmp_path / "empty")
    with pytest.raises(ConfigError, match="3-label classifier"):
        Reranker(nli_dir)
    with pytest.raises(ConfigError, match="backend 'onnx' is not one of"):
        Reranker(CrossEncoderSpec(str(reranker_dir), backend="onnx"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="exactly one 'entailment' label"):
        NLIJudge(reranker_dir)  # one output called LABEL_0


def test_nli_support_share_matches_argmax_of_the_model(nli_dir):
    nli = NLIJudge(nli_dir)
    assert nli.entailment == 0
    records = [
        {"response": "The deal was made in Brussels. Nobody knows.",
         "passages": {"1": "Evidence 0: Some news text.", "2": "Other 2: Some news text."}},
        {"response": "Die Einigung wurde in Brüssel erzielt.", "passages": {"1": "Evidence 1: Some news text."}},
        {"response": "", "passages": {"1": "Evidence 1: Some news text."}},
    ]
    got = nli_support(nli, records)
    # expected from plain transformers: a sentence is supported if some passage's arg-max label is entailment
    expected = []
    for rec, sents in zip(records, [["The deal was made in Brussels.", "Nobody knows."],
                                    ["Die Einigung wurde in Brüssel erzielt."], []]):
        if not sents:
            expected.append(float("nan"))
            continue
        ok = [any(_direct_logits(nli_dir, [(p, s)])[0].argmax() == 0 for p in rec["passages"].values()) for s in sents]
        expected.append(sum(ok) / len(ok))
    assert got[:2] == pytest.approx(expected[:2]) and math.isnan(got[2])
    assert nli_support(nli, records) == pytest.approx(got, nan_ok=True)  # deterministic
    # the tiny model is random, so check the share logic itself with a stub judge too
    stub = type("Stub", (), {"entails": staticmethod(lambda pairs: [p == "A" for p, _ in pairs])})()
    assert nli_support(stub, [{"response": "One. Two. Three.", "passages": {"1": "B", "2": "A"}},
                              {"response": "One.", "passages": {"1": "B"}}]) == [1.0, 0.0]


def test_runner_adds_reranker_and_nli_features(eval_server, tmp_path, reranker_dir, nli_dir):
    runner = _runner(eval_server, tmp_path)
    paths = run_evaluation(runner, _instances(), ["weak", "good", "terse"], ["judge-1"], tmp_path / "eval",
                           EvalSettings(rounds=50, seed=3, metrics=("xrag", "mirage"), reranker=str(reranker_dir),
                                        nli=CrossEncoderSpec(str(nli_dir))))
    data = json.loads(paths["json"].read_text())
    rr = Reranker(reranker_dir)
    questions = {i.id: i.question for i in _instances()}
    answers = {(a["model"], a["instance_id"]): a["answer"]
               for a in map(json.loads, paths["answers"].read_text().splitlines())}
    for model in ("weak", "good", "terse"):
        heur = data["metrics"][model]["mirage"]
        items = heur["items"]
        assert len(items) == 6 and all("reranker_score" in it and "support_nli" in it for it in items)
        want = rr.score([(questions[it["query_id"]], strip_citations(answers[(model, it["query_id"])]))
                         for it in items])
        assert [it["reranker_score"] for it in items] == pytest.approx(want, abs=1e-6)
        assert heur["aggregate"]["reranker_score"]["value"] == pytest.approx(float(np.mean(want)), abs=1e-6)
        assert all(0.0 <= it["support_nli"] <= 1.0 for it in items)
        assert "support" in items[0]  # the LLM-judged support stays next to the NLI one
    # the reranker separates models whose answers differ (weak vs good) and is a surrogate feature
    assert data["metrics"]["weak"]["mirage"]["aggregate"]["reranker_score"]["value"] != \
        data["metrics"]["good"]["mirage"]["aggregate"]["reranker_score"]["value"]
    assert {"reranker_score", "support_nli"} <= set(data["surrogate"]["feature_importance"])
    assert data["run"]["settings"]["support_models"] == {"reranker": "sentence-transformers:tiny-reranker",
                                                         "nli": "nli:tiny-nli"}
    # the same run again gives the same feature values (model and LLM cache are deterministic)
    again = json.loads(run_evaluation(runner, _instances(), ["weak", "good", "terse"], ["judge-1"],
                                      tmp_path / "eval2", EvalSettings(rounds=50, seed=3, metrics=("xrag", "mirage"),
                                                                       reranker=rr, nli=NLIJudge(nli_dir)))["json"].read_text())
    for model in ("weak", "good", "terse"):
        first = data["metrics"][model]["mirage"]["items"]
        second = again["metrics"][model]["mirage"]["items"]
        assert [(x["reranker_score"], x["support_nli"]) for x in first] == \
            [(x["reranker_score"], x["support_nli"]) for x in second]


def test_runner_refuses_support_models_without_mirage_and_bad_folders_before_any_call(eval_server, tmp_path,
                                                                                       reranker_dir):
    runner = _runner(eval_server, tmp_path)
    with pytest.raises(ConfigError, match="reranker given but 'mirage' is not in the metrics"):
        run_evaluation(runner, _instances(), ["good"], ["judge-1"], tmp_path / "e1",
                       EvalSettings(metrics=("xrag",), reranker=str(reranker_dir)))
    with pytest.raises(ConfigError, match="is not a local model folder"):
        run_evaluation(runner, _instances(), ["good"], ["judge-1"], tmp_path / "e2",
                       EvalSettings(metrics=("xrag", "mirage"), reranker=str(tmp_path / "missing-model")))
    assert eval_server.count("chat") == 0 and not (tmp_path / "e1").exists() and not (tmp_path / "e2").exists()


def test_cli_reranker_option_missing_folder_is_one_line(tmp_path):
    import os
    import subprocess
    import sys

    import yaml

    cfg = {"project": {"build_dir": str(tmp_path / "build")},
           "llm": {"endpoints": {"m": {"base_url": "http://127.0.0.1:9/v1", "model": "x"}}, "progress": False},
           "evaluate": {"models": ["m"], "judges": ["m"], "metrics": ["xrag", "mirage"]}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    (tmp_path / "inst.jsonl").write_text("".join(i.model_dump_json() + "\n" for i in _instances()))
    proc = subprocess.run([sys.executable, "-m", "babelrag.cli", "evaluate", "run", str(tmp_path / "inst.jsonl"),
                           "-c", str(tmp_path / "cfg.yaml"), "--reranker", str(tmp_path / "no-model")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ})
    lines = [x for x in proc.stderr.strip().splitlines() if x.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: reranker:") and "no-model" in lines[0] and "Traceback" not in proc.stderr


def test_cross_encoders_batch_by_length_back_off_on_oom_and_take_a_device(reranker_dir, nli_dir):
    """Issue 26: length-sorted batches give the one-at-a-time scores in input order; batch_size auto
    halves on torch's OOM error; the device is resolved against what torch reports."""
    import torch

    from babelrag.devices import TorchView

    pairs = PAIRS * 3 + [("Where?", "Brussels."), (PAIRS[0][0] + " " + PAIRS[2][0], PAIRS[0][1] + " " + PAIRS[2][1])]
    one = Reranker(CrossEncoderSpec(str(reranker_dir), batch_size=1)).score(pairs)
    rr = Reranker(CrossEncoderSpec(str(reranker_dir), batch_size="auto", device="cpu"))
    assert (rr.device, rr.precision, rr.batch.size) == ("cpu", "fp32", 32)
    model = rr._model.model
    real_forward = model.forward

    def forward(*args, **kwargs):  # the real model, out of memory above 2 pairs per batch
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None and ids.shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_forward(*args, **kwargs)

    model.forward = forward
    assert rr.score(pairs) == pytest.approx(one, abs=1e-5)
    # 32 (all 14 pairs) -> 8 -> 4 -> 2: three OOMs; 16 is never tried, it would be the 14 pairs that failed
    assert rr.batch.size == 2 and rr.batch.backoffs == 3
    nli = NLIJudge(CrossEncoderSpec(str(nli_dir), batch_size=2))
    assert nli.entails(pairs) == NLIJudge(CrossEncoderSpec(str(nli_dir), batch_size=1)).entails(pairs)
    spec = CrossEncoderSpec(str(reranker_dir))
    assert spec.placement("reranker", TorchView(2, False, "2.13")) == ("cuda:0", "fp16")
    assert spec.placement("reranker", TorchView(0, False, "2.13")) == ("cpu", "fp32")
    with pytest.raises(ConfigError, match="reranker device: cuda:1, but torch sees 1 CUDA device"):
        CrossEncoderSpec(str(reranker_dir), device="cuda:1").placement("reranker", TorchView(1, False, "2.13"))
    with pytest.raises(ConfigError, match="--cross-encoder-batch-size '0'"):
        CrossEncoderSpec.placement_options("cpu", "auto", "0")
    assert CrossEncoderSpec.placement_options("cpu", "bf16", "auto") == {"device": "cpu", "precision": "bf16",
                                                                         "batch_size": "auto"}


@pytest.mark.parametrize("flag,value,message", [
    ("--cross-encoder-precision", "fp8", "--cross-encoder-precision 'fp8': use auto, fp16, bf16 or fp32"),
    ("--cross-encoder-device", "cuda:1", "--cross-encoder-device: cuda:1, but torch .* sees no CUDA device"),
    ("--cross-encoder-batch-size", "many", "--cross-encoder-batch-size 'many': a positive number or auto"),
])
def test_evaluate_run_refuses_a_bad_cross_encoder_placement_before_any_work(tmp_path, reranker_dir, flag, value,
                                                                            message):
    import re

    from typer.testing import CliRunner

    from babelrag.cli import app

    (tmp_path / "babelrag.yaml").write_text("project: {name: t}\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["evaluate", "run", str(tmp_path / "no-release"), "-c", str(tmp_path / "babelrag.yaml"),
                                   "--reranker", str(reranker_dir), flag, value])
    # a ConfigError: `babelrag` prints it as one line and exits 2 (tests/test_core_cli.py)
    assert isinstance(res.exception, ConfigError) and ConfigError.exit_code == 2, res.output
    assert re.search(message, str(res.exception))
