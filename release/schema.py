"""Release schema: ``datasets.Features`` for instances and documents, JSON Schema, XRAG field mapping.

The release columns are exactly ``babelrag.records.Instance``; the parquet files carry these features in
their metadata, so ``load_dataset`` restores the same types as ``save_to_disk``/``load_from_disk``.
"""
from __future__ import annotations

from typing import Any

from babelrag.arrow_features import features_for
from babelrag.records import Document, Instance

SCHEMA_VERSION = "2"  # 2: documents.published and dates are date32 columns (were ISO strings)

# XRAG's released field names, in its order (id, question, answer, en_question, en_answer, q_type,
# a_type, crossdoc_type, articles = 2 supporting + 6 distracting, dates = one per article). The released
# rows also carry urls, is_support and article_order (one entry per article; see release/loaders/xrag.py).
XRAG_FIELDS = ("id", "question", "answer", "en_question", "en_answer", "q_type", "a_type", "crossdoc_type",
               "articles", "dates")
# XRAG's a_type has two values: "original" (the model's answer) and "corrected" (by annotators). A human
# translation of an uncorrected answer is the model's answer in XRAG's terms.
XRAG_A_TYPE = {"original": "original", "human_corrected": "corrected", "human_translated": "original"}
XRAG_A_TYPE_BACK = {"original": "original", "corrected": "human_corrected"}
# XRAG spells the multi-hop type without the hyphen.
XRAG_QTYPE = {"multi-hop": "multihop"}
XRAG_QTYPE_BACK = {v: k for k, v in XRAG_QTYPE.items()}


def instance_features() -> Any:
    return features_for(Instance)


def arrow_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Instance rows (JSON values) as Arrow takes them: dates as dates (date32 columns)."""
    return [Instance.model_validate(row).model_dump() for row in rows]


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas (pydantic) of the released row types, written as ``schema/*.schema.json``."""
    out = {}
    for name, model in (("instance", Instance), ("document", Document)):
        schema = model.model_json_schema()
        schema["$id"] = f"babelrag:{name}:v{SCHEMA_VERSION}"
        out[name] = schema
    return out


def article_text(doc: Document) -> str:
    """How XRAG presents an article: title line, blank line, body."""
    return f"{doc.title}\n\n{doc.text}" if doc.title else doc.text


def to_xrag(inst: Instance) -> dict[str, Any]:
    """One instance in XRAG's field names; the articles keep the instance's order and ``is_support`` marks
    the supporting ones (in the released rows the supports are not always first)."""
    docs = list(inst.documents)
    return {
        "id": inst.id,
        "question": inst.question,
        "answer": inst.answer,
        "en_question": inst.en_question,
        "en_answer": inst.en_answer,
        "q_type": XRAG_QTYPE.get(inst.q_type, inst.q_type),
        "a_type": XRAG_A_TYPE.get(inst.a_type, inst.a_type),
        "crossdoc_type": inst.crossdoc_type,
        "articles": [article_text(d) for d in docs],
        "dates": [d.published for d in docs],
        "is_support": [d.role == "supporting" for d in docs],
    }
