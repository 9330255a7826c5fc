"""Ingestion: readers (JSONL, HTML folder, WARC), filters, dedupe, title NER, per-reason skips."""
import datetime as dt
import io
import json
from pathlib import Path

import numpy as np
import pytest

from babelrag.config import config_from_dict
from babelrag.errors import InputError
from babelrag.pipeline import Pipeline
from babelrag.records import Article
from babelrag.store import BuildStore
from babelrag.construct.ingest.dedupe import MinHasher, duplicate_mask
from babelrag.construct.ingest.html import canonical_url
from babelrag.construct.ingest.readers import read_warc
from babelrag.construct.ingest.language_id import LanguageIdentifier
from babelrag.tokens import count_tokens

EN = ("The city council approved the new budget on Tuesday after a long debate about schools, roads and "
      "public transport. Officials said the plan would raise spending on buses and repair several bridges "
      "that have been closed for months. Critics argued that the council ignored the housing shortage. ")
EN2 = ("Scientists at the university published a study showing that coastal wetlands store far more carbon "
       "than previously thought. The researchers measured soil samples along the coast for three years and "
       "warned that draining the marshes would release large amounts of greenhouse gases. ")
DE = ("Der Stadtrat hat am Dienstag nach einer langen Debatte den neuen Haushalt beschlossen. Die Verwaltung "
      "erklärte, dass mehr Geld für Busse und die Reparatur mehrerer Brücken ausgegeben werde, die seit "
      "Monaten gesperrt sind. Kritiker bemängelten, dass der Wohnungsmangel nicht beachtet wurde. ")
FR = ("Le conseil municipal a adopté mardi le nouveau budget après un long débat sur les écoles, les routes "
      "et les transports publics. Les responsables ont déclaré que le plan augmenterait les dépenses. ")


def row(i, title, text, date="2026-03-02", lang="en", **kw):
    return {"id": f"a{i}", "title": title, "maintext": text, "language": lang, "date_publish": f"{date} 10:00:00",
            "url": f"https://news.example/{i}", "source_domain": "news.example", **kw}


