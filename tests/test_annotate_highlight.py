"""Fact highlighting in Q&A verification on real non-English news pages, with the real packaged encoder.

The articles are two pages of trafilatura's public test corpus (tests/fixtures/realpages, sources and
licence in its README), extracted by our ingest. The facts are English question/answer pairs written the
way the question chain writes them (from an English summary), each naming the sentence that carries it.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from babelrag.annotate import projects, samples
from babelrag.annotate.settings import AnnotateSettings, HighlightSettings
from babelrag.annotate.sources import EncoderHighlighter, LexicalHighlighter, make_highlighter, supporting_sentence
from babelrag.construct.ingest.extract import article_from_html
from babelrag.sentences import split_sentences
from babelrag.records import Article, SimpleQA

PAGES = Path(__file__).parent / "fixtures" / "realpages" / "pages"

# (page, language, [(question, answer, the sentence that carries it)])
FACTS = {
    "bundespolizei.de-Belarus.html": ("de", [
        ("How many unauthorised entries with a Belarus link did the Federal Police register in November?", "1,246",
         "registrierte die Bundespolizei im November 1.246 unerlaubte Einreisen"),
        ("Which border remains the focal point?", "The German-Polish border",
         "Die deutsch-polnische Grenze ist dabei weiterhin der Brennpunkt."),
        ("How many unauthorised entries with a link to Belarus were detected from January to July 2021?", "26",
         "Im Zeitraum Januar bis Juli 2021"),
        ("How many illegal entries were recorded in August alone?", "474", "Allein für den August"),
        ("What does the Federal Police carry out near the border?",
         "Intensified search measures below the threshold of border controls", "intensivierte Fahndungsmaßnahmen"),
        ("When are rejections at Schengen internal borders legally permitted?",
         "Only when the temporary reintroduction of border controls has been notified to the European Commission",
         "Zurückweisungen an Schengen-Binnengrenzen"),
    ]),
    "elpais.com.ciencia.html": ("es", [
        ("Which share of the peninsula's glaciers have retreated in the last 50 years?", "87%", "El 87% de todos"),
        ("When was the previous continental temperature record set?", "In 2015, with 17.5 degrees",
         "El récord anterior en el territorio continental"),
        ("Who is the director of the Chilean Antarctic Institute?", "Marcelo Leppe", "explica Marcelo Leppe"),
        ("Which organisation must still confirm the two temperature records?", "The World Meteorological Organization",
         "Los dos récords de temperatura ni siquiera"),
        ("How much has the average temperature risen since the 1950s?",
         "Three degrees, more than double the planet as a whole", "la temperatura media ha subido tres grados"),
    ]),
}
UNRELATED = SimpleQA(article_id="x", question="Who won the 2018 football World Cup?", answer="France")


def real_article(page: str, language: str) -> tuple[Article, list[str]]:
    raw = article_from_html((PAGES / page).read_bytes())
    article = Article(id=page, title=raw.title, text=raw.text, language=language, published="2020-01-01")
    return article, split_sentences(article.text)


def expected_index(sentences: list[str], marker: str) -> int:
    hits = [i for i, s in enumerate(sentences) if marker in s]
    assert len(hits) == 1, f"fixture marker {marker!r} must name one sentence, found {hits}"
    return hits[0]


@pytest.fixture(scope="module")
def encoder_highlighter() -> LexicalHighlighter:
    return make_highlighter(HighlightSettings())


@pytest.mark.parametrize("page", sorted(FACTS))
def test_the_encoder_marks_the_sentence_that_carries_each_english_fact_in_a_real_foreign_article(page, encoder_highlighter):
    language, facts = FACTS[page]
    article, sentences = real_article(page, language)
    encoder_highlighter.prepare([article])
    lexical = LexicalHighlighter()
    encoder_right = lexical_right = 0
    for question, answer, marker in facts:
        fact = [SimpleQA(article_id=page, question=question, answer=answer)]
        want = {expected_index(sentences, marker)}
        got = encoder_highlighter.marked(article, sentences, fact)
        assert got == want, f"{question!r}: marked {[sentences[i] for i in got]}, expected {sentences[min(want)]!r}"
        encoder_right += 1
        lexical_right += lexical.marked(article, sentences, fact) == want
    # shared words find the numbers and names, not the facts that are only said in the other language
    assert lexical_right < encoder_right
    assert encoder_highlighter.marked(article, sentences, [UNRELATED]) == set()


def test_a_paraphrased_fact_in_an_english_article_falls_back_to_the_encoder(encoder_highlighter):
    raw = article_from_html((PAGES / "world.kbs.co.kr-Temperatures.html").read_bytes(), url="https://world.kbs.co.kr/")
    article = Article(id="kbs", title=raw.title, text=raw.text, language="en", published="2019-11-19")
    sentences = split_sentences(article.text)
    paraphrased = SimpleQA(article_id="kbs", question="What are motorists warned about?", answer="Slippery, icy roads")
    by_words = SimpleQA(article_id="kbs", question="Where was the lowest reading in the country measured?",
                        answer="Cheorwon")
    assert supporting_sentence(sentences, paraphrased) is None  # no shared word: word matching cannot place it
    assert encoder_highlighter.marked(article, sentences, [paraphrased, by_words]) == {
        expected_index(sentences, "caution is also advised for drivers"), expected_index(sentences, "Cheorwon")}
    assert encoder_highlighter.marked(article, sentences, [UNRELATED]) == set()


def test_english_articles_whose_facts_match_by_words_never_load_the_encoder():
    def no_encoder():
        raise AssertionError("the encoder was loaded though every fact matched by words")

    highlighter = EncoderHighlighter(no_encoder, min_similarity=0.35)
    items = samples.qa_items(2)
    english = {a["id"]: a for a in samples.articles(2) if a["language"] == "en"}
    records = projects.build_records("qa_verification", items, AnnotateSettings(), articles=english,
                                     highlighter=highlighter)
    assert all(r.fields["article_a"].count("<mark>") == 1 for r in records)
    assert all("was not found" in r.fields["article_b"] for r in records)


def test_sentence_vectors_are_cached_across_pushes(tmp_path):
    article, sentences = real_article("elpais.com.ciencia.html", "es")
    first = make_highlighter(HighlightSettings(), cache=tmp_path / "vectors.sqlite")
    first.prepare([article])
    assert first.encoder.misses == len(set(sentences)) and first.encoder.hits == 0
    again = make_highlighter(HighlightSettings(), cache=tmp_path / "vectors.sqlite")
    again.prepare([article])
    assert again.encoder.misses == 0 and again.encoder.hits == len(set(sentences))
    question, answer, marker = FACTS["elpais.com.ciencia.html"][1][3]
    fact = [SimpleQA(article_id=article.id, question=question, answer=answer)]
    assert again.marked(article, sentences, fact) == {expected_index(sentences, marker)}


def test_lexical_method_and_bad_settings():
    assert type(make_highlighter(HighlightSettings(method="lexical"))) is LexicalHighlighter
    with pytest.raises(ValidationError, match="method"):
        AnnotateSettings.model_validate({"highlight": {"method": "semantic"}})
    with pytest.raises(ValidationError, match="min_similarity"):
        HighlightSettings(min_similarity=2)
