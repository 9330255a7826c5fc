"""Read a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) plus RAGE's optional distractor
mappings (irrelevant.json, seemingly_relevant.json, related.json) — the format ``release export`` writes.

Strict: every corpus/query line needs a string ``_id`` (unique) and ``text``; qrels need the
``query-id corpus-id score`` header, three tab-separated columns, an integer score and ids that exist.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from babelrag.errors import InputError
from babelrag.records import Document
from babelrag.release.loaders import Problems, iso_date, read_jsonl
from babelrag.text_input import read_text

_OPTIONAL_STRINGS = ("title", "language", "published", "article_id")  # read into Documents when present
MAPPING_FILES = {"irrelevant": "irrelevant.json", "seemingly_relevant": "seemingly_relevant.json",
                 "related": "related.json"}
# instance fields carried in a BEIR query's "metadata" (BEIR readers ignore extra keys): what ``release export``
# writes and ``release convert --format beir`` rebuilds an instance from
QUERY_METADATA = ("qa_id", "setting", "answer", "en_question", "en_answer", "q_type", "verified", "machine_translated",
                  "dates", "a_type", "crossdoc_type")
DOC_ORDER = "doc_order"  # query metadata: the instance's documents (corpus ids) in their order


@dataclass
class BeirSet:
    corpus: dict[str, dict[str, Any]]
    queries: dict[str, dict[str, Any]]
    qrels: dict[str, dict[str, int]]  # query id -> corpus id -> score
    mappings: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # kind -> query -> corpus ids

    def documents_for(self, query_id: str, order: Optional[list[str]] = None) -> list[Document]:
        """The query's judged documents as our Documents: relevant = supporting, mapped kinds = distractors;
        in ``order`` (corpus ids, as babelrag's export records it in the query metadata) when given."""
        docs: list[tuple[str, Document]] = []
        for cid, score in sorted(self.qrels.get(query_id, {}).items()):
            if score > 0:
                docs.append((cid, self._doc(cid, "supporting", "relevant")))
        for kind, mapping in sorted(self.mappings.items()):
            docs += [(cid, self._doc(cid, "distractor", kind)) for cid in mapping.get(query_id, [])]
        if order:
            rank = {cid: k for k, cid in enumerate(order)}
            docs.sort(key=lambda pair: rank.get(pair[0], len(rank)))
        return [d for _, d in docs]

    def _doc(self, cid: str, role: str, kind: str) -> Document:
        """A corpus record as a Document; babelrag's own exports also carry the article id (a machine-translated
        copy has its own corpus id) and ``machine_translated``."""
        c = self.corpus[cid]
        return Document(article_id=str(c.get("article_id") or cid), title=c.get("title", ""), text=c["text"],
                        language=c.get("language", "und"), published=iso_date(c.get("published", "")), role=role,
                        kind=kind, machine_translated=bool(c.get("machine_translated", False)))  # type: ignore[arg-type]


def _records(path: Path, what: str) -> dict[str, dict[str, Any]]:
    problems = Problems(str(path))
    out: dict[str, dict[str, Any]] = {}
    for line, obj in read_jsonl(path, problems):
        rid = obj.get("_id")
        if not isinstance(rid, str) or not rid:
            problems.add(f"{line}", f"{what} record needs a string _id, got {rid!r}")
        elif not isinstance(obj.get("text"), str) or not obj["text"].strip():
            problems.add(f"{line}", f"{what} {rid!r}: text must be a non-empty string")
        elif wrong := [k for k in _OPTIONAL_STRINGS if obj.get(k) is not None and not isinstance(obj[k], str)]:
            problems.add(f"{line}", f"{what} {rid!r}: {wrong[0]} must be a string, got {type(obj[wrong[0]]).__name__}")
        elif rid in out:
            problems.add(f"{line}", f"{what} {rid!r}: duplicate _id")
        else:
            out[rid] = obj
    problems.raise_if_any()
    return out


def load_beir(folder: str | Path, split: str = "test") -> BeirSet:
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: not a BEIR folder (expected corpus.jsonl, queries.jsonl, qrels/{split}.tsv)")
    corpus = _records(folder / "corpus.jsonl", "corpus")
    queries = _records(folder / "queries.jsonl", "query")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.exists():
        have = sorted(p.stem for p in (folder / "qrels").glob("*.tsv")) if (folder / "qrels").is_dir() else []
        raise InputError(f"{qrels_path}: file not found (splits here: {', '.join(have) or 'none'})")
    problems = Problems(str(qrels_path))
    qrels: dict[str, dict[str, int]] = {}
    lines = read_text(qrels_path).splitlines()
    if not lines or lines[0].split("\t") != ["query-id", "corpus-id", "score"]:
        problems.add("1", "header must be 'query-id<TAB>corpus-id<TAB>score'")
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) != 3:
            problems.add(f"{n}", f"expected 3 tab-separated columns, got {len(cols)}")
            continue
        qid, cid, score = cols
        try:
            value = int(score)
        except ValueError:
            problems.add(f"{n}", f"score {score!r} is not an integer")
            continue
        if qid not in queries:
            problems.add(f"{n}", f"query-id {qid!r} not in queries.jsonl")
        elif cid not in corpus:
            problems.add(f"{n}", f"corpus-id {cid!r} not in corpus.jsonl")
        else:
            qrels.setdefault(qid, {})[cid] = value
    problems.raise_if_any()
    mappings = {}
    for kind, name in MAPPING_FILES.items():
        path = folder / name
        if not path.exists():
            continue
        problems = Problems(str(path))
        try:
            data = json.loads(read_text(path))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: expected an object {{query id: [corpus ids]}}")
        for qid, cids in data.items():
            if qid not in queries:
                problems.add(qid, "query id not in queries.jsonl")
            elif not isinstance(cids, list) or any(c not in corpus for c in cids):
                problems.add(qid, f"corpus ids must be a list of ids in corpus.jsonl, got {cids!r:.80}")
        problems.raise_if_any()
        mappings[kind] = data
    return BeirSet(corpus=corpus, queries=queries, qrels=qrels, mappings=mappings)
