"""Progress in a log (stdout and stderr piped, as in CI or `make demo > log 2>&1`): plain lines that name the
step, done/total and a rate, at most one per interval per progress, and no carriage-return redraws.

The child process runs the real producers: a stage-style `track` over batches on the CLI's console, each batch an
`LLMRunner.map_text` call (its own progress) against the scripted OpenAI-compatible server, then one fast map of
many items (a redrawing bar would print an update per refresh there).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

EVERY_S = 0.3
BATCHES, PER_BATCH, FAST_ITEMS = 4, 5, 150

CHILD = f"""
from babelrag.console import make_console, track
from babelrag.llm.client import LLMRunner
from babelrag.llm.prompts import Prompt
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.testing.scripted_server import Faults, ScriptedServer

prompt = Prompt(id="probe", version="1", user="Say something about item {{i}}.")
with ScriptedServer(faults=Faults(latency_s=0.06)) as srv:
    settings = LLMSettings(endpoints={{"gen": EndpointConfig(base_url=srv.base_url, model="m", max_concurrency=1)}},
                           cache=False)
    runner = LLMRunner(settings)
    console = make_console(stderr=True)
    for b in track(range({BATCHES}), {BATCHES}, "[bold]questions[/] batches", console):
        runner.map_text(endpoint="gen", prompt=prompt, items=[{{"i": b * 100 + i}} for i in range({PER_BATCH})],
                        stage="questions")
    fast = LLMSettings(endpoints={{"gen": EndpointConfig(base_url=srv.base_url, model="m", max_concurrency=16)}},
                       cache=False)
    LLMRunner(fast).map_text(endpoint="gen", prompt=prompt, items=[{{"i": i}} for i in range({FAST_ITEMS})],
                             stage="filters")
print("child done")
"""

LINE = re.compile(r"^(?P<label>.+?): (?P<done>[\d,]+)/(?P<total>[\d,]+) \(\d+%\), (?P<rate>[\d.,]+)/s, (?P<elapsed>\d+) s elapsed, "
                  r"about \d+ s left$")


def test_piped_progress_is_plain_lines_at_a_bounded_rate():
    env = {**os.environ, "BABELRAG_PROGRESS_EVERY_S": str(EVERY_S)}
    env.pop("COLUMNS", None)
    started = time.monotonic()
    child = subprocess.run([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           timeout=300)
    wall = time.monotonic() - started
    out, err = child.stdout.decode(), child.stderr.decode()
    assert child.returncode == 0, err
    assert "child done" in out
    assert "\r" not in out + err, "carriage-return redraws in a log:\n" + repr((out + err)[:2000])
    lines = [line for line in err.splitlines() if line.strip()]
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), "a stderr line that is not a progress line:\n" + "\n".join(
        line for line, m in zip(lines, parsed) if not m)
    by_label: dict[str, list[int]] = {}
    for m in parsed:
        by_label.setdefault(m["label"], []).append(int(m["done"].replace(",", "")))
    # the stage's loop and both LLM maps reported, each with its stage name and the right total
    assert {m["total"] for m in parsed if m["label"] == "questions batches"} == {str(BATCHES)}
    assert any(label.startswith("questions · probe [gen]") for label in by_label), by_label
    assert {m["total"] for m in parsed if m["label"].startswith("filters")} == {str(FAST_ITEMS)}
    # counts only grow within one progress (the per-batch maps share a label) and the last line says where it ended
    single = [label for label in by_label if not label.startswith("questions · ")]
    assert all(by_label[label] == sorted(by_label[label]) for label in single), by_label
    assert by_label["questions batches"][-1] == BATCHES
    # bounded: at most one line per interval per live progress (the stage loop and one map run at once), plus
    # one closing line per progress; a redrawing bar prints one update per item or refresh instead
    n_progresses = 1 + BATCHES + 1
    assert len(lines) <= 2 * wall / EVERY_S + n_progresses, (len(lines), wall, lines)
    for label in single:  # one progress each: no more lines than its intervals (+ the closing line)
        elapsed = max(int(m["elapsed"]) for m in parsed if m["label"] == label) + 0.5  # printed rounded
        assert len(by_label[label]) <= elapsed / EVERY_S + 1, (label, by_label[label], elapsed)
