"""The CLI as a user meets it: fast help, one-line errors, init, and what a built wheel contains."""
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent / "babelrag"
HEAVY = ("torch", "datasets", "pyarrow", "argilla", "FlagEmbedding", "pymilvus", "spacy", "sklearn",
         "matplotlib", "openai", "lingua", "newsplease", "sentence_transformers", "ray")


def run(*args, cwd=None):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)


def test_help_lists_stage_groups():
    res = run("--help")
    assert res.returncode == 0, res.stderr
    for group in ("construct", "release", "evaluate", "annotate", "llm", "demo", "init", "run"):
        assert group in res.stdout


def test_cli_import_pulls_no_heavy_library():
    code = ("import sys, babelrag.cli; heavy = %r; "
            "print(','.join(h for h in heavy if h in sys.modules))" % (HEAVY,))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "", f"imported at start-up: {res.stdout.strip()}"


def test_init_writes_a_config_that_validates(tmp_path):
    res = run("init", "my.yaml", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    status = run("construct", "status", "-c", "my.yaml", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "not built" in status.stderr + status.stdout
    again = run("init", "my.yaml", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr


def test_bad_config_is_one_line_error_with_exit_2(tmp_path):
    (tmp_path / "bad.yaml").write_text("pairs:\n  max_days: 3\n")
    res = run("run", "-c", "bad.yaml", cwd=tmp_path)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert "unknown key 'pairs.max_days'" in res.stderr
    missing = run("run", "-c", "nope.yaml", cwd=tmp_path)
    assert missing.returncode == 2 and "config file not found: nope.yaml" in missing.stderr


@pytest.mark.slow
def test_wheel_contains_every_stage_package_and_data(tmp_path):
    # built from a copy: an in-tree build leaves babelrag.egg-info in the checkout, whose metadata (entry
    # points included) would then shadow the installed package's for anything run from the repo root
    import shutil

    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__",
                                                             "demo-build", "runs", ".pytest_cache"))
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                          "-w", str(tmp_path), "-q"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    (wheel,) = tmp_path.glob("babelrag-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for pkg in ("babelrag", "babelrag/construct", "babelrag/annotate", "babelrag/release", "babelrag/evaluators"):
        assert f"{pkg}/__init__.py" in names, f"{pkg} missing from the wheel"
    assert "babelrag/templates/config.example.yaml" in names
    assert not any(n.startswith(("construct/", "tests/", "bench/")) for n in names)
    # the stage declarations travel with the wheel (the pipeline and config schema are built from them)
    entry_points = next(zipfile.ZipFile(wheel).read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert "[babelrag.stages]" in entry_points and "ingest = babelrag.construct.ingest.stage:STAGE" in entry_points
    # every source file under the stage folders made it in under its babelrag.* name
    for folder in ("construct", "annotate", "release", "evaluators"):
        for src in (ROOT / folder).rglob("*.py"):
            rel = src.relative_to(ROOT).as_posix()
            assert f"babelrag/{rel}" in names, f"{rel} missing from the wheel"


def test_a_stage_group_that_cannot_load_says_why_in_one_line():
    # a sub-command group whose module is missing (e.g. an extra not installed) stays listed and, when
    # used, names the import problem instead of a NameError/traceback
    code = ("import sys, babelrag.cli as c; c._mount_optional('babelrag.no_such_stage', 'ghost', 'A missing stage.'); "
            "sys.argv = ['babelrag', 'ghost']; c.main()")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert "`babelrag ghost` is not available in this installation: No module named 'babelrag.no_such_stage'" \
        in res.stderr
