"""The dataset card declares only what the release holds (issue 38, item 4): languages of the released rows
and documents, the filters that ran with their counts, the models that generated and judged (with a notice
for a small model), the licence as chosen or flagged as the default, counts worded right, and a CHANGELOG
entry that a rebuild never rewrites. Each test builds a real release folder from a small finished build and
reads the card back (its header with huggingface_hub's own parser)."""
from babelrag.records import Article
from babelrag.release.build import build_release
from babelrag.release.card import count_noun, small_model
from babelrag.store import BuildStore
from tests.helpers.release_fixtures import make_build, make_config, make_records, write_stage

SMALL = "qwen2.5-coder-0.5b-instruct"  # babelrag's embedded model (babelrag/llm/local.py MODEL_ALIAS)
FILTERS_RAN = {"well_formed": {"pass": 5, "fail": 1, "error": 0}, "named_entity": {"pass": 5, "fail": 0, "error": 0},
               "near_duplicate": {"pass": 5, "fail": 0, "error": 0}}
USAGE = {"endpoints": ["local"], "models": {"local": SMALL}, "calls": 7, "cached": 0, "prompt_tokens": 900,
         "completion_tokens": 100, "cost": 0.0}


def _card(folder):
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(folder / "README.md")
    return card.data.to_dict(), card.text


def _section(text: str, name: str) -> str:
    return text.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]


def _corpus_with_unreleased_languages(root) -> None:
    """The corpus also holds French and Spanish articles that no released row or document uses."""
    store = BuildStore(root)
    articles, _, _ = make_records()
    extra = [Article(id=f"art-fr-{k}", title=f"Le conseil municipal de Lyon vote le budget {k}",
                     text="Le conseil a voté le budget de la ville pour l'année prochaine après un long débat.",
                     language=lang, published="2024-05-01", n_tokens=20)
             for k, lang in enumerate(["fr", "fr", "es"])]
    write_stage(store, "ingest", Article, articles + extra)


def _filters_manifest(root, ran=FILTERS_RAN, usage=USAGE) -> None:
    store = BuildStore(root)
    m = store.manifest("filters")
    m.extra = {"filters": ran, "filter_order": list(ran), "accepted": 5}
    m.llm_usage = usage
    (store.stage_dir("filters") / "manifest.json").write_text(m.to_json())


def test_languages_are_those_of_the_released_rows_and_documents(tmp_path):
    make_build(tmp_path / "build")
    _corpus_with_unreleased_languages(tmp_path / "build")
    # the config names es and ar too, the corpus holds fr and es: neither is in any row or document
    data, text = _card(build_release(make_config(tmp_path)).folder)
    assert data["language"] == ["de", "en", "zh"]
    assert data["language_details"] == ["de", "en", "zh-Hans"]  # canonical BCP-47
    assert "rows and documents are in de, en, zh-Hans" in _section(text, "Construction")


def test_only_the_filters_that_ran_are_listed_with_their_counts(tmp_path):
    make_build(tmp_path / "build")
    _filters_manifest(tmp_path / "build")
    _, text = _card(build_release(make_config(tmp_path)).folder)
    construction = _section(text, "Construction")
    assert "needs both articles" not in construction and "needs_retrieval" not in construction
    assert "quality filters that ran: well_formed, named_entity, near_duplicate" in construction
    assert "| well_formed | 5 | 1 | 0 |" in construction and "| near_duplicate | 5 | 0 | 0 |" in construction


def test_models_are_named_and_a_small_model_gets_a_notice(tmp_path):
    make_build(tmp_path / "build")
    _filters_manifest(tmp_path / "build")
    _, text = _card(build_release(make_config(tmp_path)).folder)
    models = _section(text, "Models and prompts")
    assert f"| filters | judged the questions (LLM filters) | local | {SMALL} |" in models
    summary = _section(text, "Dataset summary")
    assert summary.lstrip().startswith("> **Small model notice**") and f"`{SMALL}` (babelrag's embedded 0.5B" in summary
    # the questions' provenance model of the fixture (qwen2.5-0.5b-instruct) is small too
    assert "`qwen2.5-0.5b-instruct`" in summary


def test_no_notice_for_large_models():
    assert small_model(SMALL) and small_model("Qwen/Qwen2.5-0.5B-Instruct") and small_model("llama-3.2-3b")
    assert not small_model("gpt-4o") and not small_model("Qwen2.5-72B-Instruct") and not small_model("qwen2.5")
    assert not small_model("mistral-small-24b")


def test_large_models_only_make_no_notice(tmp_path):
    _, qas, _ = make_records()
    make_build(tmp_path / "build")
    store = BuildStore(tmp_path / "build")
    write_stage(store, "filters", type(qas[0]),
                [q.model_copy(update={"provenance": q.provenance.model_copy(update={"model": "gpt-4o"})}) for q in qas])
    _filters_manifest(tmp_path / "build", usage={**USAGE, "models": {"local": "Qwen2.5-72B-Instruct"}})
    _, text = _card(build_release(make_config(tmp_path)).folder)
    assert "Small model notice" not in text and "| Qwen2.5-72B-Instruct |" in text


def test_licence_is_the_curators_choice_or_flagged_as_the_default(tmp_path):
    make_build(tmp_path / "build")
    data, text = _card(build_release(make_config(tmp_path)).folder)
    assert data["license"] == "cc-by-4.0"
    assert "**`cc-by-4.0` is babelrag's default, not a choice**" in _section(text, "Licence")
    chosen = make_config(tmp_path, license="cc-by-nc-4.0", version="0.1.1")
    data, text = _card(build_release(chosen).folder)
    assert data["license"] == "cc-by-nc-4.0"
    assert "`cc-by-nc-4.0`, chosen by the curator" in _section(text, "Licence") and "not a choice" not in text


def test_the_init_template_leaves_the_licence_to_the_curator():
    import yaml

    from babelrag.templates import example_config_text

    assert "license" not in yaml.safe_load(example_config_text())["release"]


def test_one_question_is_worded_in_the_singular(tmp_path):
    _, _, instances = make_records(verified=False)
    one = [i for i in instances if i.qa_id == "qa-004"]  # the German-English question: one instance
    make_build(tmp_path / "build", instances=one, verified=False)
    _, text = _card(build_release(make_config(tmp_path, allow_unverified=True)).folder)
    summary = _section(text, "Dataset summary")
    assert "1 instance from 1 question in 1 configuration " in summary
    assert "1 questions" not in text and "1 instances" not in text and "1 configurations" not in text
    assert "**1 instance is released unverified**" in text
    assert count_noun(2, "question") == "2 questions" and count_noun(0, "text") == "0 texts"


def test_a_rebuild_never_rewrites_the_changelog_entry(tmp_path):
    make_build(tmp_path / "build")
    cfg = make_config(tmp_path)
    folder = build_release(cfg).folder
    first = (folder / "CHANGELOG.md").read_text()
    assert "## 0.1.0 (" in first and "First release." in first
    again = build_release(cfg).folder  # unchanged data, same version: a rebuild
    assert (again / "CHANGELOG.md").read_text() == first
    assert "Version 0.1.0. First release." in _section((again / "README.md").read_text(), "Versioning")
    cfg.release.version = "0.1.1"  # card-only release: a new entry on top, the old one untouched
    log = (build_release(cfg).folder / "CHANGELOG.md").read_text()
    assert log.index("## 0.1.1") < log.index("## 0.1.0") and "First release." in log
