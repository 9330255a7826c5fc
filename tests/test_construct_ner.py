"""Title NER backends and entity normalisation."""
import json

import pytest

from babelrag.construct.ner import (EntityExtractor, LLMNER, SpacyNER, StanzaNER, normalise_aliases,
                                    normalise_entity)
from babelrag.errors import ConfigError


@pytest.mark.parametrize("raw,key", [
    ("Acme Corp.'s", "acme corp"),
    ("ACME Corp", "acme corp"),
    ("Merkel’s", "merkel"),
    ("the United Nations", "united nations"),
    ("  U.S.  ", "u s"),
    ("“Brexit”", "brexit"),
    ("Ｂｅｒｌｉｎ", "berlin"),  # full-width (NFKC)
    ("The Hague", "hague"),
    ("Jones'", "jones"),
])
def test_normalise_entity(raw, key):
    assert normalise_entity(raw) == key


def test_aliases_map_to_canonical_form_in_any_case():
    aliases = normalise_aliases({"U.S.": "United States", "USA": "united states"})
    assert normalise_entity("USA", aliases) == "united states"
    assert normalise_entity("the U.S.", aliases) == "united states"


def test_spacy_backend_english_and_latin_script_titles_but_not_other_scripts():
    ex = EntityExtractor(SpacyNER(labels=["PERSON", "ORG", "GPE"]), {"Deutsche Bahn AG": "Deutsche Bahn"})
    out = ex(["Airbus wins Lufthansa order in Hamburg", "Deutsche Bahn AG streicht Züge nach Berlin",
              "诺尔维克能源公司承压：哈尔瓦德·布伦纳在凯斯特雷尔湾为潮汐电站辩护", "هالفارد برينر يدافع عن المحطة"],
             ["en", "de", "zh", "ar"])
    assert out[0] == ["airbus", "lufthansa", "hamburg"]
    assert "berlin" in out[1]
    # Chinese: jieba proper-noun runs, the transliterated name kept whole across its middle dot
    assert out[2] == ["诺尔维克", "哈尔瓦德 布伦纳", "凯斯特雷尔湾"]
    assert out[3] == []  # Arabic without a model: no entities (use stanza, llm or a gazetteer)


def test_spacy_missing_model_is_a_config_error():
    with pytest.raises(ConfigError, match="spaCy model 'xx_not_a_model' is not installed"):
        SpacyNER(model="xx_not_a_model").entities(["Airbus in Hamburg"], ["en"])


def test_stanza_without_models_says_how_to_get_them(tmp_path):
    ner = StanzaNER(tmp_path)
    with pytest.raises(ConfigError, match=r"stanza models for 'de' were not found .*stanza.download\('de'"):
        ner.entities(["Merkel in Berlin"], ["de"])
    # a language folder without the model files: stanza.Pipeline itself fails; still a clear error
    (tmp_path / "de").mkdir()
    (tmp_path / "resources.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"stanza models for 'de' .*\[\w+"):
        ner.entities(["Merkel in Berlin"], ["de"])


def test_llm_backend_keeps_only_mentions_found_in_the_title(tmp_path):
    from babelrag.llm.client import LLMRunner
    from babelrag.llm.settings import EndpointConfig, LLMSettings
    from babelrag.testing.scripted_server import ScriptedServer

    def brain(body):
        msg = body["messages"][-1]["content"]
        if "柏林" in msg:
            return json.dumps({"entities": ["柏林", "马克龙", "Paris"]})  # Paris is invented
        return "no json here"

    with ScriptedServer(brain) as srv:
        settings = LLMSettings(endpoints={"ner": EndpointConfig(base_url=srv.base_url, model="m", max_retries=0)},
                               progress=False)
        runner = LLMRunner(settings, cache_dir=tmp_path / "c")
        backend = LLMNER(runner, "ner")
        out = EntityExtractor(backend)(["德国总理在柏林会见马克龙", "غرق"], ["zh", "ar"])
        runner.close()
    assert out == [["柏林", "马克龙"], []]
    assert backend.failures == 1


def test_ingest_stage_with_llm_backend_uses_the_shared_runner(tmp_path):
    """ner.backend: llm inside the ingest stage goes through ctx.llm (config endpoints, usage per stage)."""
    from babelrag import llm_session
    from babelrag.config import config_from_dict
    from babelrag.pipeline import Pipeline
    from babelrag.records import Article
    from babelrag.store import BuildStore
    from babelrag.testing.scripted_server import ScriptedServer

    text = ("市议会周二批准了新的预算，用于学校、道路和公共交通。官员表示，该计划将增加公交车的支出，"
            "并修复几座已关闭数月的桥梁。批评者认为议会忽视了住房短缺问题。") * 2
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "z1", "title": "德国总理在柏林会见马克龙", "maintext": text,
                                                  "date_publish": "2026-03-01"}, ensure_ascii=False) + "\n")

    def brain(body):
        return json.dumps({"entities": ["柏林", "马克龙"]})

    with ScriptedServer(brain) as srv:
        cfg = config_from_dict({
            "project": {"build_dir": str(tmp_path / "b"), "languages": ["zh", "en"]},
            "corpus": {"inputs": [{"path": str(tmp_path / "c.jsonl"), "format": "jsonl"}], "min_tokens": 20},
            "ner": {"backend": "llm"},
            "llm": {"endpoints": {"x": {"base_url": srv.base_url, "model": "m"}}, "progress": False},
        })
        llm_session.reset()
        try:
            report = Pipeline(cfg).run(until="ingest")
        finally:
            llm_session.reset()
    [art] = BuildStore(cfg.build_dir).read("ingest", Article)
    assert art.language == "zh" and art.title_entities == ["柏林", "马克龙"]
    usage = report.stages[0].llm_usage  # accounted to the ingest stage
    assert (usage["calls"], usage["succeeded"], usage["endpoints"]) == (1, 1, ["x"])
