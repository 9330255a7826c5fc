"""What ``evaluate run`` promises a researcher: the split it scores, strict results.json, loud failures."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from babelrag.evaluators.answers import read_answers
from babelrag.testing.scripted_server import Fault, ScriptedServer
from tests.test_eval_runner import _instances, brain

BIN = Path(sys.executable).parent / "babelrag"


def _reject(token):
    raise ValueError(f"non-strict JSON token {token}")


def strict_load(path):
    """results.json as a browser's JSON.parse reads it: NaN / Infinity are errors."""
    return json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=_reject)


def _write_release(folder, splits):
    """``splits``: split -> instances; every instance under config mono-<language>."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for split, instances in splits.items():
        for lang in sorted({i.language for i in instances}):
            path = folder / "data" / f"mono-{lang}" / f"{split}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist([i.model_dump() for i in instances if i.language == lang]), path)
    (folder / "release.json").write_text(json.dumps({"name": "split-bench", "version": "1.0.0"}))


def _config(tmp_path, server, models=("good",)):
    ep = {"base_url": server.base_url, "timeout_s": 2, "max_retries": 0}
    cfg = {
        "project": {"name": "t", "build_dir": str(tmp_path / "build"), "seed": 5},
        "llm": {"endpoints": {"good": {**ep, "model": "served-good"}, "weak": {**ep, "model": "served-weak"},
                              "judge-1": {**ep, "model": "judge-a"}}, "default_endpoint": "good", "progress": False},
        "evaluate": {"models": list(models), "judges": ["judge-1"], "out_dir": "eval"},
    }
    path = tmp_path / "babelrag.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def released(tmp_path, server, instances, metrics=None, models=("good",)):
    """(release folder, config path): a release whose test split holds ``instances``, and a config evaluating
    ``models`` on it through ``server`` (``metrics``: evaluate.metrics, default the config's default)."""
    release = tmp_path / "release"
    _write_release(release, {"test": instances})
    cfg = _config(tmp_path, server, models)
    if metrics is not None:
        data = yaml.safe_load(cfg.read_text())
        data["evaluate"]["metrics"] = list(metrics)
        cfg.write_text(yaml.safe_dump(data))
    return release, cfg


def _cli(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _split_release(tmp_path):
    insts = _instances()
    test = [i for i in insts if i.id.startswith(("i0", "i1"))]
    dev = [i.model_copy(update={"id": i.id + "-dev", "qa_id": i.qa_id + "-dev"}) for i in insts if i.id.startswith("i2")]
    release = tmp_path / "release"
    _write_release(release, {"test": test, "dev": dev})
    return release, test, dev


def test_split_is_chosen_recorded_and_never_mixed(eval_server, tmp_path):
    release, test, dev = _split_release(tmp_path)
    cfg = _config(tmp_path, eval_server)
    res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "t", "--rounds", "20")
    assert res.returncode == 0, res.stderr
    data = strict_load(tmp_path / "t" / "results.json")
    assert data["run"]["split"] == "test" and data["run"]["configs"] == ["mono-de", "mono-zh"]
    assert data["run"]["dataset"] == "split-bench" and data["run"]["dataset_revision"] == "1.0.0"
    assert {a.instance_id for a in read_answers(tmp_path / "t" / "answers.jsonl")} == {i.id for i in test}
    assert "split: test" in (tmp_path / "t" / "report.html").read_text()

    res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "d", "--split", "dev", "--rounds", "20")
    assert res.returncode == 0, res.stderr
    assert strict_load(tmp_path / "d" / "results.json")["run"]["split"] == "dev"
    assert {a.instance_id for a in read_answers(tmp_path / "d" / "answers.jsonl")} == {i.id for i in dev}

    res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "x", "--split", "train")
    assert res.returncode == 2 and "has no split 'train'; it has dev, test" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "x").exists()


def test_without_test_split_the_only_split_or_a_named_error(eval_server, tmp_path):
    from babelrag.errors import InputError
    from babelrag.evaluators.release_reader import choose_split

    insts = _instances()
    _write_release(tmp_path / "one", {"dev": insts})
    assert choose_split(tmp_path / "one") == "dev"
    _write_release(tmp_path / "two", {"dev": insts[:2], "train": insts[2:]})
    with pytest.raises(InputError, match="splits dev, train and none is 'test'; choose the one to score with --split"):
        choose_split(tmp_path / "two")
    assert choose_split(tmp_path / "two", "train") == "train"


def test_results_json_is_strict_json_with_null_for_undefined(tmp_path):
    from babelrag.evaluators.report import ReportInputs, run_info, write_report
    from babelrag.stats import Estimate

    nan = float("nan")
    paths = write_report(tmp_path, ReportInputs(
        title="t", info=run_info("d", "r", {"x": nan}), sort_by="accuracy",
        scores={"m": {"accuracy": Estimate(0.5, 0.4, 0.6, 10), "citation_recall": Estimate(nan, nan, nan, 0)}},
        extra={"items": [{"query_id": "q", "recall": nan, "inf": float("inf")}]}))
    data = strict_load(paths["json"])
    assert data["scores"]["m"]["citation_recall"]["value"] is None
    assert data["leaderboard"][0]["citation_recall"] is None and data["leaderboard"][0]["accuracy"] == 0.5
    assert data["items"][0] == {"query_id": "q", "recall": None, "inf": None}
    assert data["run"]["settings"]["x"] is None


def _failing(share_of):
    """Models answer through ``brain``, except that ``share_of(question)`` decides which get a 404."""
    def handler(body):
        user = body["messages"][-1]["content"]
        if body["model"].startswith("served") and share_of(body["model"], user):
            return Fault("404", message="model not found")
        return brain(body)
    return handler


def test_every_answer_failing_exits_non_zero_naming_endpoint_and_error(tmp_path):
    release, _, _ = _split_release(tmp_path)
    with ScriptedServer(_failing(lambda model, user: model == "served-weak")) as srv:
        cfg = _config(tmp_path, srv, models=("good", "weak"))
        res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "o", "--rounds", "20")
    assert res.returncode == 2, res.stdout + res.stderr
    err = res.stderr
    assert "no answer could be produced" in err and "model 'weak'" in err and srv.base_url in err
    assert "404" in err and "4 of 4 answers failed" in err and "Traceback" not in err
    assert (tmp_path / "o" / "answers.jsonl").exists() and not (tmp_path / "o" / "results.json").exists()


def test_a_model_failing_above_the_share_is_warned_in_console_and_results(tmp_path):
    release, _, _ = _split_release(tmp_path)
    with ScriptedServer(_failing(lambda model, user: model == "served-weak" and "(0)" in user)) as srv:
        cfg = _config(tmp_path, srv, models=("good", "weak"))
        res = _cli("evaluate", "run", release, "-c", cfg, "--out", tmp_path / "o", "--rounds", "20")
    assert res.returncode == 3, res.stderr  # incomplete: the report is written, a re-run retries the failed calls
    data = strict_load(tmp_path / "o" / "results.json")
    assert len(data["warnings"]) == 1 and data["warnings"][0].startswith("model 'weak'")
    assert "2 of 4 answers failed" in data["warnings"][0] and "(50%" in data["warnings"][0]
    assert "warning:" in res.stderr and "model 'weak'" in res.stderr
    assert (data["counts"]["weak"]["answers"], data["counts"]["weak"]["generation_failed"]) == (4, 2)
