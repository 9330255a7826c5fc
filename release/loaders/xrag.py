"""Read XRAG's released JSONL (id, question, answer, en_question, en_answer, q_type, a_type,
crossdoc_type, articles, dates) into ``Instance`` records.

XRAG lists the supporting articles first (2 in its monolingual setting), then the distractors; articles
are plain strings (``title`` + blank line + body when present). XRAG rows do not say their language, so it
is taken from ``language=`` or detected with lingua among XRAG's languages.
"""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, Optional

from babelrag.records import Document, Instance
from babelrag.release.loaders import Problems, read_jsonl
from babelrag.release.schema import XRAG_FIELDS, XRAG_QTYPE_BACK

XRAG_LANGUAGES = ("en", "de", "es", "zh", "ar")
Q_TYPES = ("multihop", "multi-hop", "aggregation", "comparison", "set")
A_TYPES = ("original", "corrected")


def _detector(languages: tuple[str, ...]) -> Any:
    from babelrag.langcheck import code_of, lingua_detector

    detector = lingua_detector(languages)
    return lambda text: code_of(lang) if (lang := detector.detect_language_of(text)) is not None else "und"


def split_article(text: str) -> tuple[str, str]:
    title, sep, body = text.partition("\n\n")
    return (title.strip(), body) if sep and len(title) <= 300 else ("", text)


def check_row(obj: dict[str, Any]) -> list[str]:
    """Problems with one XRAG row (empty list: fine)."""
    out = []
    missing = [f for f in XRAG_FIELDS if f not in obj]
    if missing:
        return [f"missing field(s) {', '.join(missing)}"]
    for f in ("id", "question", "answer", "en_question", "en_answer"):
        if not isinstance(obj[f], str) or (f in ("id", "question", "answer") and not obj[f].strip()):
            out.append(f"{f} must be a non-empty string, got {obj[f]!r:.60}")
    if obj["q_type"] not in Q_TYPES:
        out.append(f"q_type {obj['q_type']!r} not one of {', '.join(Q_TYPES)}")
    if obj["a_type"] not in A_TYPES:
        out.append(f"a_type {obj['a_type']!r} not one of {', '.join(A_TYPES)}")
    ct = obj["crossdoc_type"]
    if ct is not None and (isinstance(ct, bool) or not isinstance(ct, int) or ct not in (0, 1, 2)):
        out.append(f"crossdoc_type must be 0, 1 or 2, got {ct!r}")
    arts, dates = obj["articles"], obj["dates"]
    if not isinstance(arts, list) or not arts or not all(isinstance(a, str) and a.strip() for a in arts):
        out.append("articles must be a non-empty list of non-empty strings")
    if not isinstance(dates, list) or not all(isinstance(d, str) for d in dates):
        out.append("dates must be a list of strings")
    elif isinstance(arts, list) and len(dates) != len(arts):
        out.append(f"{len(arts)} articles but {len(dates)} dates (one date per article)")
    else:
        for d in dates:
            try:
                datetime.date.fromisoformat(d[:10])
            except ValueError:
                out.append(f"date {d!r} is not ISO (YYYY-MM-DD...)")
                break
    return out


def load_xrag(path: str | Path, language: Optional[str] = None, setting: str = "mono",
              n_supporting: int = 2) -> list[Instance]:
    """All rows of an XRAG JSONL file as Instances; any invalid row -> InputError naming file:line + id."""
    problems = Problems(str(path))
    detect = None
    out = []
    for line, obj in read_jsonl(path, problems):
        issues = check_row(obj)
        if issues:
            problems.add(f"{line}", f"record {obj.get('id', '?')!r}: " + "; ".join(issues))
            continue
        if detect is None:
            detect = _detector(XRAG_LANGUAGES)
        docs = []
        for k, (text, date) in enumerate(zip(obj["articles"], obj["dates"])):
            title, body = split_article(text)
            docs.append(Document(article_id=f"{obj['id']}#{k}", title=title, text=body, language=detect(body[:1000]),
                                 published=date[:10], role="supporting" if k < n_supporting else "distractor",
                                 kind="relevant" if k < n_supporting else "related"))
        out.append(Instance(
            id=obj["id"], qa_id=obj["id"], setting=setting,
            language=language or obj.get("language") or detect(obj["question"]),
            question=obj["question"], answer=obj["answer"], en_question=obj["en_question"],
            en_answer=obj["en_answer"], q_type=XRAG_QTYPE_BACK.get(obj["q_type"], obj["q_type"]),
            documents=docs, verified=True, a_type=obj["a_type"], crossdoc_type=obj["crossdoc_type"],
            dates=[d.published for d in docs[:n_supporting]],
        ))
    problems.raise_if_any()
    return out
