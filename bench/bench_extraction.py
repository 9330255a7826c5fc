"""Extraction accuracy and speed on real pages: news-please vs trafilatura + htmldate vs babelrag's path.

Page set: tests/fixtures/realpages (public test pages of trafilatura/htmldate with their published
expected title/date/text segments; README.md there), or with ``--pages residuals``
tests/fixtures/realpages_residuals (pages of other extraction libraries that show the residual errors of
issue 27). Per extractor, in one run:
  title exact %      headline equal to the expected one (Unicode NFC, whitespace collapsed)
  date ±1 day %      publication date within a day of the expected one (pages with a known date)
  = day %            publication date equal to the expected one
  lead/last %        expected first/last main-text segment found in the extracted headline + text (some
                     annotated first segments are the headline, which babelrag keeps as the title only)
  boilerplate %      expected *absent* segments (menus, newsletter boxes) that leaked into the text
  pages/s            one process
then the best field combinations (time = sum of the extractors they use), and babelrag's extraction at
1 vs N processes (babelrag.executor) as a speed ratio.

    python bench/bench_extraction.py [--processes N] [--repeat R] [--pages realpages|residuals] [--misses]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
import time
import unicodedata
import warnings
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
PAGE_SETS = {"realpages": ROOT / "tests" / "fixtures" / "realpages",
             # issue 27's residual errors, on public pages of other extraction libraries
             "residuals": ROOT / "tests" / "fixtures" / "realpages_residuals"}
PAGES = PAGE_SETS["realpages"]


def norm(text: Any) -> str:
    return " ".join(unicodedata.normalize("NFC", str(text or "")).split())


def as_date(value: Any) -> dt.date | None:
    if not value:
        return None
    try:
        return dt.date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def load() -> list[dict[str, Any]]:
    from babelrag.construct.ingest.html import decode_html

    rows = json.loads((PAGES / "expected.json").read_text(encoding="utf-8"))
    for row in rows:
        row["html"], _ = decode_html((PAGES / "pages" / row["file"]).read_bytes())
    return rows


# --- extractors: html, url -> {title, date, text} (missing keys = the extractor does not give that field)
def x_newsplease(html: str, url: str) -> dict[str, Any]:
    from babelrag.construct.ingest.extract import newsplease_fields

    f = newsplease_fields(html, url)
    return {"title": f["title"], "date": f["date_publish"], "text": f["maintext"]}


def x_trafilatura(html: str, url: str) -> dict[str, Any]:
    import trafilatura

    doc = trafilatura.bare_extraction(html, url=url, with_metadata=True, include_comments=False,
                                      date_extraction_params={"original_date": True, "extensive_search": True,
                                                              "max_date": "2099-12-31"})
    if doc is None:
        return {"title": None, "date": None, "text": None}
    d = doc.as_dict() if hasattr(doc, "as_dict") else dict(doc)
    return {"title": d.get("title"), "date": d.get("date"), "text": d.get("text")}


def x_htmldate(html: str, url: str) -> dict[str, Any]:
    from babelrag.construct.ingest.extract import publication_date

    return {"date": publication_date(html, url)}


def x_headline(html: str, url: str) -> dict[str, Any]:
    from babelrag.construct.ingest.extract import headline

    return {"title": headline(html, url)}


def x_babelrag(html: str, url: str) -> dict[str, Any]:
    from babelrag.construct.ingest.extract import article_from_html

    art = article_from_html(html, url)
    if not hasattr(art, "title"):
        return {"title": None, "date": None, "text": None, "skip": art.reason}
    return {"title": art.title, "date": art.published, "text": art.text}


EXTRACTORS: dict[str, Callable[[str, str], dict[str, Any]]] = {
    "news-please": x_newsplease, "trafilatura": x_trafilatura, "htmldate": x_htmldate,
    "babelrag headline": x_headline, "babelrag (trafilatura text + htmldate + headline)": x_babelrag,
}


def in_fresh_process(fn: Callable, *args: Any) -> Any:
    """Run ``fn(*args)`` in a new worker process: htmldate and trafilatura cache results per HTML string
    (lru_cache), so an extractor timed after another on the same pages would look faster than it is."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
        return pool.submit(fn, *args).result()


