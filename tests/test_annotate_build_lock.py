"""`annotate push` and `annotate pull` write into the build (audit files, suggestions, the highlight vector
cache, pulled responses): they hold the build's lock, so while another process writes the build they stop at
once with exit 2 naming the holder, before reading input or connecting to Argilla. Before: they wrote
alongside it."""
import subprocess
import sys

from babelrag.build_layout import LOCK_FILE
from tests.helpers.count_cli import ROOT, env, run_babelrag, wait_for, write_config

HOLD = "import sys, time; from babelrag.build_lock import build_lock\nwith build_lock(sys.argv[1]):\n    time.sleep(120)"


def test_push_and_pull_are_refused_while_another_process_writes_the_build(tmp_path):
    build = tmp_path / "build"
    config = write_config(tmp_path, build)
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"instance_id": "i0", "model": "m", "answer": "Brussels."}\n', encoding="utf-8")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(build)], cwd=ROOT, env=env())
    try:
        wait_for(lambda: (build / LOCK_FILE).exists() and str(holder.pid) in (build / LOCK_FILE).read_text(),
                 what="the holder's lock")
        for args in (("push", "answer_judgement", "-i", str(answers)), ("pull",), ("pull", "answer_judgement")):
            res = run_babelrag("annotate", *args, "-c", str(config))
            assert res.returncode == 2, (args, res.stdout, res.stderr)
            assert f"in use by pid {holder.pid}" in res.stderr and "Traceback" not in res.stderr, args
        assert not (build / "annotate").exists()
    finally:
        holder.kill()
        holder.wait()
