"""Stage ``index``: every ingested article encoded once into the vector store; pairs and distractors read it.

The encoder (``dense.encoder``), the store (``dense.milvus``: Milvus Lite under ``<build>/_shared/milvus``
or a server) and the text embedded (``dense.passage_chars``) are this stage's fingerprint, and nothing
else re-encodes the corpus: ``open_index`` gives a later stage the store and the small per-article entries
(id, language, day). Each entry carries the index's identity (``IndexEntry.index``), so changing the
encoder or the store changes this stage's output and re-runs the stages that read it. Vectors are cached
by text (``_shared/vectors``), so a re-run after a crash or a store change encodes nothing twice.
"""
from __future__ import annotations

from typing import Any, Optional

from babelrag.config import Section
from babelrag.construct.dense import encoder_for, index_corpus
from babelrag.records import IndexEntry
from babelrag.run_only import run_only
from babelrag.stage import StageSpec


class IndexConfig(Section):
    block_size: Optional[int] = run_only(None, ge=1)  # articles per encoding task and store upsert (None: 512)


STAGE = StageSpec(
    "index", "babelrag.construct.index:run", "IndexEntry", ("ingest",),
    ("dense.encoder", "dense.milvus", "dense.passage_chars"),
    description="encode every article once into the vector store (Milvus Lite or a server)",
    files=("dense.encoder.name_or_path",),
    llm_endpoints=(("dense.encoder.endpoint", (("dense.encoder.kind", "openai"),)),),
    runtime_sections=("dense", "llm", "executor"), owns={"index": IndexConfig}, order=15)


def run(ctx: Any) -> None:
    with encoder_for(ctx) as encoder:  # closed here: a device pool's workers end with this stage
        store, docs = index_corpus(ctx, encoder, block_size=ctx.config.index.block_size)
    try:
        ctx.count_in = len(docs)
        key = ctx.fingerprint[:16]  # encoder, store, model files and corpus: a new index changes this output
        out = ctx.output(shard_size=5000)
        for doc in docs.values():
            if not out.has(doc.id):
                out.add(IndexEntry(id=doc.id, language=doc.language, day=doc.day, fresh=doc.fresh, index=key))
        if store is not None:
            ctx.extra.update(dim=store.dim, store=store.uri, collection=store.collection, rows=store.count())
    finally:
        if store is not None:
            store.close()

