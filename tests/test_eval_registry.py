"""Metric registry: lazy discovery, errors, result shape."""
import subprocess
import sys

import pytest

from babelrag.errors import ConfigError
from babelrag.evaluators import registry


def test_importing_registry_imports_no_metric_module():
    code = (
        "import sys, babelrag.evaluators.registry as r; r.names();"
        "bad=[m for m in sys.modules if m.startswith('babelrag.evaluators.') and m!='babelrag.evaluators.registry'];"
        "heavy=[m for m in ('sklearn','matplotlib','lingua','sacrebleu','torch') if m in sys.modules];"
        "print(bad, heavy); assert not bad and not heavy"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_get_resolves_lazily_and_registers():
    fn = registry.get("rage.citations")
    from babelrag.evaluators.citations import score_citations

    assert fn is score_citations
    assert "rage.citations" in registry.names()


def test_unknown_metric_lists_known_ones():
    with pytest.raises(ConfigError, match="rage.citations"):
        registry.get("rage.citation")


def test_register_rejects_conflicting_declaration():
    with pytest.raises(ConfigError, match="declared as"):

        @registry.register("rage.citations")
        def other(items):  # pragma: no cover - never called
            return None


def test_summarise_skips_and_counts_undefined():
    items = [{"query_id": "a", "x": 1.0}, {"query_id": "b", "x": float("nan")}, {"query_id": "c", "x": 0.0}]
    res = registry.make_result("m", items, ["x"], rounds=50)
    assert res.aggregate["x"].value == 0.5 and res.aggregate["x"].n == 2
    assert res.counts == {"x_undefined": 1}
    with pytest.raises(ValueError, match="query_id"):
        registry.make_result("m", [{"x": 1}], ["x"])


def test_every_declared_metric_resolves_to_its_registered_function():
    for name in registry.names():
        fn = registry.get(name)
        assert callable(fn)
        assert registry._LAZY[name] == f"{fn.__module__}:{fn.__qualname__}"
