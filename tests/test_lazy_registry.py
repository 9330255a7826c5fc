"""babelrag.lazy_registry: the shared shape of export formats, report views and annotation projects."""
import pytest

from babelrag.errors import ConfigError
from babelrag.lazy_registry import LazyRegistry

TINY = "tests.helpers.tiny_project:ClaimCheck"


def test_an_entry_forgotten_after_its_module_was_imported_registers_again_when_declared_again():
    # tests.helpers.tiny_project registers with the annotate registry; a fresh registry of the same kind shows the
    # sequence two test files produce: declare, get (imports the module), forget, declare again, get.
    from babelrag.annotate import registry

    registry.declare("claim_check", TINY)
    first = registry.get("claim_check")
    registry.forget("claim_check")
    registry.declare("claim_check", TINY)
    try:
        again = registry.get("claim_check")
        assert type(again) is type(first) and again.name == "claim_check"
    finally:
        registry.forget("claim_check")


def test_a_declared_path_that_registers_nothing_is_a_named_config_error():
    reg: LazyRegistry = LazyRegistry("widget", {"w": "babelrag.errors:ConfigError"})
    with pytest.raises(ConfigError, match="widget 'w': babelrag.errors.ConfigError is missing or not registered"):
        reg.get("w")
    with pytest.raises(ConfigError, match="unknown widget 'x'; known: w"):
        reg.get("x")
