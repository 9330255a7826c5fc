"""Ctrl-C and SIGTERM mid-stage, sent to a real `babelrag construct count` process: the run ends with the
stage table, "N of M items done; a plain re-run resumes", the run report written and exit 130 / 143; the
plain re-run resumes the finished items and ends with the bytes of an undisturbed run."""
import json
import re
import signal

import pytest

from tests.helpers.count_cli import run_count, shards, start_count, wait_for, write_config

N = 400


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_mid_stage_reports_progress_and_resumes(tmp_path, sig, code):
    reference = tmp_path / "reference"
    (tmp_path / "ref").mkdir()
    done = run_count(write_config(tmp_path / "ref", reference), n=N)
    assert done.returncode == 0, done.stderr

    build = tmp_path / "build"
    config = write_config(tmp_path, build)
    child = start_count(config, n=N, delay=0.02)
    wait_for(lambda: shards(build) >= 3 or child.poll() is not None, what="three shards")
    assert child.poll() is None, "the stage ended before the signal"
    child.send_signal(sig)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == code, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    # the table, then the line that says how far it got
    assert "interrupted" in stderr and "babelrag run report" in stderr
    last = stderr.strip().splitlines()[-1]
    match = re.search(r"count: (\d+) of 400 items done \(numbers\); a plain re-run resumes", last)
    assert match, last
    assert ("SIGTERM" in last) == (sig == signal.SIGTERM)
    report = json.loads((build / "run_report.json").read_text())
    row = report["stages"][0]
    assert row["status"] == "interrupted" and "of 400 items done" in row["note"]
    assert not (build / "count" / "manifest.json").exists()

    again = run_count(config, n=N)
    assert again.returncode == 0, again.stderr
    manifest = json.loads((build / "count" / "manifest.json").read_text())
    # every item finished before the signal was kept (the buffered ones flushed on the way out)
    assert manifest["counts"]["resumed"] >= int(match.group(1))
    for name in ("records.parquet", "errors.parquet"):
        assert (build / "count" / name).read_bytes() == (reference / "count" / name).read_bytes()
