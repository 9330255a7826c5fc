"""The metric registry: one name per metric, used by config, CLI listing, runner, results and report.

Names map to ``"module:Class"`` strings, so importing this module (or listing names) imports no metric
module and none of their heavy dependencies (lm-eval style). A metric module marks its class with
``@register``; the decorator checks the class is the one the table declares, so a typo cannot create a
second, undiscoverable metric. Plug-ins declare theirs with ``register_lazy``.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterable

from babelrag.errors import ConfigError
from babelrag.evaluators.metric import Metric

_PKG = "babelrag.evaluators"

# name -> "module:Class", in the order the runner scores them (xrag first: it is always computed)
_LAZY: dict[str, str] = {
    "xrag": f"{_PKG}.xrag:XragMetric",
    "citations": f"{_PKG}.citations:CitationsMetric",
    "random_citations": f"{_PKG}.citations:RandomCitationsMetric",
    "garage": f"{_PKG}.garage:GarageMetric",
    "ragas": f"{_PKG}.ragas:RagasMetric",
    "mirage": f"{_PKG}.mirage:MirageMetric",
}
ALWAYS = ("xrag",)  # scored in every run: the leaderboard is ordered by its accuracy
_LOADED: dict[str, Metric] = {}


def register(cls: type[Metric]) -> type[Metric]:
    """Class decorator: make ``cls`` the metric for ``cls.name`` (declared in the table, or a plug-in)."""
    here = f"{cls.__module__}:{cls.__qualname__}"
    target = _LAZY.setdefault(cls.name, here)
    if target != here:
        raise ConfigError(f"metric {cls.name!r} is declared as {target} but {here} registers it")
    _LOADED[cls.name] = cls()
    return cls


def register_lazy(name: str, target: str) -> None:
    """Declare a metric by import path without importing it (for plug-ins)."""
    if ":" not in target:
        raise ConfigError(f"metric target must look like 'module:Class', got {target!r}")
    if name in _LAZY and _LAZY[name] != target:
        raise ConfigError(f"metric {name!r} is already declared as {_LAZY[name]}")
    _LAZY[name] = target


def names() -> list[str]:
    """Every declared metric name, in scoring order (no imports happen)."""
    return list(_LAZY)


def get(name: str) -> Metric:
    """The metric called ``name``, importing its module on first use."""
    if name in _LOADED:
        return _LOADED[name]
    target = _LAZY.get(name)
    if target is None:
        raise ConfigError(f"unknown metric {name!r}; known metrics: {', '.join(names())} "
                          "(`babelrag evaluate metrics` lists them)")
    module_name, attr = target.split(":", 1)
    cls = getattr(importlib.import_module(module_name), attr, None)
    if cls is None or name not in _LOADED:
        raise ConfigError(f"metric {name!r}: {module_name}.{attr} is missing or not registered with @register")
    return _LOADED[name]


def resolve(requested: Iterable[str]) -> list[Metric]:
    """The metrics of a run, in registry order, with the always-on ones; unknown names fail here, before
    any answer is generated."""
    wanted = set(requested) | set(ALWAYS)
    unknown = sorted(wanted - set(_LAZY))
    if unknown:
        raise ConfigError(f"evaluate.metrics: unknown {unknown}; known metrics: {', '.join(names())}")
    return [get(n) for n in names() if n in wanted]
