"""The record types annotation projects read, and loading of input files.

Every type is defined once in ``babelrag.records`` (the contract between packages): contrastive pairs
are what ``babelrag construct contrastive`` writes, model answers what ``evaluate run`` writes to
answers.jsonl. ``ModelAnswer`` is the older name of ``AnswerRecord``.
"""
from __future__ import annotations

from babelrag.records import AnswerRecord, ContrastivePair  # noqa: F401 - the types this package reads
from babelrag.rows import parse, read_rows  # noqa: F401 - re-exported: the CLI reads input files through here

ModelAnswer = AnswerRecord
