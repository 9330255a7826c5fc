"""Push input checks without a server: decoding, text, required fields, duplicate ids, sizes (issue 24, B1-B4).

Every problem is found before the first request and reported together by record id (exit 2). The
checks against a dataset already on the server, and a push interrupted midway, run against the real
server in test_annotate_safety.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from babelrag.annotate import input_checks as ic
from babelrag.annotate import projects, samples, stored
from babelrag.annotate.settings import AnnotateSettings
from babelrag.errors import InputError
from babelrag.rows import iter_jsonl, read_rows


def _mixed_file(tmp_path: Path) -> Path:
    """Line 1 in UTF-8 (non-ASCII), line 2 appended by a Latin-1 tool: no one encoding reads both."""
    path = tmp_path / "mixed.jsonl"
    good = json.dumps({**samples.model_answers(1)[0], "answer": "Zürich"}, ensure_ascii=False) + "\n"
    bad = json.dumps({**samples.model_answers(2)[1], "answer": "café"}, ensure_ascii=False) + "\n"
    path.write_bytes(good.encode("utf-8") + bad.encode("latin-1"))
    return path


def test_a_file_mixing_encodings_names_file_line_and_byte_and_a_latin1_file_is_decoded(tmp_path):
    path = _mixed_file(tmp_path)
    with pytest.raises(InputError) as err:
        read_rows(path)
    msg = str(err.value)
    assert f"{path}:2: byte 0xe9 at column" in msg and "is not UTF-8, although line 1 is" in msg
    with pytest.raises(InputError):  # the whole file is refused: a counting reader too gets no half-decoded rows
        list(iter_jsonl(path, keep_bad=True))
    latin = tmp_path / "latin1.jsonl"
    latin.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in samples.model_answers(2))
                      .replace("Lisbon", "Lisboa (Portugal, capitale économique)").encode("latin-1"))
    assert any("économique" in str(r) for r in read_rows(latin))  # detected (windows-1252) and decoded


def _bad_answers() -> list[dict]:
    rows = samples.model_answers(5)
    rows[0]["answer"] = "Lisbon \ud800 maybe"  # a lone surrogate (what json.loads makes of "\ud800")
    rows[1]["question"] = "   "  # required field, blank
    rows[2]["gold_answer"] = "Lis\x07bon"  # a control character
    rows[3]["id"] = rows[0]["id"]  # a duplicate id, far from the first
    rows[4]["answer"] = "x" * (ic.MAX_FIELD_CHARS + 1)
    return rows


def test_every_problem_is_found_and_reported_together_by_record_id():
    records = projects.build_records("answer_judgement", _bad_answers(), AnnotateSettings())
    problems = ic.check_input(records, projects.spec("answer_judgement"))
    found = {(p.record_id, p.where, p.message.split(" ")[0]) for p in problems}
    assert ("ans1", "field model_answer", "lone") in found
    assert ("ans2", "field question", "empty,") in found
    assert ("ans3", "field gold_answer", "control") in found
    assert ("ans1", "id", "appears") in found  # duplicate: both positions named
    assert ("ans5", "field model_answer", f"{ic.MAX_FIELD_CHARS + 1:,}") in found
    with pytest.raises(InputError) as err:
        ic.raise_problems(problems, "answers.jsonl", "babelrag-answer-judgement")
    msg = str(err.value)
    assert "5 problem(s) in 4 record(s); nothing was pushed to babelrag-answer-judgement" in msg
    assert "record ans1: id: appears 2 times (records 1, 4)" in msg
    assert "U+D800 at character 8" in msg and "U+0007 at character 4" in msg
    assert ic.check_input(projects.build_records("answer_judgement", samples.model_answers(5), AnnotateSettings()),
                          projects.spec("answer_judgement")) == []


def test_schema_errors_of_all_records_come_in_one_message():
    rows = samples.model_answers(3)
    rows[0]["judge_verdict"] = "maybe"
    del rows[2]["question"]
    with pytest.raises(InputError) as err:
        projects.build_records("answer_judgement", rows, AnnotateSettings())
    msg = str(err.value)
    assert "record ans1: judge_verdict" in msg and "record ans3: question: Field required" in msg
    assert "(2 bad records)" in msg


def test_records_already_on_the_server_are_skipped_when_equal_refused_when_changed_unless_update():
    records = projects.build_records("answer_judgement", samples.model_answers(3), AnnotateSettings())
    existing = {r.id: stored.content(r) for r in records[:3]}
    existing["ans2"] = replace(existing["ans2"], fields={**existing["ans2"].fields, "model_answer": "something else"})
    existing["ans3"] = replace(existing["ans3"], metadata={**existing["ans3"].metadata, "model": "another-model"})
    problems = ic.existing_problems(records, existing, update=False)
    assert [(p.record_id, "--update" in p.message) for p in problems] == [("ans2", True), ("ans3", True)]
    assert ic.existing_problems(records, existing, update=True) == []
    # a re-judged verdict changes only a suggestion: that is other content too
    rejudged = projects.build_records("answer_judgement", samples.model_answers(3), AnnotateSettings.model_validate(
        {"projects": {"answer_judgement": {"suggestions": "preselect"}}}))
    held = {r.id: stored.content(r) for r in rejudged}
    rejudged[0].suggestions[0].value = "incorrect" if rejudged[0].suggestions[0].value == "correct" else "correct"
    assert [p.record_id for p in ic.existing_problems(rejudged, held, update=False)] == ["ans1"]
    assert [r.id for r in stored.changed(rejudged, held)] == ["ans1"]


def test_cli_push_of_bad_input_exits_2_with_every_problem_before_connecting(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _bad_answers()))  # ensure_ascii: "\ud800" escapes
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "ARGILLA_API_URL": "http://127.0.0.1:9",
           "ARGILLA_API_KEY": "unused"}  # a port nothing listens on: any request would fail differently
    done = subprocess.run([sys.executable, "-m", "babelrag.cli", "annotate", "push", "answer_judgement",
                           "--input", str(path)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    for rid in ("ans1", "ans2", "ans3", "ans5"):
        assert f"record {rid}:" in done.stderr
    mixed = _mixed_file(tmp_path)
    done = subprocess.run([sys.executable, "-m", "babelrag.cli", "annotate", "push", "answer_judgement",
                           "--input", str(mixed)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and f"{mixed}:2: byte 0xe9" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr



def test_a_failed_model_call_in_answers_jsonl_is_a_counted_skip_not_an_input_error():
    """evaluate run writes a failed call as ok: false with an empty answer: nothing to judge, so push leaves it
    out and says how many, while the other answers pass the checks (an empty answer of an ok call still fails)."""
    from babelrag.annotate import registry

    rows = samples.model_answers(3)
    rows[1].update(answer="", ok=False, error="http 404")
    recs = projects.build_records("answer_judgement", rows, AnnotateSettings())
    assert [r.id for r in recs] == ["ans1", "ans3"]
    assert ic.check_input(recs, projects.spec("answer_judgement")) == []
    assert registry.get("answer_judgement").skipped(rows) == {"model call failed (ok: false), nothing to judge": 1}
    rows[1]["ok"] = True
    problems = ic.check_input(projects.build_records("answer_judgement", rows, AnnotateSettings()),
                              projects.spec("answer_judgement"))
    assert [p.record_id for p in problems] == ["ans2"]
