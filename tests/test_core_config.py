from pathlib import Path

import pytest

from babelrag.config import Config, config_from_dict, load_config
from babelrag.errors import ConfigError
from babelrag.templates import example_config_text


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_example_config_validates(tmp_path):
    cfg = load_config(write(tmp_path, example_config_text()))
    assert cfg.project.languages == ["en", "de", "es", "zh", "ar"]
    assert cfg.build_dir == tmp_path / "build"


def test_unknown_key_names_key_and_allowed_keys(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, "pairs:\n  min_shared_entitys: 3\n"))
    msg = str(e.value)
    assert "pairs.min_shared_entitys" in msg
    assert "did you mean 'min_shared_entities'" in msg
    assert "max_days_apart" in msg and str(tmp_path / "c.yaml") in msg


def test_bad_value_names_key_and_allowed_values(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, "ner:\n  backend: flair\n"))
    assert "ner.backend" in str(e.value) and "'spacy'" in str(e.value) and "'stanza'" in str(e.value)


def test_unknown_language_lists_allowed(tmp_path):
    with pytest.raises(ConfigError, match=r"'xx' is not one the language identifier \(lingua\) supports; "
                                          r"supported: af, ar, .*yo, zh, zu"):
        load_config(write(tmp_path, "project:\n  languages: [en, xx]\n"))


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_config(write(tmp_path, "project:\n  name: [unclosed\n"))
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(write(tmp_path, "- a\n- b\n"))


def test_section_hash_tracks_only_named_sections():
    a = config_from_dict({})
    b = config_from_dict({"pairs": {"max_days_apart": 7}})
    assert a.section_hash("corpus") == b.section_hash("corpus")
    assert a.section_hash("pairs") != b.section_hash("pairs")
    assert isinstance(a, Config)
