"""A tiny question filter added the way docs/architecture.md says: one module with one registered class
(a plug-in lists it under ``[project.entry-points."babelrag.filters"]``; a test declares it)."""
from __future__ import annotations

from babelrag.construct.filters import QuestionFilter, Verdict, register_filter


@register_filter
class AnswerWordsFilter(QuestionFilter):
    """Rejects answers longer than ``filters.options.answer_words.max_words`` words."""

    name, order = "answer_words", 25

    def check(self, ctx, items, articles):
        most = ctx.config.filters.options.get(self.name, {}).get("max_words", 10)
        return {it.id: Verdict("pass" if len(it.answer.split()) <= most else "fail",
                               f"{len(it.answer.split())} words") for it in items}
