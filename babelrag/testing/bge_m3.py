"""A BGE-M3-shaped model folder built locally (no download): an XLM-R encoder with random weights, a
word-level tokenizer over the given texts, and BGE-M3's two extra heads, loadable by FlagEmbedding's
``BGEM3FlagModel`` and by ``dense.encoder.kind: bge-m3``. Speed is real, vectors are not meaningful.

``SHAPES["full"]`` is BGE-M3's own shape (XLM-R large: 24 layers, 1024 hidden, 8194 positions, 250,002
vocabulary); ``tiny`` is for tests and ``small`` for CPU benches.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

SHAPES: dict[str, dict[str, int]] = {
    "tiny": dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                 max_position_embeddings=130),
    "small": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                  max_position_embeddings=8194),
    "full": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                 max_position_embeddings=8194, vocab_size=250002),
}
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def make_bge_m3(folder: Path, texts: Iterable[str], shape: str = "tiny", seed: int = 0) -> Path:
    """Write the model folder (tokenizer, config, weights, ``colbert_linear.pt``, ``sparse_linear.pt``)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaModel

    folder.mkdir(parents=True, exist_ok=True)
    split = pre_tokenizers.Whitespace()
    words = sorted({w for t in texts for w, _ in split.pre_tokenize_str(t)})
    vocab = {w: i for i, w in enumerate(SPECIALS + words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = split
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", cls_token="<s>", sep_token="</s>", mask_token="<mask>")
    fast.save_pretrained(folder)
    dims = dict(SHAPES[shape])
    dims["vocab_size"] = max(dims.get("vocab_size", 0), len(vocab))
    torch.manual_seed(seed)
    cfg = XLMRobertaConfig(**dims, type_vocab_size=1, pad_token_id=1)
    XLMRobertaModel(cfg).save_pretrained(folder)
    hidden = dims["hidden_size"]
    torch.save(torch.nn.Linear(hidden, hidden).state_dict(), folder / "colbert_linear.pt")
    torch.save(torch.nn.Linear(hidden, 1).state_dict(), folder / "sparse_linear.pt")
    return folder
