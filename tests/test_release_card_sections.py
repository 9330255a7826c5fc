"""The card's sections are written one function each; the data fields section comes from the record type, so
a field added to ``Instance`` or ``Document`` appears in every card without editing prose."""
import re

from babelrag.records import Document, Instance
from babelrag.release import card


def test_data_fields_name_every_released_field_in_the_schema_order():
    text = card.data_fields_section()
    documents = re.search(r"`documents` \(list of (.*?\)), `verified`", text).group(1)
    named = re.findall(r"`([a-z_]+)`", text.replace(documents, ""))
    assert named[:len(Instance.model_fields)] == list(Instance.model_fields)
    assert re.findall(r"`([a-z_]+)`", documents) == list(Document.model_fields)
    assert "`role` (supporting|distractor)" in documents  # a Literal's choices, from its type
    assert "`q_type` (aggregation, comparison, multi-hop, set)" in text


def test_every_section_has_one_writer_in_the_card_order():
    assert card.SECTIONS == tuple(card.SECTION_WRITERS)
    assert card.SECTIONS[0] == "Dataset summary" and card.SECTIONS[-1] == "Citation"
    assert "Data fields" in card.SECTIONS and len(set(card.SECTIONS)) == 13
