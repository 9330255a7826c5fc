"""Dataset card header values the Hub accepts, read back with huggingface_hub's own card parser."""
import pytest

from babelrag.release.hub_metadata import (HUB_LICENSES, SIZE_CATEGORIES, CardMetadataError, bcp47, check_license,
                                           size_category)


def test_size_categories_are_the_hubs_buckets():
    assert [size_category(n) for n in (0, 999, 1_000, 9_999_999, 10_000_000, 10**9, 10**12)] == [
        "n<1K", "n<1K", "1K<n<10K", "1M<n<10M", "10M<n<100M", "1B<n<10B", "n>1T"]
    assert set(size_category(10**k) for k in range(13)) <= set(SIZE_CATEGORIES)
    assert "n>10M" not in SIZE_CATEGORIES


def test_language_tags_are_canonical_bcp47():
    assert [bcp47(x) for x in ("de", "en", "zh", "ar", "es")] == ["de", "en", "zh-Hans", "ar", "es"]
    with pytest.raises(CardMetadataError, match="not an ISO 639 code"):
        bcp47("deu-Latn")


def test_licence_must_be_a_hub_identifier():
    assert check_license("cc-by-nc-4.0") == "cc-by-nc-4.0" and "other" in HUB_LICENSES
    with pytest.raises(CardMetadataError, match="did you mean 'cc-by-4.0'"):
        check_license("CC BY 4.0")
    with pytest.raises(CardMetadataError, match="not a Hub licence identifier"):
        check_license("my own licence")


def test_converted_folder_card_parses_with_huggingface_hub(tmp_path):
    from huggingface_hub import DatasetCard

    from babelrag.release.external import convert_external
    from tests.test_release_external import FIX

    convert_external(FIX / "garage.jsonl", "garage", tmp_path / "rel")
    card = DatasetCard.load(tmp_path / "rel" / "README.md")
    data = card.data.to_dict()
    assert data["license"] == "cc-by-nc-4.0" and data["language_details"] == ["en"]
    assert data["source_datasets"] == ["extended|amazon-science/GaRAGe"]
    assert data["annotations_creators"] == ["expert-generated"] and data["size_categories"] == ["n<1K"]
    assert [c["config_name"] for c in data["configs"]] == ["garage-en"]
    assert "eprint = {2506.07671}" in card.text and "[cite_N]" in card.text
    # every record became an instance ("Simple" and "Post-processing heavy" keep GaRAGe's own category)
    assert "every record became an instance" in card.text and "not converted" not in card.text


def test_a_licence_the_hub_does_not_know_fails_when_the_config_loads(tmp_path):
    import yaml

    from babelrag.config import load_config
    from babelrag.errors import ConfigError

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"project": {"name": "t", "build_dir": str(tmp_path)},
                                    "release": {"license": "CC BY 4.0"}}))
    with pytest.raises(ConfigError, match="release.license.*not a Hub licence identifier; did you mean 'cc-by-4.0'"):
        load_config(path)


def test_built_card_parses_with_huggingface_hub(tmp_path):
    from huggingface_hub import DatasetCard

    from babelrag.release.build import build_release
    from tests.helpers.release_fixtures import make_build, make_config

    make_build(tmp_path / "build")
    folder = build_release(make_config(tmp_path)).folder
    data = DatasetCard.load(folder / "README.md").data.to_dict()
    assert data["language_details"] == ["de", "en", "zh-Hans"] and data["size_categories"] == ["n<1K"]
    assert data["license"] in HUB_LICENSES and data["language_creators"] == ["found", "machine-generated"]
