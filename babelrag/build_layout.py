"""The names in a build directory besides the stage folders (``<build_dir>/<stage>/``).

Kept apart from ``babelrag.store`` (which reads parquet) so that checking a stage's name when stages are
declared imports nothing heavy. Every module finds these folders through ``BuildStore``.
"""
from __future__ import annotations

PARTIAL_DIR = ".partial"  # shards of unfinished runs
STAGING_DIR = ".staging"  # stage folders being assembled
SHARED_DIR = "_shared"  # caches shared by stages (content digests, vector store)
LLM_CACHE_DIR = "cache"  # cache/llm: the LLM response cache
ANNOTATE_DIR = "annotate"  # pulled annotation responses, decisions, agreement
RUN_REPORT_FILE = "run_report.json"
LLM_SPEND_FILE = "llm_spend.json"  # what LLM calls of the build cost over all runs (babelrag.llm.budget)
LOCK_FILE = ".lock"  # held by the one process writing the build (babelrag.build_lock)

RESERVED_NAMES = frozenset({PARTIAL_DIR, STAGING_DIR, SHARED_DIR, LLM_CACHE_DIR, ANNOTATE_DIR, RUN_REPORT_FILE,
                            LLM_SPEND_FILE, LOCK_FILE})
