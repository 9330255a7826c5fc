"""The annotation-project registry: one name per project type, used by config, CLI, push, pull and
agreement (same shape as ``babelrag.evaluators.registry``).

Names map to ``"module:Class"`` strings, so listing names (the config's validation, ``--help``) imports
no project module. A project module marks its class with ``@register``; the decorator checks the
class is the one the table declares, so a typo cannot create a second, undiscoverable project.
Plug-ins declare theirs with ``register_lazy``.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from babelrag.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.annotate.project_type import ProjectType

_PKG = "babelrag.annotate.project_types"

# name -> "module:Class", in the order `all` walks them
_LAZY: dict[str, str] = {
    "qa_verification": f"{_PKG}.qa_verification:QaVerification",
    "translation": f"{_PKG}.translation:Translation",
    "grounding": f"{_PKG}.grounding:Grounding",
    "forced_choice": f"{_PKG}.forced_choice:ForcedChoice",
    "answer_judgement": f"{_PKG}.answer_judgement:AnswerJudgement",
}
_LOADED: dict[str, "ProjectType"] = {}


def register(cls: type["ProjectType"]) -> type["ProjectType"]:
    """Class decorator: make ``cls`` the project type for ``cls.name`` (declared in the table, or a plug-in)."""
    here = f"{cls.__module__}:{cls.__qualname__}"
    target = _LAZY.setdefault(cls.name, here)
    if target != here:
        raise InputError(f"annotation project {cls.name!r} is declared as {target} but {here} registers it")
    if cls.spec.name != cls.name:
        raise InputError(f"annotation project {cls.name!r}: its spec is named {cls.spec.name!r}")
    _LOADED[cls.name] = cls()
    return cls


def register_lazy(name: str, target: str) -> None:
    """Declare a project type by import path without importing it (for plug-ins)."""
    if ":" not in target:
        raise InputError(f"annotation project target must look like 'module:Class', got {target!r}")
    if name in _LAZY and _LAZY[name] != target:
        raise InputError(f"annotation project {name!r} is already declared as {_LAZY[name]}")
    _LAZY[name] = target


def names() -> list[str]:
    """Every declared project name (no imports happen)."""
    return list(_LAZY)


def get(name: str) -> "ProjectType":
    """The project type called ``name``, importing its module on first use."""
    if name in _LOADED:
        return _LOADED[name]
    target = _LAZY.get(name)
    if target is None:
        raise InputError(f"unknown annotation project {name!r}; choose one of {', '.join(names())}")
    module_name, attr = target.split(":", 1)
    cls = getattr(importlib.import_module(module_name), attr, None)
    if cls is None or name not in _LOADED:
        raise InputError(f"annotation project {name!r}: {module_name}.{attr} is missing or not registered with @register")
    return _LOADED[name]
