"""Citation parsing (one parser for every benchmark) and RAGE citation metrics.

Documents are numbered 1..n_docs in the order shown to the model. Recognised forms (whitespace free):
``[1]``, ``[1][2]``, ``[1, 2]``, ``[1; 2]``, ``[1-3]`` / ``[1–3]``, ``[#3]``, ``[doc#2]``, ``[Doc 2]``,
``[doc2]``, GaRAGe's ``[cite_3]`` (passage ``cite_3`` = position 3) and MIRAGE-Bench's document ids
``[4213#7]`` (MIRACL ``docid#passage``; resolved to a position through ``doc_ids``). Markers may stand
before or after the full stop (``... 2022 [1].`` and ``... 2022.[cite_1]``). A bracket whose content is
not a citation (``[sic]``) is ignored; one that contains a digit but does not parse (``[1a]``) is counted
as ``malformed``. Ids outside 1..n_docs, and document ids not among ``doc_ids``, are kept as wrong
citations and counted as ``out_of_range`` — never dropped silently.

Conventions (per query; ``C`` = distinct cited ids incl. out-of-range, ``R`` = relevant ids):
- precision = |C∩R|/|C|, recall = |C∩R|/|R|, F1 their harmonic mean (0 when both are 0);
- ``R`` empty: recall and F1 are undefined (``None``): there is nothing to find, so no recall;
  precision is 0 when something is cited (every citation is wrong) and undefined when nothing is;
- ``C`` empty and ``R`` non-empty: P = 0 (no credited citation), recall = 0, F1 = 0.
Undefined values are left out of the mean and its confidence interval and counted as
``<metric>_undefined`` in the result's counts.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

from babelrag.errors import InputError
from babelrag.evaluators.metric import Column, Metric, MetricRun
from babelrag.evaluators.registry import register
from babelrag.evaluators.results import ScoreResult, make_result
from babelrag.sentences import split_sentences
from babelrag.tokens import tokenize

MAX_RANGE = 50  # a range wider than this is a typo or a year span, not a citation
_BRACKET = re.compile(r"\[([^\[\]\n]{1,80})\]")
_ID = r"(?:(?:doc(?:ument)?|source|ref|passage|cite)[\s_]*)?#?\s*(\d{1,6})"
_TOKEN = re.compile(rf"^{_ID}(?:\s*[-\u2013\u2014]\s*{_ID})?$", re.IGNORECASE)
_DOC_ID = re.compile(r"^\d[\w.:-]*#\d+$")  # MIRACL/MIRAGE passage ids: 4213#7
_SEP = re.compile(r"\s*[,;]\s*")

SCORE_KEYS = ("precision", "recall", "f1", "n_citations", "distinct_citations", "out_of_range", "answer_length")

Mention = Union[int, str]  # a 1-based position, or a document id that names no shown document


@dataclass(frozen=True)
class CitationParse:
    """What an answer cites, in order of appearance."""

    mentions: tuple[Mention, ...]  # every cited id, repeats kept, out-of-range included
    out_of_range: int  # mentions outside 1..n_docs or naming an unknown document id
    malformed: int  # bracket groups with digits that did not parse

    @property
    def ordered(self) -> tuple[Mention, ...]:
        """Distinct ids in order of first appearance (what MAP@k ranks)."""
        return tuple(dict.fromkeys(self.mentions))

    def in_range(self, n_docs: int) -> tuple[int, ...]:
        """Distinct valid positions in order of first appearance."""
        return tuple(m for m in self.ordered if isinstance(m, int) and 1 <= m <= n_docs)


def _parse_group(content: str) -> list[Mention] | None:
    ids: list[Mention] = []
    for token in _SEP.split(content.strip()):
        if _DOC_ID.match(token):
            ids.append(token)
            continue
        m = _TOKEN.match(token)
        if not m:
            return None
        start = int(m.group(1))
        if m.group(2) is None:
            ids.append(start)
            continue
        end = int(m.group(2))
        if end < start or end - start >= MAX_RANGE:
            return None
        ids.extend(range(start, end + 1))
    return ids


def parse_citations(answer: str, n_docs: Optional[int] = None, doc_ids: Optional[Sequence[str]] = None
                    ) -> CitationParse:
    """Find citations in ``answer``; ids are 1-based positions of the documents shown.

    ``doc_ids`` (the shown documents' ids, in order) resolves MIRAGE-style ``[docid#n]`` citations to
    positions; ``n_docs`` defaults to ``len(doc_ids)``.
    """
    if n_docs is None:
        if doc_ids is None:
            raise InputError("parse_citations needs n_docs or doc_ids")
        n_docs = len(doc_ids)
    position = {d: k for k, d in enumerate(doc_ids or (), start=1)}
    mentions: list[Mention] = []
    malformed = 0
    for m in _BRACKET.finditer(answer):
        ids = _parse_group(m.group(1))
        if ids is None:
            malformed += any(ch.isdigit() for ch in m.group(1))
            continue
        mentions.extend(position.get(i, i) if isinstance(i, str) else i for i in ids)
    out = sum(1 for i in mentions if not (isinstance(i, int) and 1 <= i <= n_docs))
    return CitationParse(tuple(mentions), out, malformed)


def strip_citations(answer: str) -> str:
    """The answer without its citation brackets (for length and overlap metrics)."""
    return _BRACKET.sub(lambda m: "" if _parse_group(m.group(1)) is not None else m.group(0), answer)


def split_cited_sentences(answer: str) -> list[tuple[str, tuple[Mention, ...]]]:
    """(sentence without citations, its citations) per sentence; a marker after the full stop
    (``...2022.[cite_1] It ...``) belongs to the sentence it follows."""

    out = []
    for sentence in split_sentences(answer):
        cited = tuple(dict.fromkeys(i for m in _BRACKET.finditer(sentence)
                                    for i in (_parse_group(m.group(1)) or ())))
        out.append((strip_citations(sentence).strip(), cited))
    return out


def prf(cited: set[Any], relevant: set[Any]) -> tuple[Optional[float], Optional[float], Optional[float]]:
    """Precision, recall, F1 with the conventions in the module docstring (None = undefined)."""
    if not relevant:
        return (0.0 if cited else None), None, None
    if not cited:
        return 0.0, 0.0, 0.0
    tp = len(cited & relevant)
    p, r = tp / len(cited), tp / len(relevant)
    f1 = 0.0 if tp == 0 else 2 * p * r / (p + r)
    return p, r, f1


@dataclass(frozen=True)
class CitationItem:
    """One answer to score: ``relevant`` holds 1-based positions of the relevant documents;
    ``doc_ids`` (optional) the shown documents' ids, for answers citing ``[docid#n]``."""

    query_id: str
    answer: str
    n_docs: int
    relevant: Sequence[int] = field(default_factory=tuple)
    doc_ids: Sequence[str] = field(default_factory=tuple)


def _coerce(items: Iterable[CitationItem | Mapping[str, Any]]) -> list[CitationItem]:
    out: list[CitationItem] = []
    for i, it in enumerate(items):
        if isinstance(it, Mapping):
            try:
                it = CitationItem(**it)
            except TypeError as exc:
                raise InputError(f"citation item {i}: {exc}; expected query_id, answer, n_docs, relevant") from exc
        bad = [r for r in it.relevant if not 1 <= r <= it.n_docs]
        if bad:
            raise InputError(
                f"citation item {it.query_id!r}: relevant ids {bad} outside 1..{it.n_docs}; ids are 1-based positions"
            )
        out.append(it)
    return out


def score_item(item: CitationItem) -> dict[str, Any]:
    parse = parse_citations(item.answer, item.n_docs, item.doc_ids or None)
    cited = set(parse.mentions)
    p, r, f1 = prf(cited, set(item.relevant))
    return {
        "query_id": item.query_id,
        "precision": p,
        "recall": r,
        "f1": f1,
        "n_citations": len(parse.mentions),
        "distinct_citations": len(cited),
        "out_of_range": parse.out_of_range,
        "malformed": parse.malformed,
        "answer_length": len(tokenize(strip_citations(item.answer))),
        "cited": list(parse.ordered),
    }


def score_citations(
    items: Iterable[CitationItem | Mapping[str, Any]], rounds: int = 1000, seed: int = 0
) -> ScoreResult:
    """Citation precision/recall/F1, distinct citations and answer length per query, with CIs."""
    rows = [score_item(it) for it in _coerce(items)]
    counts = {
        "items": len(rows),
        "out_of_range_mentions": sum(r["out_of_range"] for r in rows),
        "malformed_groups": sum(r["malformed"] for r in rows),
    }
    return make_result("rage.citations", rows, SCORE_KEYS, rounds=rounds, seed=seed, counts=counts)


def score_random_citations(
    items: Iterable[CitationItem | Mapping[str, Any]],
    k: int | None = None,
    draws: int = 200,
    rounds: int = 1000,
    seed: int = 0,
) -> ScoreResult:
    """Seeded random-citation baseline.

    For each query, cite ``k`` distinct documents drawn uniformly from 1..n_docs (``k=None``: as many
    distinct in-range documents as the model's answer cited), averaged over ``draws`` draws.
    """
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for it in _coerce(items):
        if k is None:
            kk = len(parse_citations(it.answer, it.n_docs).in_range(it.n_docs))
        else:
            kk = min(k, it.n_docs)
        if kk == 0:
            p, r, f1 = prf(set(), set(it.relevant))
        else:
            # draws x kk distinct documents (0-based), all draws at once
            picks = rng.random((draws, it.n_docs)).argsort(axis=1)[:, :kk]
            rel = np.zeros(it.n_docs, dtype=bool)
            rel[[x - 1 for x in it.relevant]] = True
            tp = rel[picks].sum(axis=1)
            if not it.relevant:
                p, r, f1 = prf({1}, set())  # citing anything when nothing is relevant
            else:
                prec, rec = tp / kk, tp / len(it.relevant)
                with np.errstate(invalid="ignore", divide="ignore"):
                    f = np.where(tp > 0, 2 * prec * rec / (prec + rec), 0.0)
                p, r, f1 = float(prec.mean()), float(rec.mean()), float(f.mean())
        rows.append({"query_id": it.query_id, "precision": p, "recall": r, "f1": f1, "k": kk})
    return make_result(
        "rage.random_citations", rows, ("precision", "recall", "f1"), rounds=rounds, seed=seed,
        counts={"items": len(rows)},
    )


def _citing(answers: Sequence[Any]) -> list[CitationItem]:
    """Citation items of the answers written in the citation prompt style (the others do not cite)."""
    return [CitationItem(a.instance_id, a.answer, len(a.doc_order), a.relevant) for a in answers
            if a.style == "citations"]


def _prf_columns(prefix: str) -> tuple[Column, ...]:
    return tuple(Column(f"{prefix}_{key}", key) for key in ("precision", "recall", "f1"))


@register
class CitationsMetric(Metric):
    """RAGE citation precision / recall / F1 of the documents an answer cites vs the supporting ones."""

    name = "citations"
    answer_keys = ("precision", "recall", "f1")  # shown per answer in the report
    description = "citation precision, recall, F1, distinct citations, answer length (RAGE)"
    columns = _prf_columns("citation")
    scorer = staticmethod(score_citations)
    scores_unanswered = True  # an unanswered instance is an empty answer: it cites nothing (recall 0)

    def score(self, run: MetricRun, model: str, answers: Sequence[Any]) -> Optional[ScoreResult]:
        items = _citing(answers)
        if not items:
            return None
        res = self.scorer(items, rounds=run.settings.rounds, seed=run.settings.seed)
        res.counts["unanswered"] = sum(not a.ok for a in answers if a.style == "citations")
        return res


@register
class RandomCitationsMetric(CitationsMetric):
    """RAGE's seeded random-citation baseline: as many distinct documents as the model cited, drawn at random."""

    name = "random_citations"
    answer_keys = ()  # shown per answer in the report
    description = "random-citation baseline for the citation metrics (RAGE)"
    columns = _prf_columns("random_citation")
    scorer = staticmethod(score_random_citations)