def write_jsonl(path: Path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")


def cfg(tmp_path, inputs, **corpus):
    return config_from_dict({
        "project": {"build_dir": str(tmp_path / "build"), "languages": ["en", "de"]},
        "corpus": {"inputs": inputs, "min_tokens": 20, **corpus},
    })


def test_jsonl_filters_dedupe_and_title_entities(tmp_path):
    long = EN + EN2.replace("Scientists", "Engineers")
    near = long.replace("Tuesday", "Wednesday")  # one word changed: Jaccard ~0.93, a near-duplicate of a1
    rows = [
        row(1, "Berlin council approves budget for Siemens bridge repairs", long),
        row(2, "Wetlands store carbon, Stanford study finds", EN2, date="2026-03-05"),
        row(3, "Stadtrat in München beschließt Haushalt", DE, lang="de"),
        row(4, "Copy of the budget story", long),  # exact duplicate text of a1
        row(5, "Budget story again", near),  # near duplicate
        row(6, "Too short", "Only a few words here."),
        row(7, "No date", EN2 + " Extra sentence.", date=""),
        row(8, "Out of window", EN2 + " Another one.", date="2025-01-01"),
        row(9, "Conseil municipal", FR, lang="fr"),  # declared French, not configured
        row(11, "Le budget", FR + " Les critiques ont dénoncé la crise du logement.", lang=None),  # lingua: French
        row(2, "Duplicate id", EN2 + " Yet another sentence about wetlands.", date="2026-03-06"),
        "{not json",
        {"id": "a10", "title": "Empty", "maintext": "", "date_publish": "2026-03-01"},
    ]
    rows[6]["date_publish"] = None
    write_jsonl(tmp_path / "c.jsonl", rows)
    config = cfg(tmp_path, [{"path": str(tmp_path / "c.jsonl"), "format": "jsonl"}], date_from="2026-01-01")
    report = Pipeline(config).run(until="ingest")
    arts = BuildStore(config.build_dir).read("ingest", Article)
    assert [a.id for a in arts] == ["a1", "a2", "a3"]
    by_id = {a.id: a for a in arts}
    assert by_id["a3"].language == "de" and by_id["a1"].language == "en"
    assert by_id["a2"].published == dt.date(2026, 3, 5)
    assert by_id["a1"].n_tokens == count_tokens(long)
    assert "berlin" in by_id["a1"].title_entities and "siemens" in by_id["a1"].title_entities
    assert by_id["a3"].title_entities == []  # no German model: no entities (never the English model) ...
    skipped = report.stages[0].skipped
    assert skipped == {"exact-duplicate": 1, "near-duplicate": 1, "too-short": 1, "missing-date": 1,
                       "before-date-window": 1, "language-not-configured": 2, "duplicate-id": 1,
                       "bad-json": 1, "no-article-text": 1}
    assert report.stages[0].kept_with_note == {"no-ner-model-de": 1}  # ... kept, and counted apart
    assert report.stages[0].count_in == 13


def test_zero_usable_articles_is_an_error_that_says_why(tmp_path):
    write_jsonl(tmp_path / "c.jsonl", [row(1, "Short", "tiny text"), row(2, "Short too", "also tiny")])
    config = cfg(tmp_path, [{"path": str(tmp_path / "c.jsonl"), "format": "jsonl"}])
    with pytest.raises(InputError, match=r"zero usable articles out of 2 input items \(too-short=2\)"):
        Pipeline(config).run(until="ingest")


def test_missing_input_file_is_a_clear_error(tmp_path):
    config = cfg(tmp_path, [{"path": str(tmp_path / "nope.jsonl"), "format": "jsonl"}])
    with pytest.raises(InputError, match=r"input file\(s\) that do not exist: corpus.inputs\[0\].path: .*nope.jsonl"):
        Pipeline(config).run(until="ingest")


def page(title, body, canonical=None, date="2026-03-03"):
    link = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    paras = "".join(f"<p>{s.strip()}.</p>" for s in body.split(". ") if s.strip())
    return (f"<html><head><title>{title}</title>{link}"
            f'<meta property="article:published_time" content="{date}T08:00:00Z"></head>'
            f"<body><article><h1>{title}</h1>{paras}</article></body></html>")


def test_html_folder_with_url_map_and_canonical(tmp_path):
    html = tmp_path / "html"
    html.mkdir()
    (html / "one.html").write_text(page("Berlin council approves budget", EN * 2), encoding="utf-8")
    (html / "two.html").write_text(page("Wetlands store carbon", EN2 * 2, canonical="https://news.example/wet"),
                                   encoding="utf-8")
    (html / "empty.html").write_text("<html><head><title>Nothing</title></head><body></body></html>")
    (html / "nourl.html").write_text(page("Orphan", EN2 * 2), encoding="utf-8")
    (tmp_path / "urls.tsv").write_text("file\turl\none.html\thttps://news.example/budget\n"
                                       "empty.html\thttps://news.example/empty\n")
    config = cfg(tmp_path, [{"path": str(html), "format": "html", "url_map": str(tmp_path / "urls.tsv")}])
    report = Pipeline(config).run(until="ingest")
    arts = BuildStore(config.build_dir).read("ingest", Article)
    assert sorted(a.url for a in arts) == ["https://news.example/budget", "https://news.example/wet"]
    assert {a.published for a in arts} == {dt.date(2026, 3, 3)}
    assert report.stages[0].skipped == {"no-article-text": 1, "no-url": 1}


def test_canonical_url_parsing():
    assert canonical_url('<link href="https://x.org/a" rel="canonical"/>') == "https://x.org/a"
    assert canonical_url("<link rel=canonical href='https://x.org/b'>") == "https://x.org/b"
    assert canonical_url('<link rel="stylesheet" href="s.css">') == ""


def _warc_bytes(pages, extra_records=True):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    for url, body, ctype in pages:
        headers = StatusAndHeaders("200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body.encode()),
                                                      http_headers=headers))
    return buf.getvalue()


