"""Build tests/fixtures/ntrex_translations/articles.jsonl from a checkout of NTREX-128 (CC BY-SA 4.0).

The calibration set of the translation tier of cross-language pairing (``dense.anchor_pairs``,
construct/pair_anchors.py): NTREX documents DISJOINT from the twelve of ``tests/fixtures/ntrex_languages`` (that
set tests the rule; nothing is chosen on it), in the same 19 languages (the 18 MIRAGE-Bench languages and Polish):
- ``paired``: the next ``--docs`` single-report documents (NTREX's order, after the ``--skip`` that
  ``scripts/build_ntrex_languages.py`` takes), each as its English original and its 18 translations: every X
  article has one right English partner (recall);
- ``orphan`` / ``english-only``: ``--traps`` pairs of documents on one running story but different events (hand
  labels of ``tests/fixtures/ntrex_samelang/events.json``: two Kavanaugh stories, two Brexit stories, ...): the
  first document only in the 18 X languages, the second only in English. An orphan has no right partner; its
  likeliest wrong one is that English article on the same story (same names, same topic): any pair it gets is
  wrong (precision).
Per document: ``title`` = its first line, ``maintext`` = its next ``--lead-lines`` lines, verbatim, as the two
other NTREX builders do; ``role`` says which of the three it is.

    git clone https://github.com/MicrosoftTranslator/NTREX /tmp/NTREX   # commit 8561f6a6 was used
    python scripts/build_ntrex_translations.py /tmp/NTREX
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_ntrex_languages import EVENTS, FILES, single_report_documents  # noqa: E402  (the sibling builders)
from build_ntrex_samelang import lead_row, read_document_ids, read_documents, write_built  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "ntrex_translations" / "articles.jsonl"
# left out: lingua files this Yoruba orphan as English (its lead is mostly English names and quotes), and as an
# "English" article it became every Yoruba article's best match, so no Yoruba translation could pair at all
LEFT_OUT = ("yo-telegraph.405413",)


def story_traps(events: Path) -> list[tuple[str, str]]:
    """(orphan document, English-only document) pairs: consecutive events of one running story (``topic``),
    first document of each; a story of n events gives n // 2 traps, each document used once."""
    labels = json.loads(events.read_text(encoding="utf-8"))
    by_topic: dict[str, list[str]] = {}
    for e in labels["events"]:
        if e.get("topic"):
            by_topic.setdefault(e["topic"], []).append(e["docs"][0])
    return [(docs[i], docs[i + 1]) for _, docs in sorted(by_topic.items()) for i in range(0, len(docs) - 1, 2)]


def build(ntrex: Path, skip: int, n_docs: int, n_traps: int, lead_lines: int) -> list[dict]:
    doc_ids = read_document_ids(ntrex)
    singles = single_report_documents(EVENTS)
    paired = [d for d in dict.fromkeys(doc_ids) if d in singles][skip:skip + n_docs]
    traps = story_traps(EVENTS)[:n_traps]
    roles = {**{d: "paired" for d in paired}, **{o: "orphan" for o, _ in traps}, **{e: "english-only" for _, e in traps}}
    rows = []
    for lang, suffix in FILES.items():
        docs = read_documents(ntrex, suffix, doc_ids)
        for doc, role in roles.items():
            if (role == "orphan" and lang == "en") or (role == "english-only" and lang != "en") \
                    or f"{lang}-{doc}" in LEFT_OUT:
                continue
            rows.append(lead_row(lang, doc, docs[doc], lead_lines, role=role))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ntrex", type=Path, help="root of an NTREX-128 checkout")
    ap.add_argument("--skip", type=int, default=12, help="single-report documents ntrex_languages takes first")
    ap.add_argument("--docs", type=int, default=12)
    ap.add_argument("--traps", type=int, default=8)
    ap.add_argument("--lead-lines", type=int, default=4)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    return write_built(lambda: build(args.ntrex, args.skip, args.docs, args.traps, args.lead_lines), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
