"""Build tests/fixtures/ntrex_languages/articles.jsonl from a checkout of NTREX-128 (CC BY-SA 4.0).

Real news in every MIRAGE-Bench language (ar bn de en es fa fi fr hi id ja ko ru sw te th yo zh) plus Polish:
``--docs`` WMT19 newstest2019 documents, each as its English original and NTREX's professional translation into
the 18 other languages. The documents are the first ``--docs`` (in NTREX's order) whose event has a single
report and belongs to no running story in ``tests/fixtures/ntrex_samelang/events.json``, so each X article has
exactly one English counterpart: its original. Per document: ``title`` = its first line, ``maintext`` = its next
``--lead-lines`` lines (the lead), verbatim, as ``scripts/build_ntrex_samelang.py`` does.

    git clone https://github.com/MicrosoftTranslator/NTREX /tmp/NTREX   # commit 8561f6a6 was used
    python scripts/build_ntrex_languages.py /tmp/NTREX
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_ntrex_samelang import lead_row, read_document_ids, read_documents, write_built  # noqa: E402  (the sibling builder)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "ntrex_languages" / "articles.jsonl"
EVENTS = ROOT / "tests" / "fixtures" / "ntrex_samelang" / "events.json"
# our language code -> NTREX-128 file suffix: the 18 MIRAGE-Bench languages and Polish
FILES = {"en": "src.eng", "ar": "ref.arb", "bn": "ref.ben", "de": "ref.deu", "es": "ref.spa", "fa": "ref.fas",
         "fi": "ref.fin", "fr": "ref.fra", "hi": "ref.hin", "id": "ref.ind", "ja": "ref.jpn", "ko": "ref.kor",
         "ru": "ref.rus", "sw": "ref.swa", "te": "ref.tel", "th": "ref.tha", "yo": "ref.yor", "zh": "ref.zho-CN",
         "pl": "ref.pol"}


def single_report_documents(events: Path) -> set[str]:
    labels = json.loads(events.read_text(encoding="utf-8"))
    return {e["docs"][0] for e in labels["events"] if len(e["docs"]) == 1 and not e.get("topic")}


def build(ntrex: Path, n_docs: int, lead_lines: int) -> list[dict]:
    doc_ids = read_document_ids(ntrex)
    singles = single_report_documents(EVENTS)
    chosen = [d for d in dict.fromkeys(doc_ids) if d in singles][:n_docs]
    rows = []
    for lang, suffix in FILES.items():
        docs = read_documents(ntrex, suffix, doc_ids)
        for doc in chosen:
            rows.append(lead_row(lang, doc, docs[doc], lead_lines))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ntrex", type=Path, help="root of an NTREX-128 checkout")
    ap.add_argument("--docs", type=int, default=12)
    ap.add_argument("--lead-lines", type=int, default=4)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    return write_built(lambda: build(args.ntrex, args.docs, args.lead_lines), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
