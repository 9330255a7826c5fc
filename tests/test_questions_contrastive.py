"""Contrastive pairs: the three kinds, seeded positions, failures kept, the CLI entry point on a build."""
import json
import re

import pytest

from babelrag.config import load_config
from babelrag.construct.contrastive import ChunkQuestion, build_pairs, chunk_questions, write_contrastive_pairs
from babelrag.llm.client import LLMRunner
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.records import Article, ContrastivePair, QAItem, SimpleQA
from babelrag.testing.scripted_server import ScriptedServer
from tests.helpers.qa_fixtures import corpus, seed_stage


def model(body):
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "GARBLE" in text:
        return "no json here"
    if text.startswith("Context:"):
        return {"answer": "Lumen Bank opened an office in Porto."}
    if text.startswith("Question without context"):
        return {"answer": "I believe it opened in Lisbon."}
    style = re.search(r"<(evasive|partial) answer>", text).group(1)
    return {"answer": "Banks open offices in many cities." if style == "evasive" else "An office."}


def runner(srv):
    return LLMRunner(LLMSettings(endpoints={"g": EndpointConfig(base_url=srv.base_url, model="scripted",
                                                                max_retries=0)}, progress=False), cache_dir=None)


ITEMS = [ChunkQuestion(f"c{i}", "Where did Lumen Bank open an office?", "Lumen Bank opened an office in Porto.")
         for i in range(6)] + [ChunkQuestion("bad", "GARBLE where?", "Some chunk.")]
PAGES = [("u1", "A story about the football cup final."), ("u2", "A new pasta recipe.")]


def test_three_kinds_with_seeded_positions_and_kept_failures():
    with ScriptedServer(model) as srv:
        pairs, errors = build_pairs(runner(srv), ITEMS, PAGES, seed=5)
        again, _ = build_pairs(runner(srv), ITEMS, PAGES, seed=5)
    assert pairs == again  # deterministic given the seed
    kinds = [p.kind for p in pairs]
    assert kinds.count("context_relevance") == 7 and kinds.count("faithfulness") == 6
    assert kinds.count("answer_relevance") == 6
    assert {e[0] for e in errors} == {"bad"} and "invalid_json" in errors[0][1]
    for p in pairs:
        good, worse = (p.option_a, p.option_b) if p.better == "a" else (p.option_b, p.option_a)
        if p.kind == "faithfulness":
            assert good == "Lumen Bank opened an office in Porto." and "Lisbon" in worse
        elif p.kind == "answer_relevance":
            assert good == "Lumen Bank opened an office in Porto." and worse in (
                "Banks open offices in many cities.", "An office.")
            assert p.detail in ("evasive", "partial") and p.provenance.prompt_id == "contrastive.evasive"
        else:
            assert worse.startswith(good + "\n\n") and p.detail in ("unrelated:u1", "unrelated:u2")
    assert {p.better for p in pairs} == {"a", "b"}  # both positions occur


def test_cli_entry_point_reads_a_build(tmp_path, monkeypatch, capsys):
    build = tmp_path / "build"
    arts = corpus()
    seed_stage(build, "ingest", list(arts.values()), Article)
    qa = QAItem(id="q1", pair_id="p", article_ids=["a1", "a2"], q_type="multi-hop", question="Q?", answer="A",
                selected=[SimpleQA(article_id="a1", question="Where did Lumen Bank open an office?", answer="Porto")])
    seed_stage(build, "filters", [qa, qa.model_copy(update={"id": "q2", "accepted": False})], QAItem)
    items = chunk_questions([qa], arts)
    assert [(i.id, i.question) for i in items] == [("q1:0", "Where did Lumen Bank open an office?")]
    assert items[0].chunk.startswith("Lumen Bank opens office in Porto\n")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"project: {{build_dir: {build}}}\n")
    out = tmp_path / "pairs.jsonl"
    summary = write_contrastive_pairs(load_config(cfg), out, kinds=["context_relevance"])
    assert summary["written"] == 1 and summary["by_kind"]["context_relevance"] == 1
    rows = [ContrastivePair.model_validate(json.loads(x)) for x in out.read_text().splitlines()]
    assert len(rows) == 1 and rows[0].kind == "context_relevance" and rows[0].source_id == "q1:0"
    unrelated = rows[0].detail.removeprefix("unrelated:")
    assert unrelated not in ("a1", "a2") and arts[unrelated].language == "en"
    # the same through the `babelrag construct contrastive` command: identical file (seeded)
    from typer.testing import CliRunner

    from babelrag.cli import app

    via_cli = tmp_path / "cli.jsonl"
    res = CliRunner().invoke(app, ["construct", "contrastive", "-c", str(cfg), "-o", str(via_cli),
                                   "--kinds", "context_relevance"])
    assert res.exit_code == 0, res.output
    assert via_cli.read_bytes() == out.read_bytes()
    # a bad config through the real entry point: one line naming the file, exit code 2
    import sys

    from babelrag.cli import main

    monkeypatch.setattr(sys, "argv", ["babelrag", "construct", "contrastive", "-c", str(tmp_path / "nope.yaml"),
                                      "-o", str(via_cli)])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2 and "nope.yaml" in capsys.readouterr().err