def test_warc_reader_counts_non_html_and_corrupt_records(tmp_path):
    good = _warc_bytes([
        ("https://news.example/w1", page("Berlin council approves budget", EN * 2), "text/html; charset=utf-8"),
        ("https://news.example/img.png", "PNGDATA", "image/png"),
        ("https://news.example/w2", page("Wetlands store carbon", EN2 * 2), "text/html"),
    ])
    path = tmp_path / "c.warc.gz"
    path.write_bytes(good + b"\x1f\x8b\x08garbage-that-is-not-a-warc-record" * 3)
    items = list(read_warc(path))
    kinds = [type(i).__name__ + ":" + getattr(i, "reason", "") for i in items]
    assert kinds == ["RawArticle:", "Skip:non-html-record", "RawArticle:", "Skip:corrupt-warc-member"]
    config = cfg(tmp_path, [{"path": str(path), "format": "warc"}])
    report = Pipeline(config).run(until="ingest")
    assert len(BuildStore(config.build_dir).read("ingest", Article)) == 2
    assert report.stages[0].skipped == {"non-html-record": 1, "corrupt-warc-member": 1}


def test_language_identifier_restricted_with_confidence():
    lid = LanguageIdentifier(["en", "de"])
    assert lid.detect(DE).language == "de"
    guess = lid.detect(EN)
    assert guess.language == "en" and guess.confidence > 0.9


def test_near_duplicate_threshold_is_respected():
    h = MinHasher(n_perm=32, seed=3)
    words = EN2.split() * 3
    a = " ".join(words)
    b = " ".join(words[:-3] + ["x", "y", "z"])  # tiny edit: near-duplicate
    c = EN  # unrelated
    sig = np.stack([h.signature(t) for t in (a, c, b)])
    ids = np.array([1, 2, 3])
    texts = np.array([10, 20, 30])
    dup_id, exact, near, near_of = duplicate_mask(ids, texts, sig, threshold=0.8)
    assert near.tolist() == [False, False, True] and near_of[2] == 0
    dup_id, exact, near, _ = duplicate_mask(np.array([1, 1, 2]), np.array([5, 6, 5]), sig, 0.8)
    assert dup_id.tolist() == [False, True, False] and exact.tolist() == [False, False, True]


def test_minhash_estimates_jaccard_and_does_not_merge_similar_articles():
    """Regression: an affine hash that never wraps picks the same minimum for every permutation, so
    articles from shared templates looked identical. The estimate must track the true Jaccard."""
    from babelrag.construct.ingest.dedupe import shingles

    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(300)]
    base = list(rng.choice(vocab, 400))
    half = base[:200] + list(rng.choice(vocab, 200))  # shares roughly half its shingles with base
    texts = [" ".join(base), " ".join(half), " ".join(rng.choice(vocab, 400))]
    h = MinHasher(n_perm=64, seed=5)
    sig = np.stack([h.signature(t) for t in texts])
    sets = [set(shingles(t)) for t in texts]
    for i, j in ((0, 1), (0, 2)):
        true = len(sets[i] & sets[j]) / len(sets[i] | sets[j])
        assert abs((sig[i] == sig[j]).mean() - true) < 0.15
    _, _, near, _ = duplicate_mask(np.arange(3), np.arange(3), sig, threshold=0.9)
    assert not near.any()


def test_editing_the_corpus_or_gazetteer_reruns_ingest_without_force(tmp_path):
    """ingest's fingerprint covers the content of corpus.inputs and ner.gazetteer, not only their paths."""
    corpus = tmp_path / "c.jsonl"
    write_jsonl(corpus, [row(1, "Quorvath council approves budget", EN)])
    gaz = tmp_path / "gaz.jsonl"
    gaz.write_text('{"name": "Quorvath"}\n', encoding="utf-8")

    def ingest():
        config = cfg(tmp_path, [{"path": str(corpus), "format": "jsonl"}])
        config.ner.gazetteer = str(gaz)
        status = Pipeline(config).run(until="ingest").stages[0].status
        return status, BuildStore(config.build_dir).read("ingest", Article)

    status, arts = ingest()
    assert status == "ran" and "quorvath" in arts[0].title_entities
    assert "budget" not in arts[0].title_entities
    assert ingest()[0] == "cached"
    gaz.write_text('{"name": "Budget"}\n', encoding="utf-8")  # same path, new content
    status, arts = ingest()
    assert status == "ran" and "budget" in arts[0].title_entities
    write_jsonl(corpus, [row(1, "Quorvath council approves budget", EN), row(2, "Wetlands study", EN2)])
    status, arts = ingest()
    assert status == "ran" and [a.id for a in arts] == ["a1", "a2"]
    assert ingest()[0] == "cached"
