"""One writer per build folder, with real processes: a second writer stops at once (exit 2) naming the
holder's pid and command; readers need no lock; a writer killed with -9 leaves nothing to clean up."""
import json
import os
import signal

from babelrag.build_lock import build_lock
from babelrag.build_layout import LOCK_FILE
from tests.helpers.count_cli import run_babelrag, run_count, shards, start_count, wait_for, write_config


def _holding(child, build):  # noqa: ANN001, ANN202
    """Wait until the child holds the lock and has stored a shard (it is mid-stage)."""
    wait_for(lambda: shards(build) >= 1 or child.poll() is not None, what="the first shard")
    assert child.poll() is None, child.communicate()
    return json.loads((build / LOCK_FILE).read_text())


def test_second_writer_exits_2_at_once_naming_the_holder(tmp_path):
    build = tmp_path / "build"
    config = write_config(tmp_path, build)
    first = start_count(config, n=2000, delay=0.05)  # killed once checked
    try:
        holder = _holding(first, build)
        assert holder["pid"] == first.pid
        # the same stage command, and a real `babelrag run` (it would start ingest): both refused
        for second in (run_count(config, n=2000), run_babelrag("run", "-c", str(config))):
            assert second.returncode == 2, second.stderr
            line = second.stderr.strip()
            assert "Traceback" not in second.stderr and len(line.splitlines()) == 1
            assert f"in use by pid {first.pid}" in line and "construct count" in line
        assert not (build / "ingest").exists() and not (build / ".partial" / "ingest").exists()
        # readers need no lock: status works while the writer runs; validate fails for its own reason
        status = run_babelrag("construct", "status", "-c", str(config))
        assert status.returncode == 0, status.stderr
        validate = run_babelrag("release", "validate", "-c", str(config))
        assert "in use" not in validate.stderr
        # release build reads every stage: it waits for no writer, it is refused while one writes
        release = run_babelrag("release", "build", "-c", str(config))
        assert release.returncode == 2 and f"in use by pid {first.pid}" in release.stderr
    finally:
        first.kill() if first.poll() is None else None
        first.communicate()


def test_two_runs_never_write_one_build(tmp_path):
    """Before the lock, both runs exited 0 (and their ingests mixed): now exactly one of them runs."""
    build = tmp_path / "build"
    config = write_config(tmp_path, build)
    first = start_count(config, n=300, delay=0.05)  # ~15 s: the second starts long before it ends
    second = start_count(config, n=300, delay=0.05)
    codes = sorted([first.wait(timeout=120), second.wait(timeout=120)])
    first.communicate(), second.communicate()
    assert codes == [0, 2]
    assert json.loads((build / "count" / "manifest.json").read_text())["counts"]["out"] == 300 - 43


def test_kill_9_leaves_no_lock_to_clean_up(tmp_path):
    build = tmp_path / "build"
    config = write_config(tmp_path, build)
    child = start_count(config, n=200, delay=0.05)
    _holding(child, build)
    os.kill(child.pid, signal.SIGKILL)
    child.communicate()
    again = run_count(config, n=200)  # a lock left behind would stop it with exit 2
    assert again.returncode == 0, again.stderr
    assert "resumed" in again.stderr  # the killed run's shards were kept and used


def test_the_lock_is_reentrant_in_one_process_and_released_after(tmp_path):
    build = tmp_path / "b"
    with build_lock(build):
        with build_lock(build):
            assert json.loads((build / LOCK_FILE).read_text())["pid"] == os.getpid()
        assert (build / LOCK_FILE).read_text()  # still held by the outer block
    assert (build / LOCK_FILE).read_text() == ""  # released: no stale holder line
