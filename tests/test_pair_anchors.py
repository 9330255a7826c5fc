"""The translation tier's anchors (construct/pair_anchors.py): numbers of every script, Latin-script names found
without spaces around them and with combining marks, and their overlap; numbers Yoruba writes in words
(construct/spelled_numbers.py); the tier's settings and defaults."""
from __future__ import annotations

import unicodedata

import pytest

from babelrag.construct.crosslingual import article_anchors
from babelrag.construct.pair_anchors import (DEFAULT_MIN_ANCHOR_OVERLAP, DEFAULT_MIN_ANCHOR_OVERLAP_NEAR_BEST, anchors,
                                             min_anchor_overlap, overlap)
from babelrag.construct.pairs import DenseConfig
from babelrag.construct.spelled_numbers import number_anchors, yoruba_numbers
from babelrag.records import Article


def test_numbers_of_every_script_are_one_anchor_in_ascii_digits():
    assert anchors("1,000 people") == anchors("1.000 mal") == anchors("१,००० लोग") == {"#1000"}
    assert anchors("٣٠ شخصا") == anchors("৩০ জন") == anchors("３０人") == {"#30"}
    assert anchors("007 and 7") == {"#7"}  # leading zeros stripped
    assert anchors("in 2018 30 people") == {"#2018", "#30"}  # a plain space separates two numbers


def test_latin_names_are_found_inside_text_without_spaces():
    assert anchors("特朗普在NATO峰会上说") == {"nato"}
    assert anchors("トランプ氏はNATOについて") == {"nato"}
    assert anchors("นายกรัฐมนตรีพบกับObamaที่กรุงเทพ") == {"obama"}


def test_names_fold_case_and_diacritics_and_keep_combining_marks_inside_the_word():
    yoruba = unicodedata.normalize("NFD", "Ọ̀gbẹ́ni Joan Ryan sọ pé")  # tone marks as combining characters
    assert anchors(yoruba) == {"ogbeni", "joan", "ryan"}
    assert anchors("Zürich") == anchors("ZURICH") == {"zurich"}
    assert anchors("an AM in Wales") == {"wales"}  # lower-case words and names under three letters are no anchor


def test_overlap_is_the_jaccard_index():
    a, b = anchors("Joan Ryan, 30 votes, Labour"), anchors("Joan Ryan had 30 votes in Momentum")
    assert overlap(a, b) == pytest.approx(3 / 5)  # joan ryan #30 of joan ryan #30 labour momentum
    assert overlap(frozenset(), frozenset()) == 0.0


def test_the_tier_is_on_by_default_with_the_calibrated_threshold():
    cfg = DenseConfig()
    assert cfg.anchor_pairs and min_anchor_overlap(cfg) == DEFAULT_MIN_ANCHOR_OVERLAP
    assert min_anchor_overlap(DenseConfig(min_anchor_overlap=0.5)) == 0.5
    with pytest.raises(ValueError):
        DenseConfig(min_anchor_overlap=1.5)
    assert min_anchor_overlap(cfg, near_best=True) == DEFAULT_MIN_ANCHOR_OVERLAP_NEAR_BEST > DEFAULT_MIN_ANCHOR_OVERLAP
    assert min_anchor_overlap(DenseConfig(min_anchor_overlap_near_best=0.4), near_best=True) == 0.4
    with pytest.raises(ValueError):
        DenseConfig(min_anchor_overlap_near_best=-0.1)


# NTREX-128's professional Yoruba translations (tests/fixtures/ntrex_languages yo-bbc.381780 and
# tests/fixtures/ntrex_translations yo-bbc.381679), verbatim; their English: "Three men, aged 33, 34 and 39,
# have been arrested ..." and "... at about 10:15 BST"
AGED = ("Àwọn ọkùnrin mẹ́ta, tí ọjọ́-orí wọn jẹ́ ọdún mẹ́tàlélọ́gbọ̀n, mẹ́rìnlélọ́gbọ̀n àti ọ̀kàndínlógójì ni wọn ti "
        "mú sátìmọ́lé")
AT_TEN_FIFTEEN = "ní bíi aago mẹ́wàá kọjá ìṣẹ́jú mẹ́ẹ̀ẹ́dógún Àkókò Gẹ̀ẹ́sì"


def test_yoruba_numbers_written_in_words_are_read():
    assert yoruba_numbers(AGED) == {33, 34, 39}  # 3 on 30, 4 on 30, 1 short of 40; "mẹ́ta" (three) is under 10
    assert yoruba_numbers(AT_TEN_FIFTEEN) == {10, 15}  # 15: five short of twenty
    # the translator's spellings: tones on n, collapsed vowels, ordinals (ìk-), hundreds
    assert yoruba_numbers("mẹ́riǹlélógún ìtújáde nígbà mẹ́tàlélọ́gọ́sán") == {24, 183}
    assert yoruba_numbers("ìkọ́kàndínláàádọ́rùn-ún, mẹ́tàlá, mọ́kànlá") == {89, 13, 11}


def test_yoruba_words_that_are_also_other_words_are_no_number():
    # ogún 20 / war, ọgbọ̀n 30 / wisdom, igba 200 / time, ẹ̀wá 10 / beauty, units, weekdays (Àbámẹ́ta: Saturday)
    assert yoruba_numbers("ogun ọgbọ̀n igba ẹwà mẹ́ta méje lọ́jọ́ Àbámẹ́ta") == set()


def test_spelled_numbers_are_number_anchors_of_their_language_only():
    assert number_anchors(AGED, "yo") == {"#33", "#34", "#39"}
    assert number_anchors(AGED, "en") == number_anchors("thirty-three", "en") == frozenset()
    english = anchors("Three men, aged 33, 34 and 39, have been arrested in Londonderry.")
    yoruba = Article(id="yo-1", language="yo", title="Ìlú Lọndọnderi", text=AGED + " ní ìlú Lọndọndẹri.", published=None)
    mine = article_anchors(yoruba, 1000)
    assert mine & english == {"#33", "#34", "#39"}  # without the reader: no anchor in common
    assert anchors(yoruba.title + "\n" + yoruba.text) & english == set()
