"""``release.time_slices``: ``release build`` also writes one release per publication-date window, and every
card states each config's publication date range."""
import datetime
import os
import subprocess
import sys
from pathlib import Path

import yaml

from babelrag.leakage import iso_date
from tests.helpers.release_fixtures import make_build, make_records

BIN = Path(sys.executable).parent / "babelrag"


def _cli(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _config(tmp, slices):
    path = tmp / "babelrag.yaml"
    path.write_text(yaml.safe_dump({
        "project": {"build_dir": str(tmp / "build"), "languages": ["en", "de", "zh", "es", "ar"], "seed": 13},
        "release": {"out_dir": str(tmp / "release"), "name": "demo-bench", "version": "0.1.0",
                    "dev_fraction": 0.4, "time_slices": slices}}))
    return path


def _expected_qas(after=None, before=None):
    """Questions whose supporting articles all lie in the window, read from the fixture's own dates."""
    out = set()
    for inst in make_records()[2]:
        days = [iso_date(d) for d in inst.dates]
        if all((after is None or d > after) and (before is None or d < before) for d in days):
            out.add(inst.qa_id)
    return out


def test_release_build_writes_a_release_per_time_slice_with_dated_cards(tmp_path):
    import datasets

    make_build(tmp_path / "build")
    cfg = _config(tmp_path, [{"name": "late", "after": "2024-07-12"}, {"name": "early", "before": "2024-07-15"}])
    res = _cli("release", "build", "-c", cfg)
    assert res.returncode == 0, res.stderr
    late, early = tmp_path / "release" / "demo-bench-late-0.1.0", tmp_path / "release" / "demo-bench-early-0.1.0"
    assert f"time slice: " in res.stdout and str(late) in res.stdout and str(early) in res.stdout
    cut = datetime.date(2024, 7, 12)
    expected = {"late": _expected_qas(after=cut), "early": _expected_qas(before=datetime.date(2024, 7, 15))}
    assert expected["late"] == {"qa-002", "qa-003", "qa-004"} and expected["early"] == {"qa-000", "qa-001"}
    for name, folder in (("late", late), ("early", early)):
        seen = set()
        for config in sorted(p.name for p in (folder / "data").iterdir()):
            dd = datasets.load_dataset(str(folder), config, cache_dir=str(tmp_path / "hf-cache"))
            for split in dd:
                seen |= set(dd[split]["qa_id"])
        assert seen == expected[name]
        # a slice is a release of its own: it passes `release validate --folder`
        check = _cli("release", "validate", "--folder", folder)
        assert check.returncode == 0, check.stdout + check.stderr
    import json

    info = json.loads((late / "release.json").read_text())
    assert info["name"] == "demo-bench-late" and info["time_slice"] == {"after": "2024-07-12", "before": None,
                                                                       "bounds": "exclusive"}
    assert json.loads((tmp_path / "release" / "demo-bench-0.1.0" / "release.json").read_text())["name"] == "demo-bench"
    card = (late / "README.md").read_text()
    assert "time slice: it holds only instances whose supporting articles were all published after 2024-07-12" in card
    # the full release's card gives each config's publication date range
    full = (tmp_path / "release" / "demo-bench-0.1.0" / "README.md").read_text()
    assert "## Publication dates" in full
    assert "| mono-de | 2024-07-11 | 2024-07-16 | 4 | 0 |" in full  # four topics: 40+0 .. 42+3 days after 06-01
    assert "--after <training cutoff>" in full


def test_an_empty_slice_stops_the_build_before_anything_is_written(tmp_path):
    make_build(tmp_path / "build")
    cfg = _config(tmp_path, [{"name": "future", "after": "2030-01-01"}])
    res = _cli("release", "build", "-c", cfg)
    assert res.returncode != 0 and "release.time_slices 'future': no instance has all its supporting articles " \
                                   "published after 2030-01-01" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "release" / "demo-bench-0.1.0").exists()
    bad = _config(tmp_path, [{"name": "bad slice", "after": "2024-13-01"}])
    res = _cli("release", "build", "-c", bad)
    assert res.returncode == 2 and "time_slices" in res.stderr and "Traceback" not in res.stderr
