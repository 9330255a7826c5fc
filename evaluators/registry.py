"""The metric registry: one name per metric, used by config, CLI listing, runner, results and report.

Names map to ``"module:Class"`` strings, so importing this module (or listing names) imports no metric
module and none of their heavy dependencies (lm-eval style). A metric module marks its class with
``@register``; the decorator checks the class is the one the table declares, so a typo cannot create a
second, undiscoverable metric. Plug-ins declare theirs with ``register_lazy``.
"""
from __future__ import annotations

from collections.abc import Iterable

from babelrag.errors import ConfigError
from babelrag.evaluators.metric import Metric
from babelrag.lazy_registry import LazyRegistry

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
METRICS: LazyRegistry[Metric] = LazyRegistry("metric", _LAZY, hint=" (`babelrag evaluate metrics` lists them)")
register = METRICS.register  # class decorator: the metric for ``cls.name``, checked against the table
register_lazy = METRICS.register_lazy  # declare a plug-in metric by import path
names = METRICS.names  # every declared metric name, in scoring order (no imports happen)
get = METRICS.get  # the metric called ``name``, importing its module on first use


def resolve(requested: Iterable[str]) -> list[Metric]:
    """The metrics of a run, in registry order, with the always-on ones; unknown names fail here, before
    any answer is generated."""
    wanted = set(requested) | set(ALWAYS)
    unknown = sorted(wanted - set(names()))
    if unknown:
        raise ConfigError(f"evaluate.metrics: unknown {unknown}; known metrics: {', '.join(names())}")
    return [get(n) for n in names() if n in wanted]
