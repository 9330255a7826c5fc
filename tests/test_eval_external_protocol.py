"""External benchmarks scored in their own protocol: GaRAGe's published passage order and [cite_N] labels,
XRAG's article order, GaRAGe's date forms; the published human answers replayed through `evaluate run
--answers` (fixtures: tests/fixtures/external/README.md)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from babelrag.errors import InputError
from babelrag.evaluators.answers import document_order, generate_answers
from babelrag.evaluators.release_reader import load_instances
from babelrag.release.external import convert_external
from babelrag.release.layout import read_info
from babelrag.release.loaders import is_no_date, iso_date
from babelrag.release.protocol import OURS, Protocol
from babelrag.testing.scripted_server import ScriptedServer

FIX = Path(__file__).parent / "fixtures" / "external"
BIN = Path(sys.executable).parent / "babelrag"


def _cli(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _strict(path):
    def reject(token):
        raise ValueError(token)
    return json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=reject)


def _garage_file(tmp_path):
    """Both GaRAGe fixtures in one file, as the released data set is one file."""
    path = tmp_path / "GaRAGe_benchmark.jsonl"
    path.write_text((FIX / "garage.jsonl").read_text(encoding="utf-8") + (FIX / "garage_dates.jsonl").read_text(
        encoding="utf-8"), encoding="utf-8")
    return path


@pytest.mark.parametrize("raw, iso, none", [
    ("Published date: 2025-02-14", "2025-02-14", False), ("Published 2024-02-12T07:45:00", "2024-02-12", False),
    ("Published: March 4, 2024", "2024-03-04", False), ("Published on 9 Sep 2024", "2024-09-09", False),
    ("N/A", "", True), ("not defined", "", True), ("Published date: N/A", "", True), ("", "", True),
    ("Published sometime last spring", "", False),
])
def test_every_published_date_form_is_parsed_or_named_no_date(raw, iso, none):
    assert iso_date(raw) == iso
    assert is_no_date(raw) is none


def test_converted_garage_counts_undated_passages_and_validates(tmp_path):
    res = convert_external(FIX / "garage_dates.jsonl", "garage", tmp_path / "rel")
    assert res.warnings == {"passages with no date (N/A, not defined, empty; published left empty)": 5}
    inst = {i.id: i for i in load_instances(tmp_path / "rel")}["d1-published-date-label"]
    assert [d.published for d in inst.documents] == ["2025-02-14", "", "2025-02-20", ""]
    assert inst.dates == ["2025-02-14", "2025-02-20"]
    out = _cli("release", "validate", "--folder", tmp_path / "rel")
    assert out.returncode == 0, out.stdout + out.stderr
    # the same passages in one of our own releases (not converted) are still a schema violation
    info = json.loads((tmp_path / "rel" / "release.json").read_text())
    del info["source_format"]
    (tmp_path / "rel" / "release.json").write_text(json.dumps(info))
    out = _cli("release", "validate", "--folder", tmp_path / "rel")
    assert out.returncode != 0 and "is not an ISO date" in out.stdout


def test_converted_releases_record_their_published_protocol(tmp_path):
    convert_external(_garage_file(tmp_path), "garage", tmp_path / "g")
    assert Protocol.from_info(read_info(tmp_path / "g")) == Protocol("published", "cite_{n}",
                                                                    Protocol.from_info(read_info(tmp_path / "g")).reference)
    convert_external(FIX / "xrag.jsonl", "xrag", tmp_path / "x")
    xrag = Protocol.from_info(read_info(tmp_path / "x"))
    assert (xrag.document_order, xrag.citation_label) == ("published", "{n}")
    for inst in load_instances(tmp_path / "x"):  # XRAG: articles as released, never shuffled
        assert [d.article_id for d in inst.documents] == [f"{inst.id}#{k}" for k in range(len(inst.documents))]
        assert document_order(inst, 7, xrag) == inst.documents
    assert Protocol.from_info({"name": "ours"}) == OURS
    with pytest.raises(InputError, match="must contain"):
        Protocol.from_info({"protocol": {"document_order": "published", "citation_label": "cite"}})


def test_garage_prompt_shows_published_order_with_cite_keys(tmp_path):
    from babelrag.llm.client import LLMRunner
    from babelrag.llm.settings import EndpointConfig, LLMSettings

    convert_external(_garage_file(tmp_path), "garage", tmp_path / "g")
    protocol = Protocol.from_info(read_info(tmp_path / "g"))
    insts = sorted(load_instances(tmp_path / "g"), key=lambda i: i.id)
    seen = []

    def model(body):
        seen.append(body["messages"])
        keys = re.findall(r"^\[(cite_\d+)\] ", body["messages"][-1]["content"], re.M)
        return f"An answer.[{keys[0]}]"

    with ScriptedServer(model) as srv:
        ep = dict(base_url=srv.base_url, timeout_s=2, max_retries=0)
        runner = LLMRunner(LLMSettings(endpoints={"m": EndpointConfig(model="served-m", **ep)}, progress=False),
                           tmp_path / "cache")
        answers = generate_answers(runner, insts, ["m"], seed=3, protocol=protocol)
    for inst, a in zip(insts, answers):
        assert a.doc_order == [d.article_id for d in inst.documents]  # published order, whatever the seed
        assert a.prompt_id == "eval.answer.citations_keys"
    user = [m[-1]["content"] for m in seen]
    system = seen[0][0]["content"]
    assert "e.g. [cite_1] or [cite_2][cite_3]" in system
    for inst in insts:
        text = next(u for u in user if inst.question in u)
        assert re.findall(r"^\[(cite_\d+)\] ", text, re.M) == [f"cite_{k}" for k in range(1, len(inst.documents) + 1)]
        assert [text.index(d.text) for d in inst.documents] == sorted(text.index(d.text) for d in inst.documents)
    # our own releases keep the seeded shuffle, numbered [1]..[n]
    assert OURS.label(2) == "2" and OURS.document_order == "shuffled"


def _judges(body):
    user = body["messages"][-1]["content"]
    if '{"deflected"' in user:
        return {"deflected": "cannot be answered" in user}
    if "major_issues" in user:
        return {"eligible": True}
    if "Sentences:" in user:
        return {"support": [["1"] for _ in re.findall(r"^\d+\. ", user.split("Sentences:")[1], re.M)]}
    return {"correct": True, "reason": "scripted"}


def _replay(tmp_path, release, answers_lines, name):
    ans = tmp_path / f"{name}.jsonl"
    ans.write_text("".join(json.dumps(a, ensure_ascii=False) + "\n" for a in answers_lines), encoding="utf-8")
    with ScriptedServer(_judges) as srv:
        ep = {"base_url": srv.base_url, "timeout_s": 2, "max_retries": 0}
        cfg = {"project": {"name": "t", "build_dir": str(tmp_path / "build")},
               "llm": {"endpoints": {"judge-1": {**ep, "model": "judge-a"}}, "default_endpoint": "judge-1",
                       "progress": False},
               "evaluate": {"judges": ["judge-1"], "metrics": ["citations", "garage"]}}
        (tmp_path / "babelrag.yaml").write_text(yaml.safe_dump(cfg))
        res = _cli("evaluate", "run", release, "-c", tmp_path / "babelrag.yaml", "--answers", ans,
                   "--out", tmp_path / name, "--rounds", "50")
    assert res.returncode == 0, res.stdout + res.stderr
    return _strict(tmp_path / name / "results.json")


def test_published_human_answers_replayed_verbatim_score_full_attribution(tmp_path):
    """The done criterion of issue 25: GaRAGe's human answers, verbatim, on a converted GaRAGe release."""
    convert_external(_garage_file(tmp_path), "garage", tmp_path / "g")
    published = {json.loads(line)["sample_id"]: json.loads(line)["answer_generate"]
                 for f in ("garage.jsonl", "garage_dates.jsonl") for line in (FIX / f).read_text().splitlines()}
    insts = load_instances(tmp_path / "g")
    human = [{"instance_id": i.id, "model": "human", "answer": published[i.id]} for i in insts]
    data = _replay(tmp_path, tmp_path / "g", human, "human")
    garage = data["metrics"]["human"]["garage"]["aggregate"]
    assert garage["attribution_precision"]["value"] >= 0.95
    assert 0.85 <= garage["attribution_recall"]["value"] < 1.0  # d2 cites two of its three answering passages
    assert data["run"]["settings"]["protocol"]["citation_label"] == "cite_{n}"
    assert data["run"]["settings"]["models"] == {"human": f"answers file {tmp_path / 'human.jsonl'}"}
    # the same answers read against a shuffled order (what evaluation did before) lose their attribution
    shuffled = [{**h, "doc_order": [d.article_id for d in document_order(i, 0, OURS)]} for h, i in zip(human, insts)]
    worse = _replay(tmp_path, tmp_path / "g", shuffled, "shuffled")["metrics"]["human"]["garage"]["aggregate"]
    assert worse["attribution_precision"]["value"] < garage["attribution_precision"]["value"]


