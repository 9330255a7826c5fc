"""Config names of the controlled variants say what is English (issue 38): ``multi+ES`` with German questions
is ``multi-de-en_support``, no longer ``multi-es-de`` (which reads as Spanish–German); the old names still
select the same config, on new and on old releases."""
import pytest

from babelrag.evaluators.release_reader import load_instances, scored_configs
from babelrag.release.build import build_release
from babelrag.release.layout import hub_patterns
from babelrag.release.naming import canonical_config, config_name, resolve_configs
from tests.helpers.release_fixtures import make_build, make_config, make_records


@pytest.mark.parametrize("setting,lang,name", [
    ("mono", "de", "mono-de"), ("multi", "zh", "multi-zh"), ("en-baseline", "en", "en-baseline"),
    ("no-retrieval", "de", "no-retrieval-de"), ("oracle", "ar", "oracle-ar"),
    ("multi+ES", "de", "multi-de-en_support"), ("multi+EQ", "es", "multi-es-en_question"),
    ("multi+ED", "fr", "multi-fr-en_distractors"), ("multi+ES+ED", "de", "multi-de-en_support-en_distractors"),
    ("mono+EQ", "de", "mono-de-en_question"),
])
def test_config_names(setting, lang, name):
    assert config_name(setting, lang) == name


def test_old_names_map_to_the_new_ones():
    assert canonical_config("multi-es-de") == "multi-de-en_support"
    assert canonical_config("multi-es-ed-de") == "multi-de-en_support-en_distractors"
    assert canonical_config("mono-de") == "mono-de" and canonical_config("multi-de-en_support") == "multi-de-en_support"
    assert resolve_configs(["multi-es-de", "mono-de", "nope"], ["mono-de", "multi-de-en_support"]) == \
        (["multi-de-en_support", "mono-de"], ["nope"])
    assert resolve_configs(["multi-de-en_support"], ["multi-es-de"]) == (["multi-es-de"], [])
    assert hub_patterns(["multi-de-en_support"])[-2:] == ["data/multi-de-en_support/*.parquet",
                                                         "data/multi-es-de/*.parquet"]


def test_a_release_with_a_variant_is_read_under_either_name(tmp_path):
    _, _, instances = make_records()
    multi = next(i for i in instances if i.setting == "multi")
    variant = multi.model_copy(update={"id": multi.id + "-es", "setting": "multi+ES"})
    make_build(tmp_path / "build", instances=instances + [variant])
    folder = build_release(make_config(tmp_path)).folder
    assert (folder / "data" / "multi-de-en_support").is_dir() and not (folder / "data" / "multi-es-de").exists()
    for name in ("multi-de-en_support", "multi-es-de"):
        assert [i.id for i in load_instances(folder, configs=[name])] == [variant.id]
    split = next((folder / "data" / "multi-de-en_support").glob("*.parquet")).stem
    assert scored_configs(folder, split, ["multi-es-de"]) == ["multi-de-en_support"]
    text = (folder / "README.md").read_text()
    assert "| multi-de-en_support | multi+ES | de (de) |" in text
