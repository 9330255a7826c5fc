"""Read XRAG's released JSONL (Hub ``AmazonScience/XRAG``: ``xrag.dev.jsonl``, ``xrag.test.jsonl``).

Published fields (dataset card): ``id``, ``question``, ``answer``, ``en_question``, ``en_answer``,
``q_type`` (multihop/aggregation/comparison/set), ``a_type`` (original/corrected), ``crossdoc_type``
(0/1/2), ``articles`` (two supporting + six distracting), ``dates`` (one per article); the released
records also carry ``urls`` (one per article), ``is_support`` (one flag per article: which two articles
support the answer — they are NOT always the first two) and ``article_order``. Everything is kept, in the
file's types (``crossdoc_type`` as the string ``"2"`` stays a string on export), so ``to_published()``
writes the record back field for field.

Checked invariants: the parallel lists (articles, dates, urls, is_support, article_order) have one entry
per article; ``is_support`` marks exactly ``n_supporting`` (2) articles; dates are ISO; value sets of
q_type, a_type, crossdoc_type. A file without ``is_support`` takes the first two articles as the supports
(the card's order) and ``support_source`` says so. XRAG rows do not say their language: it is taken from
``language=`` or detected with lingua among XRAG's languages.
"""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, Callable, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from babelrag.langcheck import code_of, lingua_detector
from babelrag.records import Document, Instance
from babelrag.release.loaders import Problems, iso_date, read_jsonl
from babelrag.release.schema import XRAG_A_TYPE_BACK, XRAG_FIELDS, XRAG_QTYPE_BACK

XRAG_LANGUAGES = ("en", "de", "es", "zh", "ar")
Q_TYPES = ("multihop", "multi-hop", "aggregation", "comparison", "set")
A_TYPES = ("original", "corrected")
CROSSDOC = (0, 1, 2)
PARALLEL = ("dates", "urls", "is_support", "article_order")  # one entry per article
N_SUPPORTING = 2


class XragRecord(BaseModel):
    """One XRAG row, every field kept in the type the file used."""

    model_config = ConfigDict(extra="forbid")
    id: str
    question: str
    answer: str
    en_question: str
    en_answer: str
    q_type: str
    a_type: str
    crossdoc_type: Union[int, str, None]
    articles: list[str]
    dates: list[str]
    urls: Optional[list[str]] = None
    is_support: Optional[list[Union[bool, int]]] = None
    article_order: Any = None  # undocumented on the card; a list must have one entry per article
    extra: dict[str, Any] = Field(default_factory=dict)  # keys the card does not list, kept verbatim
    field_order: list[str] = Field(default_factory=list)

    @property
    def supports(self) -> list[int]:
        """0-based indices of the supporting articles."""
        if self.is_support is None:
            return list(range(min(N_SUPPORTING, len(self.articles))))
        return [k for k, flag in enumerate(self.is_support) if flag]

    @property
    def support_source(self) -> str:
        return "is_support" if self.is_support is not None else "position (no is_support field)"

    @property
    def crossdoc(self) -> Optional[int]:
        return None if self.crossdoc_type is None else int(self.crossdoc_type)

    def to_instance(self, language: str, setting: str = "mono",
                    detect: Optional[Callable[[str], str]] = None) -> Instance:
        """As an Instance; ``detect`` gives each article's language (default: ``language``)."""
        supports = set(self.supports)
        docs = []
        for k, (text, date) in enumerate(zip(self.articles, self.dates)):
            title, body = split_article(text)
            support = k in supports
            docs.append(Document(article_id=f"{self.id}#{k}", title=title, text=body,
                                 language=detect(body[:1000]) if detect else language, published=iso_date(date),
                                 role="supporting" if support else "distractor",
                                 kind="relevant" if support else "related"))
        return Instance(
            id=self.id, qa_id=self.id, setting=setting, language=language, question=self.question,
            answer=self.answer, en_question=self.en_question, en_answer=self.en_answer,
            q_type=XRAG_QTYPE_BACK.get(self.q_type, self.q_type),  # type: ignore[arg-type]
            documents=docs, verified=True, a_type=XRAG_A_TYPE_BACK.get(self.a_type, self.a_type),
            crossdoc_type=self.crossdoc,
            dates=[d.published for d in docs if d.role == "supporting"])

    def to_published(self) -> dict[str, Any]:
        """The row in XRAG's own shape, keys in the file's order."""
        return {k: self.extra[k] if k in self.extra else getattr(self, k) for k in self.field_order}


