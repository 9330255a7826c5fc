"""The translation tier's anchors (construct/pair_anchors.py): numbers of every script, Latin-script names found
without spaces around them and with combining marks, and their overlap; the tier's settings and defaults."""
from __future__ import annotations

import unicodedata

import pytest

from babelrag.construct.pair_anchors import DEFAULT_MIN_ANCHOR_OVERLAP, anchors, min_anchor_overlap, overlap
from babelrag.construct.pairs import DenseConfig


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
