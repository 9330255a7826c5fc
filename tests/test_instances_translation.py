"""multi+ES / multi+ED through the stage: X articles are machine-translated by the LLM layer (scripted server)."""
import re

from babelrag.config import config_from_dict
from babelrag.construct.instances import instance_id
from babelrag.construct.translate import EntityForm, guess_entities, missing_entities
from babelrag.pipeline import Pipeline
from babelrag.records import Article, DistractorSet, Instance, QAItem
from babelrag.store import BuildStore
from babelrag.testing.scripted_server import ScriptedServer
from tests.helpers.qa_fixtures import DE, corpus, dset, qa, seed_stage


def translator(body):
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    title = re.search(r"Title: (.*)", text).group(1)
    if title == "Title g1":
        return "Entschuldigung"  # this distractor's translation fails (also after the repair)
    return {"title": f"EN {title}", "text": "Translated text."}


def test_stage_translates_x_articles_for_es_and_ed(tmp_path):
    build = tmp_path / "build"
    seed_stage(build, "ingest", list(corpus().values()), Article)
    seed_stage(build, "filters", [qa("q2", "d1", "a1", translations=DE)], QAItem)
    seed_stage(build, "distractors", [dset("q2", [(f"e{i}", "en") for i in range(4)] +
                                           [(f"g{i}", "de") for i in range(4)])], DistractorSet)
    with ScriptedServer(translator) as srv:
        cfg = config_from_dict({"project": {"build_dir": str(build), "languages": ["en", "de"]},
                                "instances": {"settings": ["multi+ES", "multi+ED", "multi+ES+ED"]},
                                "llm": {"endpoints": {"g": {"base_url": srv.base_url, "model": "m", "max_retries": 0}},
                                        "progress": False}})
        report = Pipeline(cfg).run(only=["instances"])
        # d1, g0, g1, g2 need translations (3 German distractors are used); one call + one repair for g1
        assert srv.count("chat") == 5
    out = {i.setting: i for i in BuildStore(build).read("instances", Instance)}
    es = out["multi+ES"]
    d1 = next(d for d in es.documents if d.article_id == "d1")
    assert (d1.title, d1.language, d1.machine_translated) == ("EN Lumen Bank eröffnet Büro in Porto", "en", True)
    assert es.machine_translated and es.language == "de"
    # g1 could not be translated: the +ED variants are skipped, never shown untranslated
    assert "multi+ED" not in out and "multi+ES+ED" not in out
    assert report.stages[0].skipped == {"document-translation-failed": 1, "multi+ED:no-document-translation": 1,
                                        "multi+ES+ED:no-document-translation": 1}
    assert BuildStore(build).manifest("instances").extra["document_translations"] == 3
    assert es.id == instance_id("q2", "multi+ES", "de")


def test_entity_guess_and_missing_check():
    ents = guess_entities("Which University of Porto professor met Angela Merkel in Berlin?")
    assert ents == ["University of Porto", "Angela Merkel", "Berlin"]
    # a lone capitalised word opening a sentence is no entity, unless it also appears mid-sentence
    assert guess_entities("Taken together, how much did Norrvik Energy spend? One report cites Kestrel Bay.") == [
        "Norrvik Energy", "Kestrel Bay"]
    assert guess_entities("Berlin hosted it; who came to Berlin?") == ["Berlin"]
    forms = [EntityForm(source="University of Porto", target="Universität Porto")]
    assert missing_entities(ents, forms, "Welcher Professor der Universität Porto traf Angela Merkel in Berlin?") == []
    assert missing_entities(ents, forms, "Welcher Professor traf Merkel in Berlin?") == ["University of Porto",
                                                                                         "Angela Merkel"]
