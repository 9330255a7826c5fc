"""Build tests/fixtures/ntrex_samelang/articles.jsonl from a checkout of NTREX-128 (CC BY-SA 4.0).

Every one of the 123 WMT19 newstest2019 documents in each of nine languages: the English original and the
professional translations into de, fr, es, zh, ar, ru, it, pt. Inside one language no document is a
translation of another, so two documents of one language about the same event are two outlets' reports of it:
the real same-event, same-language pairs the same-language pair mining is measured on (labels, hand-made from
the English originals, in the fixture's events.json). Per document: ``title`` = its first line, ``maintext`` =
its next ``--lead-lines`` lines (the lead), verbatim.

    git clone https://github.com/MicrosoftTranslator/NTREX /tmp/NTREX   # commit 8561f6a6 was used
    python scripts/build_ntrex_samelang.py /tmp/NTREX
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "ntrex_samelang" / "articles.jsonl"
# our language code -> NTREX-128 file suffix
FILES = {"en": "src.eng", "de": "ref.deu", "fr": "ref.fra", "es": "ref.spa", "zh": "ref.zho-CN",
         "ar": "ref.arb", "ru": "ref.rus", "it": "ref.ita", "pt": "ref.por"}
DATE = "2018-09-30 00:00:00"  # the documents carry no date; all are from 28 Sep - 1 Oct 2018


class NtrexInputError(Exception):
    """The NTREX checkout is not what this script reads (exit 2, nothing written)."""


def read_document_ids(ntrex: Path) -> list[str]:
    """NTREX's document id of every line (``DOCUMENT_IDS.tsv``)."""
    ids_file = ntrex / "DOCUMENT_IDS.tsv"
    if not ids_file.is_file():
        raise NtrexInputError(f"{ids_file}: missing; pass the root of an NTREX checkout")
    doc_ids = [line.strip() for line in ids_file.read_text(encoding="utf-8").splitlines()]
    return doc_ids


def lead_row(lang: str, doc: str, lines: list[str], lead_lines: int, **extra) -> dict:
    """One fixture article: ``title`` = the document's first line, ``maintext`` = its next ``lead_lines`` lines."""
    title, *body = lines
    return {"id": f"{lang}-{doc}", "title": title, "maintext": "\n".join(body[:lead_lines]), "language": lang,
            "date_publish": DATE, "url": None, "source_domain": doc.rsplit(".", 1)[0], "ntrex_doc": doc, **extra}


def read_documents(ntrex: Path, suffix: str, doc_ids: list[str]) -> dict[str, list[str]]:
    path = ntrex / "NTREX-128" / f"newstest2019-{suffix}.txt"
    if not path.is_file():
        raise NtrexInputError(f"{path}: missing; pass the root of an NTREX checkout (it holds NTREX-128/ and DOCUMENT_IDS.tsv)")
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) != len(doc_ids):
        raise NtrexInputError(f"{path}: {len(lines)} lines, but DOCUMENT_IDS.tsv has {len(doc_ids)}; "
                         "use the commit named in this script's docstring")
    docs: dict[str, list[str]] = {}
    for doc, line in zip(doc_ids, lines):
        docs.setdefault(doc, []).append(line.strip())
    return docs


def build(ntrex: Path, lead_lines: int) -> list[dict]:
    doc_ids = read_document_ids(ntrex)
    order = list(dict.fromkeys(doc_ids))
    rows = []
    for lang, suffix in FILES.items():
        docs = read_documents(ntrex, suffix, doc_ids)
        for index, doc in enumerate(order, start=1):
            rows.append(lead_row(lang, doc, docs[doc], lead_lines, ntrex_doc_index=index))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ntrex", type=Path, help="root of an NTREX-128 checkout")
    ap.add_argument("--lead-lines", type=int, default=4)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    return write_built(lambda: build(args.ntrex, args.lead_lines), args.out)


def write_built(make_rows, out: Path) -> int:
    """Write the rows ``make_rows()`` builds to ``out`` as JSON lines, atomically; exit code 2 (nothing
    written) when the NTREX checkout is not what the builder reads."""
    try:
        rows = make_rows()
    except NtrexInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(out)
    print(f"{out}: {len(rows)} articles", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
