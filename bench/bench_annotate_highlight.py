"""What cross-lingual fact highlighting adds to building Q&A verification records.

Records: one per non-English article of the sample corpus (zh, ar, de, es), two facts each (the
article's English-language partner title as the question, so the fact is English as the chain's are).
Baseline, measured in this run: the same records highlighted by word matching (``method: lexical``).
Then the encoder highlighter (model loaded once, its load time printed apart) with an empty vector
cache (a first push) and again with the cache the first pass filled (a re-push). Prints seconds, articles/s, sentences/s and the ratios to the baseline.

Usage: python bench/bench_annotate_highlight.py [--articles N] (default: all 130)
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from babelrag.annotate import projects
from babelrag.annotate.settings import AnnotateSettings, HighlightSettings
from babelrag.annotate.sources import EncoderHighlighter, LexicalHighlighter, make_highlighter
from babelrag.construct.encoders import CachedEncoder, VectorCache
from babelrag.sentences import split_sentences
from babelrag.records import Article

SAMPLE = Path(__file__).resolve().parents[1] / "babelrag" / "data" / "sample" / "articles.jsonl"


def load(limit: int) -> tuple[dict[str, Article], list[dict]]:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    english = {r["id"].split("-", 1)[1]: r["title"] for r in rows if r["language"] == "en"}  # e01-0 -> title
    articles = {r["id"]: Article(id=r["id"], title=r["title"], text=r["maintext"], language=r["language"],
                                 published=str(r.get("date_publish") or "")[:10])
                for r in rows if r["language"] != "en"}
    chosen = list(articles)[:limit]
    items = []
    for i, aid in enumerate(chosen):
        title = english.get(aid.split("-", 1)[1], articles[aid].title)
        other = chosen[(i + 1) % len(chosen)]
        items.append({"id": f"q{i}", "pair_id": f"p{i}", "article_ids": [aid, other], "q_type": "comparison",
                      "question": f"What happened: {title}?", "answer": title,
                      "selected": [{"article_id": aid, "question": f"What is reported about {title}?", "answer": title},
                                   {"article_id": other, "question": "Who announced it?", "answer": title.split()[0]}]})
    return {a: articles[a] for a in chosen}, items


def timed(items: list[dict], articles: dict[str, Article], highlighter) -> float:
    start = time.perf_counter()
    projects.build_records("qa_verification", items, AnnotateSettings(), articles=articles, highlighter=highlighter)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--articles", type=int, default=10_000)
    args = ap.parse_args()
    articles, items = load(args.articles)
    sentences = sum(len(split_sentences(a.text)) for a in articles.values())
    print(f"{len(items)} records, {len(articles)} non-English articles, {sentences} sentences")

    settings = HighlightSettings()
    base = timed(items, articles, LexicalHighlighter())
    t = time.perf_counter()
    inner = make_highlighter(settings).encoder  # the packaged model, loaded once for both passes below
    inner.encode(["warm-up"], "query")
    load_s = time.perf_counter() - t
    cache = VectorCache(Path(tempfile.mkdtemp(prefix="bench-highlight-")) / "vectors.sqlite")

    def encoder_highlighter() -> EncoderHighlighter:
        return EncoderHighlighter(lambda: CachedEncoder(inner, cache), settings.min_similarity)

    cold = timed(items, articles, encoder_highlighter())
    warm = timed(items, articles, encoder_highlighter())
    print(f"  lexical (baseline)     {base:7.2f} s")
    print(f"  encoder model load     {load_s:7.2f} s (once per push that has a non-English article)")
    print(f"  encoder, empty cache   {cold:7.2f} s = {cold / base:6.1f}x baseline; "
          f"{len(articles) / cold:.1f} articles/s, {sentences / cold:.0f} sentences/s")
    print(f"  encoder, cached        {warm:7.2f} s = {warm / base:6.1f}x baseline (a re-push: nothing encoded)")

if __name__ == "__main__":
    main()
