"""`release validate --folder` checks a copy against its release.json through the real CLI: a deleted, added,
changed, damaged (truncated / empty) data file is named with the file and exits 1; an empty release is
refused; the untouched copy passes. Before this check a deleted file or an added row said "ok" (exit 0) and
a damaged file ended in an ArrowInvalid traceback."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from babelrag.release.build import build_release
from tests.helpers.release_fixtures import make_build, make_config

BIN = Path(sys.executable).parent / "babelrag"
FILE = "data/mono-de/test.parquet"


def _cli(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rel")
    make_build(tmp / "build")
    return build_release(make_config(tmp)).folder


@pytest.fixture()
def copy(release, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(release, out)
    return out


def _fails_naming(res, *words):
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "Traceback" not in out and "ArrowInvalid" not in out, out
    for w in words:
        assert w in out, out
    return out


def test_untouched_copy_passes(copy):
    res = _cli("release", "validate", "--folder", copy)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ok: 9 data files match release.json; 17 instances pass every release rule" in res.stdout


def test_a_deleted_data_file_is_named(copy):
    (copy / FILE).unlink()
    _fails_naming(_cli("release", "validate", "--folder", copy), f"{FILE}: listed in release.json (2 rows) but missing")


def test_an_added_row_is_named_with_the_row_counts(copy):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(copy / FILE)
    row = table.slice(0, 1).to_pylist()[0]
    row.update(id=row["id"] + "-extra", qa_id=row["qa_id"] + "-extra")
    pq.write_table(pa.concat_tables([table, pa.Table.from_pylist([row], schema=table.schema)]), copy / FILE)
    _fails_naming(_cli("release", "validate", "--folder", copy), f"{FILE}: 3 rows; release.json records 2")


def test_a_changed_row_breaks_the_content_hash(copy):
    import pyarrow.parquet as pq

    table = pq.read_table(copy / FILE)
    rows = table.to_pylist()
    rows[0]["answer"] = rows[0]["answer"] + " Und noch etwas."
    pq.write_table(type(table).from_pylist(rows, schema=table.schema), copy / FILE)
    _fails_naming(_cli("release", "validate", "--folder", copy), f"{FILE}: its rows differ from the content hash")


def test_an_extra_data_file_is_named(copy):
    shutil.copy(copy / FILE, copy / "data" / "mono-de" / "train.parquet")
    out = _fails_naming(_cli("release", "validate", "--folder", copy),
                        "data/mono-de/train.parquet: an extra data file: not listed in release.json")
    assert "[split_leak]" in out  # the rules still run on every readable row


@pytest.mark.parametrize("damage", ["truncated", "empty"])
def test_a_damaged_parquet_file_is_named_not_a_traceback(copy, damage):
    data = (copy / FILE).read_bytes()
    (copy / FILE).write_bytes(data[: len(data) // 2] if damage == "truncated" else b"")
    size = len(data) // 2 if damage == "truncated" else 0
    _fails_naming(_cli("release", "validate", "--folder", copy), f"{FILE}: damaged parquet file ({size} bytes")
    # the same file read for scoring is named too, not an ArrowInvalid traceback
    cfg = copy.parent / "eval.yaml"
    cfg.write_text(yaml.safe_dump({
        "project": {"build_dir": str(copy.parent / "build")},
        "llm": {"endpoints": {"m": {"base_url": "http://127.0.0.1:9/v1", "model": "x"}}, "default_endpoint": "m"},
        "evaluate": {"models": ["m"], "judges": ["m"], "out_dir": str(copy.parent / "eval")}}))
    res = _cli("evaluate", "run", copy, "-c", cfg)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert f"{FILE}: damaged parquet file" in res.stderr


def test_an_empty_release_is_refused(copy):
    info = json.loads((copy / "release.json").read_text())
    info["configs"] = {}
    (copy / "release.json").write_text(json.dumps(info))
    shutil.rmtree(copy / "data")
    res = _cli("release", "validate", "--folder", copy)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "an empty release (release.json lists no rows)" in res.stderr and "Traceback" not in res.stderr
    (copy / "release.json").unlink()
    res = _cli("release", "validate", "--folder", copy)
    assert res.returncode == 2 and "no release.json" in res.stderr
