"""The sentence splitter the evaluators use: ``babelrag.sentences`` (annotation uses it too, so it lives in
the core)."""
from babelrag.sentences import split_sentences

__all__ = ["split_sentences"]
