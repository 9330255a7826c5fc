"""A converted folder is a release: card + configs that `datasets` reads without babelrag, a push dry run,
and exports that keep what a round trip needs (order, machine_translated)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from babelrag.evaluators.release_reader import load_instances
from babelrag.release.export import beir_files, export_release, write_files
from babelrag.release.external import convert_external
from babelrag.release.loaders.xrag import load_xrag

FIX = Path(__file__).parent / "fixtures" / "external"
BIN = Path(sys.executable).parent / "babelrag"

# load every config with `datasets` in a process where importing babelrag fails: the folder must not need it
_LOAD = r"""
import importlib.abc, json, sys
class NoBabelrag(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "babelrag" or name.startswith("babelrag."):
            raise ImportError("babelrag is not installed here")
sys.meta_path.insert(0, NoBabelrag())
import datasets
folder, configs = sys.argv[1], json.loads(sys.argv[2])
out = {c: sorted(r["id"] for split in datasets.load_dataset(folder, c, cache_dir=sys.argv[3]).values() for r in split)
       for c in configs}
assert not any(m == "babelrag" or m.startswith("babelrag.") for m in sys.modules)
print(json.dumps(out))
"""


def _load_without_babelrag(folder, configs, cache):
    res = subprocess.run([sys.executable, "-c", _LOAD, str(folder), json.dumps(configs), str(cache)],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_converted_folders_load_per_config_with_datasets_alone(tmp_path):
    convert_external(FIX / "xrag.jsonl", "xrag", tmp_path / "x")
    convert_external(FIX / "garage.jsonl", "garage", tmp_path / "g")
    for folder in (tmp_path / "x", tmp_path / "g"):
        info = json.loads((folder / "release.json").read_text())
        configs = sorted(info["configs"])
        got = _load_without_babelrag(folder, configs, tmp_path / "cache")
        for cfg in configs:  # each config alone, not everything merged into "default"
            assert got[cfg] == sorted(i.id for i in load_instances(folder, configs=[cfg]))
    assert sorted(json.loads((tmp_path / "x" / "release.json").read_text())["configs"]) == \
        ["mono-de", "mono-es", "mono-zh", "multi-de"]


def test_push_dry_run_lists_files_sizes_and_card_without_network(tmp_path):
    convert_external(FIX / "garage.jsonl", "garage", tmp_path / "g")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9", "HF_TOKEN": ""}
    res = subprocess.run([str(BIN), "release", "push", tmp_path / "g", "--repo", "me/garage", "--dry-run"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    files = {p.relative_to(tmp_path / "g").as_posix(): p.stat().st_size for p in (tmp_path / "g").rglob("*") if p.is_file()}
    assert f"would upload {len(files)} file(s), {sum(files.values()):,} bytes, to dataset me/garage" in out
    for rel, size in files.items():
        assert f"{size:,}  {rel}" in out
    assert "--- README.md ---\n---\npretty_name:" in out and "nothing was sent" in out
    # a real push of the same folder is refused only for being offline, not for lacking a card
    real = subprocess.run([str(BIN), "release", "push", tmp_path / "g", "--repo", "me/garage"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert real.returncode == 2 and "HF_HUB_OFFLINE" in real.stderr and "not a release folder" not in real.stderr


def test_beir_round_trip_keeps_document_order_and_machine_translation(tmp_path):
    insts = load_xrag(FIX / "xrag.jsonl")
    inst = insts[0]
    docs = list(reversed(inst.documents))
    docs[0] = docs[0].model_copy(update={"machine_translated": True, "language": "de"})
    inst = inst.model_copy(update={"documents": docs})
    write_files(tmp_path / "ours", beir_files({"test": [inst]}))
    convert_external(tmp_path / "ours", "beir", tmp_path / "rel")
    back = load_instances(tmp_path / "rel")[0]
    assert [(d.article_id, d.role, d.machine_translated, d.language) for d in back.documents] == \
        [(d.article_id, d.role, d.machine_translated, d.language) for d in inst.documents]


def test_exports_skip_configs_the_format_cannot_hold_with_a_note(tmp_path):
    from tests.helpers.release_fixtures import make_build, make_config
    from babelrag.release.build import build_release

    make_build(tmp_path / "build")
    release = build_release(make_config(tmp_path)).folder
    res = export_release(release, tmp_path / "x", "xrag")
    assert "no-retrieval-de" in res.skipped and "without exactly 2 supporting articles" in res.skipped["no-retrieval-de"]
    assert not (tmp_path / "x" / "no-retrieval-de").exists()
    # everything written converts back with our own strict loader (no-retrieval rows would be rejected)
    for path in (tmp_path / "x").glob("*/xrag.*.jsonl"):
        assert load_xrag(path, language="de")
    cli = subprocess.run([str(BIN), "release", "export", release, "--format", "beir", "--out", tmp_path / "b"],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert "note: skipped no-retrieval-de: no supporting document" in cli.stdout
    assert "1 config(s) skipped" in cli.stdout


def test_an_export_format_is_one_module_in_the_registry(tmp_path):
    from babelrag.errors import ConfigError
    from babelrag.release.export_formats import FORMATS

    with pytest.raises(ConfigError, match="unknown export format 'ids'; known: beir, xrag, lm-eval"):
        FORMATS.get("ids")
    import tests.helpers.tiny_export  # noqa: F401 - registers "ids" the documented way

    try:
        convert_external(FIX / "xrag.jsonl", "xrag", tmp_path / "x")
        res = export_release(tmp_path / "x", tmp_path / "ids", "ids")
        assert sorted(p.name for p in res.written) == ["mono-de", "mono-es", "mono-zh", "multi-de"]
        assert (tmp_path / "ids" / "mono-es" / "test.txt").read_text() == "xrag-es-1\n"
    finally:
        FORMATS.forget("ids")