def run_extractor(fn: Callable, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
    return in_fresh_process(_run_extractor, fn, rows)


def _run_extractor(fn: Callable, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
    # warm-up: imports and lazy loading are not per-page cost (the first date htmldate hands to dateparser
    # loads every locale: ~5 s once per process). Done on *modified copies* of two pages (one dated only in
    # its text) so that no page of the set is in a library's per-HTML cache when timing starts.
    for row in [rows[0], *[r for r in rows if r["file"] == "arteradio.com-nuls.html"]]:
        try:
            fn(row["html"].replace("</body>", "<!-- warm-up copy --></body>"), row["url"])
        except Exception:
            pass
    out, t0 = [], time.perf_counter()
    for row in rows:
        try:
            out.append(fn(row["html"], row["url"]))
        except Exception as exc:  # a crash on a page counts as a miss for every field
            out.append({"title": None, "date": None, "text": None, "error": f"{type(exc).__name__}: {exc}"})
    return out, time.perf_counter() - t0


def field_scores(rows: list[dict[str, Any]], got: list[dict[str, Any]]) -> dict[str, float | None]:
    title = date = exact = seg = leak = 0
    n_title = n_date = n_seg = n_leak = 0
    for row, g in zip(rows, got):
        if row.get("expect_skip"):
            continue
        if "title" in g:
            n_title += 1
            title += norm(g["title"]) == norm(row["title"])
        if "date" in g and row["date"]:
            n_date += 1
            d = as_date(g["date"])
            date += d is not None and abs((d - as_date(row["date"])).days) <= 1
            exact += d == as_date(row["date"])
        if "text" in g:
            text = norm(f'{g.get("title") or ""} {g["text"] or ""}')  # the headline is kept as the title
            for key in ("lead", "last"):
                if row.get(key):
                    n_seg += 1
                    seg += norm(row[key]) in text
            for bad in row.get("boilerplate", []):
                n_leak += 1
                leak += bool(norm(bad)) and norm(bad) in norm(g["text"])
    pct = lambda a, b: 100.0 * a / b if b else None  # noqa: E731
    return {"title": pct(title, n_title), "date": pct(date, n_date), "date_exact": pct(exact, n_date), "text": pct(seg, n_seg),
            "leak": pct(leak, n_leak)}


def fmt(v: float | None) -> str:
    return "   -  " if v is None else f"{v:5.1f}%"


def per_field_hits(rows, got, field):
    hits = []
    for row, g in zip(rows, got):
        if row.get("expect_skip") or field not in g:
            hits.append(None)
            continue
        if field == "title":
            hits.append(norm(g["title"]) == norm(row["title"]))
        elif field == "date":
            d = as_date(g["date"])
            hits.append(None if not row["date"] else (d is not None and abs((d - as_date(row["date"])).days) <= 1))
        else:
            text = norm(f'{g.get("title") or ""} {g["text"] or ""}')  # the headline is kept as the title
            hits.append([norm(row[k]) in text for k in ("lead", "last") if row.get(k)])
    return hits


def combinations(rows, results, timings) -> list[tuple[str, dict[str, float], float]]:
    """Every (title source, date source, text source) pick, scored from the per-extractor results."""
    sources = {f: [n for n, got in results.items() if any(f in g for g in got)] for f in ("title", "date", "text")}
    out = []
    for ts in sources["title"]:
        for ds in sources["date"]:
            for xs in sources["text"]:
                if "babelrag (" in ts + ds + xs and not ts == ds == xs:
                    continue  # the full path already combines its parts
                used = {ts, ds, xs}
                secs = sum(timings[u] for u in used)
                scores = {}
                for field, src in (("title", ts), ("date", ds)):
                    hits = [h for h in per_field_hits(rows, results[src], field) if h is not None]
                    scores[field] = 100.0 * sum(hits) / len(hits)
                seg = [x for h in per_field_hits(rows, results[xs], "text") if h is not None for x in h]
                scores["text"] = 100.0 * sum(seg) / len(seg)
                out.append((f"title={ts} | date={ds} | text={xs}", scores, len(rows) / secs))
    out.sort(key=lambda r: (-min(r[1].values()), -r[2]))
    return out


def parallel_ratio(rows: list[dict[str, Any]], processes: int, repeat: int) -> tuple[float, float, bool]:
    """babelrag's extraction of ``repeat`` copies of the page set at 1 and at ``processes`` processes
    (pages/s, wall clock), each in a fresh process after the same warm-up, and whether both outputs
    are identical."""
    bodies = [(PAGES / "pages" / r["file"]).read_bytes() for r in rows]
    # each copy differs by a comment: no library cache serves a repeat
    pages = [(b.replace(b"</body>", f"<!-- copy {i} --></body>".encode()), r["url"], r["file"])
             for i in range(repeat) for b, r in zip(bodies, rows)]
    speeds, outputs = [], []
    for n in (1, processes):
        speed, out = in_fresh_process(_timed_map, n, pages)
        speeds.append(speed)
        outputs.append(out)
    return speeds[0], speeds[1], outputs[0] == outputs[1]


def _timed_map(processes: int, raw: list[tuple[bytes, str, str]]) -> tuple[float, list[tuple]]:
    from babelrag.construct.ingest.extract import Page, extract_item
    from babelrag.construct.ingest.readers import Skip
    from babelrag.executor import LocalExecutor

    executor = LocalExecutor(processes=processes)
    # the same warm-up for both: the pool's server imports the libraries and loads dateparser's locales
    # (extract_item.preload_modules); inline, the same module is imported here
    import babelrag.construct.ingest.warmup  # noqa: F401

    list(executor.map(extract_item, [Skip("warm-up")] * (processes * executor.chunk_size)))  # starts the pool
    pages = [Page(body=b, url=u, where=w) for b, u, w in raw]
    t0 = time.perf_counter()
    got = list(executor.map(extract_item, pages))
    speed = len(pages) / (time.perf_counter() - t0)
    return speed, [(getattr(a, "id", None), getattr(a, "title", None), getattr(a, "text", None),
                    getattr(a, "published", None), getattr(a, "reason", None)) for a in got]


def main() -> None:
    from babelrag.executor import available_cores

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=available_cores())
    parser.add_argument("--repeat", type=int, default=3, help="page-set copies for the 1-vs-N speed run")
    parser.add_argument("--misses", action="store_true", help="list babelrag's wrong titles/dates/segments")
    parser.add_argument("--pages", choices=sorted(PAGE_SETS), default="realpages",
                        help="page set: realpages (72 pages, the targets) or residuals (issue 27's residual errors)")
    args = parser.parse_args()
    global PAGES
    PAGES = PAGE_SETS[args.pages]
    warnings.filterwarnings("ignore")
    logging.disable(logging.CRITICAL)

    rows = load()
    langs = sorted({r["language"] for r in rows})
    per_lang = ", ".join(f"{lang}={sum(r['language'] == lang for r in rows)}" for lang in langs)
    print(f"{len(rows)} pages ({per_lang}), "
          f"{sum(bool(r['date']) for r in rows)} with a known date")
    results, timings = {}, {}
    print(f"{'extractor':52s} {'title':>7s} {'date':>7s} {'= day':>7s} {'lead/last':>9s} {'boilerplate':>11s} "
          f"{'pages/s':>8s}")
    for name, fn in EXTRACTORS.items():
        got, secs = run_extractor(fn, rows)
        results[name], timings[name] = got, secs
        s = field_scores(rows, got)
        print(f"{name:52s} {fmt(s['title']):>7s} {fmt(s['date']):>7s} {fmt(s['date_exact']):>7s} {fmt(s['text']):>9s} "
              f"{fmt(s['leak']):>11s} "
              f"{len(rows) / secs:8.1f}")
    print("\nbest field combinations (min of title/date/text first, then speed):")
    for label, scores, speed in combinations(rows, results, timings)[:6]:
        print(f"  {label:95s} title {scores['title']:5.1f}%  date {scores['date']:5.1f}%  "
              f"text {scores['text']:5.1f}%  {speed:6.1f} pages/s")
    upstream = [dict(r, title=r.get("title_upstream", r["title"]), date=r.get("date_upstream", r["date"]))
                 for r in rows]
    s = field_scores(upstream, results[list(EXTRACTORS)[-1]])
    print(f"babelrag against the upstream annotations without our {sum('correction' in r for r in rows)} "
          f"corrections (README of the page set): title {fmt(s['title'])}, date {fmt(s['date'])}")
    skip_rows = [(r, g) for r, g in zip(rows, results[list(EXTRACTORS)[-1]]) if r.get("expect_skip")]
    for r, g in skip_rows:
        print(f"expected skip {r['file']}: babelrag -> {g.get('skip') or 'an article (wrong)'}")
    if args.misses:
        got = results[list(EXTRACTORS)[-1]]
        for r, g in zip(rows, got):
            if r.get("expect_skip"):
                continue
            if norm(g["title"]) != norm(r["title"]):
                print(f"  title  {r['file']}: {g['title']!r} != {r['title']!r}")
            d = as_date(g["date"])
            if r["date"] and (d is None or abs((d - as_date(r["date"])).days) > 1):
                print(f"  date   {r['file']}: {g['date']} != {r['date']}")
            for k in ("lead", "last"):
                if r.get(k) and norm(r[k]) not in norm(f'{g["title"] or ""} {g["text"] or ""}'):
                    print(f"  {k:6s} {r['file']}: {r[k][:60]!r}")
    one, many, same = parallel_ratio(rows, args.processes, args.repeat)
    print(f"\nbabelrag extraction of {len(rows) * args.repeat} pages (page set x{args.repeat}): "
          f"1 process {one:.1f} pages/s, "
          f"{args.processes} processes {many:.1f} pages/s, ratio {many / one:.2f}x; "
          f"identical output: {'yes' if same else 'NO'}; machine load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores (other jobs compete for the cores: the ratio is only meaningful when "
          f"the load is below the core count)")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
