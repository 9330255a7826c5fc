"""File-system failures end in one line naming the path and the fix, exit 2, and the first error is the one
shown. Read-only and full disks are real: a tmpfs mounted in a private mount namespace of the child
(``unshare``), so nothing outlives the test; where namespaces are not allowed those tests skip and the
in-process test still covers the full-disk path at the OS-call boundary."""
import errno
import shutil
import subprocess
import sys

import pytest

from babelrag.config import config_from_dict
from babelrag.errors import FileSystemError
from babelrag.pipeline import run_pipeline
from tests.helpers.count_cli import ROOT, env, run_count, write_config
from tests.helpers.counting_stage import SPEC


def _namespaces() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k none /mnt 2>/dev/null || "
                            "mount -t tmpfs -o size=64k none /tmp"], capture_output=True, timeout=30)
    return probe.returncode == 0


needs_mount = pytest.mark.skipif(not _namespaces(), reason="cannot mount a tmpfs in a private mount namespace here")


def in_tmpfs(mountpoint, config, *, size="96k", setup="", n=40):  # noqa: ANN001, ANN202
    """``construct count -c config`` in a child whose ``mountpoint`` is a fresh tmpfs of ``size`` (then
    ``setup`` shell commands, e.g. a remount read-only)."""
    script = (f"mount -t tmpfs -o size={size} none {mountpoint} && {setup or 'true'} && exec {sys.executable} "
              f"-m tests.helpers.count_cli construct count -c {config}")
    return subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=ROOT, env=env(n), capture_output=True,
                          text=True, timeout=120)


def last_line(res) -> str:  # noqa: ANN001
    assert "Traceback" not in res.stderr, res.stderr
    return res.stderr.strip().splitlines()[-1]


def test_build_dir_that_is_a_file(tmp_path):
    build = tmp_path / "build"
    build.write_text("not a folder\n")
    res = run_count(write_config(tmp_path, build))
    assert res.returncode == 2
    line = last_line(res)
    assert f"project.build_dir {build} is a file, not a folder" in line and "point project.build_dir" in line
    assert build.read_text() == "not a folder\n"
    under = tmp_path / "build" / "sub"  # a file in the middle of the path
    res = run_count(write_config(tmp_path, under))
    assert res.returncode == 2 and "ENOTDIR" in last_line(res) and str(under) in last_line(res)


@needs_mount
@pytest.mark.parametrize("existing", [False, True])
def test_read_only_build_dir(tmp_path, existing):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    build = mnt / "build"
    setup = f"mkdir {build} && mount -o remount,ro {mnt}" if existing else f"mount -o remount,ro {mnt}"
    res = in_tmpfs(mnt, write_config(tmp_path, build), setup=setup)
    assert res.returncode == 2, res.stderr
    line = last_line(res)
    assert str(build) in line and "read-only (EROFS)" in line and "project.build_dir" in line


@needs_mount
def test_full_disk_shows_the_first_error(tmp_path):
    """The stage's write fails on a full tmpfs, and so does the report's: the stage's error is the one shown."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    build = mnt / "build"
    res = in_tmpfs(mnt, write_config(tmp_path, build), size="96k", n=3000)
    assert res.returncode == 2, res.stderr
    line = last_line(res)
    assert line.startswith(f"error: cannot write {build}") and "no space left on the device (ENOSPC)" in line
    assert "run_report" not in line and "run report not written" in res.stderr
    assert "│ count │ failed" in res.stderr  # the table still came first


def test_full_disk_at_the_os_call_boundary(tmp_path, monkeypatch):
    """Shards and the run report both hit ENOSPC (simulated where they call the OS): one FileSystemError
    about the build, raised from the stage's failure, never the report's."""
    import babelrag.atomic
    import babelrag.shards

    def full(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise OSError(errno.ENOSPC, "No space left on device")

    def report_full(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setenv("COUNTING_STAGE_N", "30")
    monkeypatch.setattr(babelrag.shards, "write_records", full)
    monkeypatch.setattr(babelrag.atomic, "atomic_write_text", report_full)
    cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "build")}})
    with pytest.raises(FileSystemError) as info:
        run_pipeline(cfg, stages=(SPEC,))
    message = str(info.value)
    assert message.startswith(f"cannot write {tmp_path / 'build'}: no space left") and "run_report" not in message
    assert isinstance(info.value.__cause__, OSError) and info.value.__cause__.filename is None