def test_answers_file_problems_are_named_by_line_and_field(tmp_path):
    from babelrag.evaluators.answers_file import read_answers_file

    convert_external(FIX / "garage.jsonl", "garage", tmp_path / "g")
    insts = load_instances(tmp_path / "g")
    iid = insts[0].id
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([
        json.dumps({"instance_id": iid, "model": "mine", "answer": "ok [cite_1]"}),
        json.dumps({"instance_id": "nope", "model": "mine", "answer": "x"}),
        json.dumps({"instance_id": iid, "answer": "x"}),
        json.dumps({"instance_id": iid, "model": "mine", "answer": "again"}),
        json.dumps({"instance_id": iid, "model": "other", "answer": "x", "doc_order": ["zzz"]}),
        "{broken",
    ]) + "\n")
    with pytest.raises(InputError) as err:
        read_answers_file(bad, insts)
    msg = str(err.value)
    assert "5 invalid answer line(s)" in msg
    assert f"bad.jsonl:2: unknown instance_id 'nope'" in msg
    assert "bad.jsonl:3: missing field 'model'" in msg
    assert f"bad.jsonl:4: model 'mine' answers instance '{iid}' again (first on line 1)" in msg
    assert "bad.jsonl:5: doc_order names ['zzz']" in msg
    assert "bad.jsonl:6: not valid JSON" in msg
    (tmp_path / "good.jsonl").write_text(json.dumps({"instance_id": iid, "model": "mine", "answer": "ok [cite_1]"}) + "\n")
    rec = read_answers_file(tmp_path / "good.jsonl", insts)[0]
    assert rec.doc_order == [d.article_id for d in insts[0].documents] and rec.style == "citations"
    assert rec.relevant == [k for k, d in enumerate(insts[0].documents, 1) if d.role == "supporting"]


def test_cli_answers_file_errors_exit_2_naming_line_and_fix(tmp_path):
    convert_external(FIX / "garage.jsonl", "garage", tmp_path / "g")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"instance_id": "nope", "model": "mine", "answer": "x"}) + "\n")
    cfg = {"project": {"name": "t", "build_dir": str(tmp_path / "build")},
           "llm": {"endpoints": {"judge-1": {"base_url": "http://127.0.0.1:9/v1", "model": "j"}},
                   "default_endpoint": "judge-1", "progress": False},
           "evaluate": {"judges": ["judge-1"]}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    res = _cli("evaluate", "run", tmp_path / "g", "-c", tmp_path / "c.yaml", "--answers", bad, "--out", tmp_path / "o")
    assert res.returncode == 2 and f"{bad}:1: unknown instance_id 'nope'" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "o").exists()
    both = _cli("evaluate", "run", tmp_path / "g", "-c", tmp_path / "c.yaml", "--answers", bad, "--model", "judge-1",
                "--out", tmp_path / "o")
    assert both.returncode == 2 and "give no --model" in both.stderr
