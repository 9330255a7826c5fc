"""The source articles as a Q&A-verification annotator sees them.

Why: the question and answer were written from summaries, so judging them from the summaries alone
repeats the model's view. Each record shows both articles, with the sentences that carry the simple
Q&A facts the question chain used (``QAItem.selected``) highlighted. The facts are English. In an
English article the match is lexical (the fact's answer tokens count double, then its question's).
In an article in another language shared words are mostly names and numbers, which point at the wrong
sentence as often as the right one, so the default ``encoder`` highlighter matches by the cosine of a
packaged multilingual encoder (``annotate.highlight``). A fact with no matching sentence is still
listed below the article. An article with a highlighted sentence and longer than ``PASSAGES_OVER``
characters is shown as the passages around its highlighted sentences, starting with the title line and
the first passage, so that at 1366x768 the question, the answer and the first highlighted sentence fit on
screen together (checked in headless Chromium); the facts used come after the text.
"""
from __future__ import annotations

import html
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np

from babelrag.construct.encoders import CachedEncoder, VectorCache, build_encoder
from babelrag.errors import ConfigError
from babelrag.excerpt import excerpt
from babelrag.records import Article, SimpleQA
from babelrag.sentences import split_sentences
from babelrag.tokens import content_words, tokenize

MAX_ARTICLE_CHARS = 6000  # an article with nothing highlighted is shown whole up to this length
PASSAGES_OVER = 1000  # an article with a highlighted sentence is cut to passages above this length
CONTEXT_SENTENCES = 2  # sentences kept on each side of a highlighted one when an article is cut (1 before the first)
GAP = "\n\n[…]\n\n"
FACT_LANGUAGE = "en"  # the chain writes its simple Q&A facts from English summaries
# Added to the cosine for the share of the answer's words (numbers, names) found verbatim in a sentence:
# a short sentence such as "Zum Gipfel 1 kamen 51 Delegierte." is otherwise outscored by a longer one
# that shares the question's topic but not its answer.
ANSWER_BONUS = 0.25


def supporting_sentence(sentences: Sequence[str], fact: SimpleQA) -> Optional[int]:
    """Index of the sentence that best carries ``fact`` (None if no sentence shares its answer's words,
    or at least two of its question's)."""
    answer, question = content_words(fact.answer), content_words(fact.question)
    best, best_score = None, 0
    for i, sentence in enumerate(sentences):
        words = set(tokenize(sentence))
        a_hits, q_hits = len(answer & words), len(question & words)
        if a_hits == 0 and q_hits < 2:
            continue
        score = 2 * a_hits + q_hits
        if score > best_score:
            best, best_score = i, score
    return best


class LexicalHighlighter:
    """Marks, for each fact, the sentence sharing most of its words (see ``supporting_sentence``)."""

    def prepare(self, articles: Iterable[Article]) -> None:
        """Nothing to precompute for word matching."""

    def marked(self, article: Article, sentences: list[str], facts: Sequence[SimpleQA]) -> set[int]:
        return {i for i in (supporting_sentence(sentences, f) for f in facts) if i is not None}


def fact_text(fact: SimpleQA) -> str:
    return f"{fact.question} {fact.answer}"


class EncoderHighlighter(LexicalHighlighter):
    """Cross-lingual: a fact marks the sentence of a non-English article closest to it in a multilingual
    encoder's space, if the score reaches ``min_similarity``. In an English article word matching comes
    first; only a fact it cannot place (paraphrased) goes to the encoder.

    ``make_encoder`` is called once, when the first sentence must be encoded, so a push of English
    articles whose facts all match by words never loads the model. ``prepare`` encodes the sentences of
    all non-English articles in one pass (with progress)."""

    def __init__(self, make_encoder: Callable[[], Any], min_similarity: float,
                 progress: Optional[Callable[[Iterable[Any], int], Iterable[Any]]] = None) -> None:
        self._make_encoder = make_encoder
        self._encoder: Any = None
        self.min_similarity = min_similarity
        self.progress = progress
        self._vectors: dict[str, Any] = {}

    @staticmethod
    def crosses_languages(article: Article) -> bool:
        return bool(article.language) and article.language.split("-")[0].lower() != FACT_LANGUAGE

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            self._encoder = self._make_encoder()
        return self._encoder

    def prepare(self, articles: Iterable[Article]) -> None:
        todo = {a.id: split_sentences(a.text) for a in articles
                if self.crosses_languages(a) and a.id not in self._vectors}
        texts = [s for sentences in todo.values() for s in sentences]
        if not texts:
            return
        vectors = self.encoder.encode(texts, "passage", self.progress)
        start = 0
        for article_id, sentences in todo.items():
            self._vectors[article_id] = vectors[start:start + len(sentences)]
            start += len(sentences)

    def marked(self, article: Article, sentences: list[str], facts: Sequence[SimpleQA]) -> set[int]:
        if self.crosses_languages(article):
            return self._closest(article, sentences, facts)
        found = [supporting_sentence(sentences, f) for f in facts]
        unmatched = [f for f, i in zip(facts, found) if i is None]  # paraphrased: no shared answer word
        return {i for i in found if i is not None} | self._closest(article, sentences, unmatched)

    def _closest(self, article: Article, sentences: list[str], facts: Sequence[SimpleQA]) -> set[int]:
        if not facts or not sentences:
            return set()
        if article.id not in self._vectors:
            self._vectors[article.id] = self.encoder.encode(sentences, "passage")
        scores = self.encoder.encode([fact_text(f) for f in facts], "query") @ self._vectors[article.id].T
        words = [set(tokenize(s)) for s in sentences]
        for row, fact in zip(scores, facts):
            answer = content_words(fact.answer)
            if answer:
                row += ANSWER_BONUS * np.array([len(answer & w) / len(answer) for w in words], dtype=row.dtype)
        best = scores.argmax(axis=1)
        return {int(i) for row, i in zip(scores, best) if row[i] >= self.min_similarity}