def split_article(text: str) -> tuple[str, str]:
    title, sep, body = text.partition("\n\n")
    return (title.strip(), body) if sep and len(title) <= 300 else ("", text)


def _is_flag(value: Any) -> bool:
    return isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))


def check_row(obj: dict[str, Any], n_supporting: int = N_SUPPORTING) -> list[str]:
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
    if ct is not None and (isinstance(ct, bool) or str(ct).strip() not in ("0", "1", "2")
                           or not isinstance(ct, (int, str))):
        out.append(f"crossdoc_type must be 0, 1 or 2 (number or string), got {ct!r}")
    arts = obj["articles"]
    if not isinstance(arts, list) or not arts or not all(isinstance(a, str) and a.strip() for a in arts):
        return out + ["articles must be a non-empty list of non-empty strings"]
    for name in PARALLEL:
        value = obj.get(name)
        if (value is None and name != "dates") or (name == "article_order" and not isinstance(value, list)):
            continue  # optional; article_order's shape is not documented, a non-list is kept as it is
        if not isinstance(value, list):
            out.append(f"{name} must be a list (one entry per article), got {type(value).__name__}")
        elif len(value) != len(arts):
            out.append(f"{len(arts)} articles but {len(value)} {name} (one per article)")
    dates, flags, urls = obj["dates"], obj.get("is_support"), obj.get("urls")
    if isinstance(dates, list) and len(dates) == len(arts):
        for k, d in enumerate(dates):
            if not isinstance(d, str) or not _iso_ok(d):
                out.append(f"dates[{k}] {d!r} is not an ISO date (YYYY-MM-DD...)")
                break
    if isinstance(urls, list) and not all(isinstance(u, str) for u in urls):
        out.append("urls must be strings")
    if isinstance(flags, list) and len(flags) == len(arts):
        if not all(_is_flag(f) for f in flags):
            out.append("is_support must hold true/false (or 1/0) per article")
        elif sum(bool(f) for f in flags) != n_supporting:
            out.append(f"is_support marks {sum(bool(f) for f in flags)} supporting article(s); XRAG has exactly "
                       f"{n_supporting}")
    order = obj.get("article_order")
    if isinstance(order, list) and not all(isinstance(x, (int, str)) and not isinstance(x, bool) for x in order):
        out.append("article_order must hold numbers or strings")
    return out


def _iso_ok(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text[:10])
    except ValueError:
        return False
    return True


def parse_row(obj: dict[str, Any]) -> XragRecord:
    known = {k: v for k, v in obj.items() if k in XragRecord.model_fields and k not in ("extra", "field_order")}
    return XragRecord(**known, extra={k: v for k, v in obj.items() if k not in known}, field_order=list(obj))


def load_xrag_records(path: str | Path, n_supporting: int = N_SUPPORTING) -> list[XragRecord]:
    """All rows of an XRAG JSONL file, typed; any invalid row -> one InputError naming line, id and field."""
    problems = Problems(str(path))
    out: list[XragRecord] = []
    seen: set[str] = set()
    for line, obj in read_jsonl(path, problems):
        issues = check_row(obj, n_supporting)
        if not issues and obj["id"] in seen:
            issues = ["duplicate id (ids must be unique)"]
        if issues:
            problems.add(f"{line}", f"record {obj.get('id', '?')!r}: " + "; ".join(issues))
            continue
        seen.add(obj["id"])
        out.append(parse_row(obj))
    problems.raise_if_any()
    return out


def language_detector(languages: tuple[str, ...] = XRAG_LANGUAGES) -> Callable[[str], str]:
    """text -> ISO 639-1 code among ``languages`` ("und" when lingua cannot tell)."""
    detector = lingua_detector(languages)
    return lambda text: code_of(lang) if (lang := detector.detect_language_of(text)) is not None else "und"


def load_xrag(path: str | Path, language: Optional[str] = None, setting: str = "mono",
              n_supporting: int = N_SUPPORTING) -> list[Instance]:
    """All rows of an XRAG JSONL file as Instances (supports from ``is_support``)."""
    records = load_xrag_records(path, n_supporting)
    if not records:
        return []
    detect = language_detector()
    return [r.to_instance(language or r.extra.get("language") or detect(r.question), setting, detect)
            for r in records]
