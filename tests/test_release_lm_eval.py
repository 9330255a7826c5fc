"""`release export --format lm-eval`: the task folder run by the real lm-evaluation-harness (`lm_eval`, its
local-chat-completions model) against the scripted OpenAI-compatible server; its numbers match babelrag's
own citation metric on the same answers."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from babelrag.evaluators.release_reader import load_instances
from babelrag.release.export import export_release
from babelrag.testing.scripted_server import ScriptedServer
from tests.test_eval_release_e2e import release_brain, release_folder  # noqa: F401 - fixture

LM_EVAL = Path(sys.executable).parent / "lm_eval"


def _run_lm_eval(tasks_dir, task, base_url, model, out):
    cmd = [str(LM_EVAL), "--model", "local-chat-completions", "--model_args",
           f"model={model},base_url={base_url}/chat/completions,num_concurrent=1,max_retries=1,timeout=30",
           "--tasks", task, "--include_path", str(tasks_dir), "--apply_chat_template", "--output_path", str(out),
           "--log_samples"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(out / "hf"),
           "TOKENIZERS_PARALLELISM": "false"}
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    results = next(out.rglob("results_*.json"))
    return json.loads(results.read_text())


def test_lm_eval_runs_the_exported_tasks_against_an_openai_compatible_endpoint(tmp_path, release_folder):  # noqa: F811
    result = export_release(release_folder, tmp_path / "tasks", "lm-eval")
    assert sorted(p.name for p in (tmp_path / "tasks").iterdir()) == sorted(
        [f"{p.name}.yaml" for p in result.written] + ["utils.py"])
    assert "no-retrieval-de" in result.skipped  # no documents to show: skipped with a note, no task
    instances = load_instances(release_folder)
    brain, seen = release_brain(instances), []

    def recording(body):
        seen.append(body["messages"])
        return brain(body)

    with ScriptedServer(recording) as srv:
        good = _run_lm_eval(tmp_path / "tasks", "babelrag_demo_bench_mono_de", srv.base_url, "served-good",
                            tmp_path / "good")
        weak = _run_lm_eval(tmp_path / "tasks", "babelrag_demo_bench_mono_de", srv.base_url, "served-weak",
                            tmp_path / "weak")
    # lm-eval sent babelrag's own citation prompt: documents in evaluate run's seeded order, numbered [n]
    from babelrag.evaluators.answers import document_order, render_documents
    from babelrag.evaluators.judges import prompt

    p = prompt("answer_citations")
    inst = next(i for i in instances if i.setting == "mono" and i.language == "de" and
                any(i.question in m[-1]["content"] for m in seen))
    sent = next(m[-1]["content"] for m in seen if inst.question in m[-1]["content"])
    expected = p.system.strip() + "\n\n" + p.user.format(documents=render_documents(document_order(inst, 0)),
                                                          question=inst.question).strip()
    assert sent == expected
    g = good["results"]["babelrag_demo_bench_mono_de"]
    w = weak["results"]["babelrag_demo_bench_mono_de"]
    test_rows = [i for i in load_instances(release_folder, configs=["mono-de"], split="test")]
    assert good["n-samples"]["babelrag_demo_bench_mono_de"]["effective"] == len(test_rows)
    # served-good answers the gold answer and cites exactly the supporting documents it was shown
    assert g["token_f1,none"] == pytest.approx(1.0)
    assert g["citation_precision,none"] == pytest.approx(1.0) and g["citation_recall,none"] == pytest.approx(1.0)
    assert w["token_f1,none"] < 0.3 and w["citation_recall,none"] < 1.0
