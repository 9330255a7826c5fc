"""Provenance of gold answers (issue 37, item 3): ``a_type`` says human_corrected / human_translated in the
instances, the release, the card's counts and every export; the XRAG export maps to XRAG's vocabulary
(its card: "original" = written by the model, "corrected" = corrected by human annotators)."""
from __future__ import annotations

import json

import datasets

from babelrag.records import HumanReview, HumanVotes, QAItem, Translation
from babelrag.release.build import build_release
from babelrag.release.export import export_release
from babelrag.release.loaders.xrag import load_xrag
from tests.helpers.release_fixtures import make_build, make_config, make_records


def test_answer_type_from_the_review_and_the_translation():
    review = HumanReview(passed=True, votes=HumanVotes(natural="yes", answerable="yes", answer_correct="no"),
                         original_answer="the model's answer")
    base = QAItem(id="q", pair_id="p", article_ids=["a", "b"], q_type="set", question="Q?", answer="A.",
                  translations=[Translation(language="de", question="F?", answer="A.", machine_translated=False),
                                Translation(language="zh", question="问?", answer="答.")])
    assert [base.answer_type(lang) for lang in ("en", "de", "zh")] == ["original", "human_translated", "original"]
    corrected = base.model_copy(update={"human_review": review})
    assert {corrected.answer_type(lang) for lang in ("en", "de", "zh")} == {"human_corrected"}


def test_a_type_reaches_the_release_the_card_and_the_exports(tmp_path):
    """Before: a_type stayed "original" on human-corrected answers (release and XRAG export)."""
    _, _, instances = make_records()
    mono_de = sorted(i.id for i in instances if i.setting == "mono" and i.language == "de")
    kinds = {mono_de[0]: "human_corrected", mono_de[1]: "human_translated"}
    instances = [i.model_copy(update={"a_type": kinds.get(i.id, "original")}) for i in instances]
    make_build(tmp_path / "build", instances=instances)
    folder = build_release(make_config(tmp_path)).folder

    ds = datasets.load_dataset(str(folder), "mono-de")
    released = {r["id"]: r["a_type"] for split in ds.values() for r in split}
    assert {rid: released[rid] for rid in kinds} == kinds
    card = (folder / "README.md").read_text(encoding="utf-8")
    n = len(instances)
    assert f"Gold answers (released rows by `a_type`): {n - 2} `original`, 1 `human_corrected`, 1 `human_translated`" in card

    export_release(folder, tmp_path / "x", "xrag")
    rows = {r["id"]: r for p in (tmp_path / "x" / "mono-de").glob("xrag.*.jsonl")
            for r in map(json.loads, p.read_text(encoding="utf-8").splitlines())}
    assert rows[mono_de[0]]["a_type"] == "corrected" and rows[mono_de[1]]["a_type"] == "original"
    back = {i.id: i for p in (tmp_path / "x" / "mono-de").glob("xrag.*.jsonl") for i in load_xrag(p, language="de")}
    assert back[mono_de[0]].a_type == "human_corrected"  # XRAG's "corrected" read back in our vocabulary

    result = export_release(folder, tmp_path / "beir", "beir")
    queries = {q["_id"]: q for p in result.written if p.name == "mono-de"
               for q in map(json.loads, (p / "queries.jsonl").read_text(encoding="utf-8").splitlines())}
    assert {rid: queries[rid]["metadata"]["a_type"] for rid in kinds} == kinds
