"""The source articles as a Q&A-verification annotator sees them.

Why: the question and answer were written from summaries, so judging them from the summaries alone
repeats the model's view. Each record shows both articles, with the sentences that carry the simple
Q&A facts the question chain used (``QAItem.selected``) highlighted. The match is lexical (the fact's
answer tokens count double, then its question's): numbers and names match across languages, so it
also finds the sentence in an article that is not in English; a fact with no matching sentence is
still listed above the article. Long articles are cut to the passages around the highlighted
sentences.
"""
from __future__ import annotations

import html
from typing import Mapping, Optional, Sequence

from babelrag.evaluators.sentences import split_sentences
from babelrag.tokens import content_words, tokenize
from babelrag.records import Article, SimpleQA
from babelrag.excerpt import excerpt

MAX_ARTICLE_CHARS = 6000
CONTEXT_SENTENCES = 2  # sentences kept on each side of a highlighted one when an article is cut
GAP = "\n\n[…]\n\n"
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


def _escape(text: str) -> str:
    """Article text as literal markdown text: no HTML tags of its own (ours is the only markup)."""
    return html.escape(text, quote=False)


def _highlighted(text: str, sentences: list[str], marked: set[int], limit: int) -> tuple[str, bool]:
    """(markdown, cut?) of the article: highlighted sentences wrapped in <mark>; passages if too long."""
    if len(text) <= limit:
        out = _escape(text)
        for i in sorted(marked):
            s = _escape(sentences[i])
            out = out.replace(s, f"<mark>{s}</mark>", 1)
        return out, False
    if not marked:
        return _escape(excerpt(text, limit)), True
    keep: list[int] = sorted({j for i in marked for j in range(i - CONTEXT_SENTENCES, i + CONTEXT_SENTENCES + 1)
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
                     limit: int = MAX_ARTICLE_CHARS) -> str:
    """One article as a markdown field: title line, the facts used from it, then its (highlighted) text."""
    lines = []
    fact_lines = [f"- {_escape(f.question)} → **{_escape(f.answer)}**" for f in facts]
    if article is None:
        lines.append(f"**Source article `{article_id}` was not found** in the articles given to the push: "
                     "judge from the summaries and facts, and report it.")
        if fact_lines:
            lines += ["", "Facts the question uses from it:", *fact_lines]
        return "\n".join(lines)
    link = f" · [source]({article.url})" if article.url else ""
    lines.append(f"### {_escape(article.title)}")
    lines.append(f"{article.language} · {article.published} · `{article.id}`{link}")
    if fact_lines:
        lines += ["", "Facts the question uses from this article (highlighted below where found):", *fact_lines]
    sentences = split_sentences(article.text)
    marked = {i for i in (supporting_sentence(sentences, f) for f in facts) if i is not None}
    body, cut = _highlighted(article.text, sentences, marked, limit)
    lines += ["", "---", ""]
    if cut:
        lines.append(f"*Passages of a {len(article.text):,}-character article.*\n")
    lines.append(body)
    return "\n".join(lines)


def source_fields(article_ids: Sequence[str], selected: Sequence[SimpleQA],
                  articles: Optional[Mapping[str, Article]]) -> dict[str, str]:
    """``article_a``/``article_b`` fields of a Q&A verification record (empty when no articles were given)."""
    if articles is None:
        return {}
    fields = {}
    for name, article_id in zip(("article_a", "article_b"), article_ids):
        facts = [s for s in selected if s.article_id == article_id]
        fields[name] = article_markdown(articles.get(article_id), article_id, facts)
    return fields
