"""All-or-nothing writes: a failed write leaves the old file and no temp behind; folders swap whole."""
import stat

import pytest

from babelrag.atomic import atomic_path, atomic_write_text, replace_dir


def test_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "out" / "records.jsonl"
    atomic_write_text(target, "old\n")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed mid-write")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["records.jsonl"]


def test_private_file_is_owner_only(tmp_path):
    target = tmp_path / "credentials.json"
    atomic_write_text(target, "{}", private=True)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_replace_dir_swaps_a_folder_whole(tmp_path):
    final, staging = tmp_path / "release", tmp_path / ".staging"
    final.mkdir()
    (final / "old.txt").write_text("1")
    staging.mkdir()
    (staging / "new.txt").write_text("2")
    replace_dir(staging, final)
    assert [p.name for p in final.iterdir()] == ["new.txt"] and not staging.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["release"]  # the old folder is gone too