def make_highlighter(settings: Any, cache: Optional[Path] = None,
                     progress: Optional[Callable[[Iterable[Any], int], Iterable[Any]]] = None) -> LexicalHighlighter:
    """The highlighter ``annotate.highlight`` asks for; ``cache`` (a SQLite file) keeps sentence vectors
    across pushes, so a re-push of the same articles encodes nothing."""
    if settings.method == "lexical":
        return LexicalHighlighter()

    def make_encoder() -> Any:
        try:
            inner = build_encoder(SimpleNamespace(kind=settings.encoder, name_or_path=None,
                                                  batch_size=settings.batch_size))
        except ImportError as exc:
            raise ConfigError(f"annotate.highlight: the {settings.encoder} encoder cannot load ({exc}); "
                              "reinstall babelrag, or set annotate.highlight.method: lexical") from None
        return CachedEncoder(inner, VectorCache(cache)) if cache is not None else inner

    return EncoderHighlighter(make_encoder, settings.min_similarity, progress)


def _escape(text: str) -> str:
    """Article text as literal markdown text: no HTML tags of its own (ours is the only markup)."""
    return html.escape(text, quote=False)


def _highlighted(text: str, sentences: list[str], marked: set[int], limit: int,
                 passages_over: int = PASSAGES_OVER) -> tuple[str, bool]:
    """(markdown, cut?) of the article: highlighted sentences wrapped in <mark>; passages around them
    if longer than ``passages_over`` (an excerpt if nothing is marked and it is longer than ``limit``)."""
    if len(text) <= (limit if not marked else min(limit, passages_over)):
        out = _escape(text)
        for i in sorted(marked):
            s = _escape(sentences[i])
            out = out.replace(s, f"<mark>{s}</mark>", 1)
        return out, False
    if not marked:
        return _escape(excerpt(text, limit)), True
    first = min(marked)  # one sentence before the first highlight: it must be on screen with the question
    keep: list[int] = sorted({j for i in marked
                              for j in range(i - (1 if i == first else CONTEXT_SENTENCES), i + CONTEXT_SENTENCES + 1)
                              if 0 <= j < len(sentences)})
    parts, run = [], []
    for j in keep:
        if run and j != run[-1] + 1:
            parts.append(run)
            run = []
        run.append(j)
    parts.append(run)
    rendered = [" ".join(f"<mark>{_escape(sentences[j])}</mark>" if j in marked else _escape(sentences[j]) for j in part)
                for part in parts]
    body = GAP.join(rendered)
    return (("[…] " if keep[0] > 0 else "") + body + (" […]" if keep[-1] < len(sentences) - 1 else "")), True


def article_markdown(article: Optional[Article], article_id: str, facts: list[SimpleQA],
                     limit: int = MAX_ARTICLE_CHARS, highlighter: Optional[LexicalHighlighter] = None,
                     passages_over: int = PASSAGES_OVER) -> str:
    """One article as a markdown field: one title line, its (highlighted) text, then the facts used from it."""
    lines = []
    fact_lines = [f"- {_escape(f.question)} → **{_escape(f.answer)}**" for f in facts]
    if article is None:
        lines.append(f"**Source article `{article_id}` was not found** in the articles given to the push: "
                     "judge from the summaries and facts, and report it.")
        if fact_lines:
            lines += ["", "Facts the question uses from it:", *fact_lines]
        return "\n".join(lines)
    link = f" · [source]({article.url})" if article.url else ""
    sentences = split_sentences(article.text)
    marked = (highlighter or LexicalHighlighter()).marked(article, sentences, facts)
    body, cut = _highlighted(article.text, sentences, marked, limit, passages_over)
    note = f" · *passages of a {len(article.text):,}-character article*" if cut else ""
    lines.append(f"**{_escape(article.title)}** · {article.language} · {article.date_label} · `{article.id}`{link}{note}")
    lines += ["", body]
    if fact_lines:
        lines += ["", "---", "", "Facts the question uses from this article (highlighted above where found):", *fact_lines]
    return "\n".join(lines)


def source_fields(article_ids: Sequence[str], selected: Sequence[SimpleQA],
                  articles: Optional[Mapping[str, Article]],
                  highlighter: Optional[LexicalHighlighter] = None) -> dict[str, str]:
    """``article_a``/``article_b`` fields of a Q&A verification record (empty when no articles were given)."""
    if articles is None:
        return {}
    fields = {}
    for name, article_id in zip(("article_a", "article_b"), article_ids):
        facts = [s for s in selected if s.article_id == article_id]
        fields[name] = article_markdown(articles.get(article_id), article_id, facts, highlighter=highlighter)
    return fields
