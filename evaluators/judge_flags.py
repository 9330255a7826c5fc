"""Which numbers a reader must not take at face value: a model among its own judges (self-judging), and
judges known to be weak (the tiny embedded model). Written into results.json (``judging``) and shown by the
report next to the numbers they produce.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from babelrag.llm.local import MODEL_ALIAS

# served model names of judges too small to judge (the embedded default, babelrag/llm/local.py)
WEAK_MODELS = {MODEL_ALIAS: "the embedded 0.5B model"}


def _identity(endpoint: Any) -> Optional[tuple[str, str]]:
    """(server, served model): two endpoint names for one model are one judge."""
    return None if endpoint is None else (endpoint.identity, endpoint.model)


def judging_flags(models: Sequence[str], judges: Sequence[str], endpoints: Mapping[str, Any]) -> dict[str, Any]:
    """``self_judged``: model -> the judges that are that model (same endpoint name, or same server and served
    model); ``weak_judges``: judge -> why it is weak. ``endpoints``: name -> EndpointConfig (models scored
    from an answers file have none)."""
    self_judged: dict[str, list[str]] = {}
    for model in models:
        mine = _identity(endpoints.get(model))
        same = [j for j in judges if j == model or (mine is not None and _identity(endpoints.get(j)) == mine)]
        if same:
            self_judged[model] = same
    weak = {}
    for judge in judges:
        ep = endpoints.get(judge)
        served = getattr(ep, "model", "") or ""
        namespace = getattr(ep, "cache_namespace", None) or ""
        if served in WEAK_MODELS or namespace.startswith("embedded:"):
            weak[judge] = WEAK_MODELS.get(served, "the embedded model")
    return {"self_judged": self_judged, "weak_judges": weak}
