"""The annotation-project registry: one name per project type, used by config, CLI, push, pull and
agreement. It follows the project's registry recipe (docs/architecture.md: a ``name -> "module:Class"``
table, ``@register``, ``declare``, entry-point group for plug-ins), with the same method names as
``babelrag.registry.Registry``, which it is to be replaced by once that module is on main.

Listing names (the config's validation, ``--help``) imports no project module; ``get`` imports one on
first use and checks it registered itself under the declared name, so a typo cannot create a second,
undiscoverable project. Plug-ins: a package lists its module under the entry-point group
``babelrag.annotation_projects`` in its pyproject, or code calls ``declare(name, "module:Class")``.
"""
from __future__ import annotations

import importlib
from importlib import metadata
from typing import TYPE_CHECKING

from babelrag.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.annotate.project_type import ProjectType

GROUP = "babelrag.annotation_projects"
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
_ENTRY_POINTS_READ = [False]


def register(cls: type["ProjectType"]) -> type["ProjectType"]:
    """Class decorator: make ``cls`` the project type for ``cls.name`` (declared in the table, or a plug-in)."""
    here = f"{cls.__module__}:{cls.__qualname__}"
    target = _LAZY.setdefault(cls.name, here)
    if target != here:
        raise ConfigError(f"annotation project {cls.name!r} is declared as {target} but {here} registers it")
    if cls.spec.name != cls.name:
        raise ConfigError(f"annotation project {cls.name!r}: its spec is named {cls.spec.name!r}")
    _LOADED[cls.name] = cls()
    return cls


def declare(name: str, target: str) -> None:
    """Declare a project type by import path without importing it (plug-ins, tests)."""
    if ":" not in target:
        raise ConfigError(f"annotation project target must look like 'module:Class', got {target!r}")
    if _LAZY.get(name, target) != target:
        raise ConfigError(f"annotation project {name!r} is already declared as {_LAZY[name]}")
    _LAZY[name] = target


def forget(name: str) -> None:
    """Remove a declared project type (tests)."""
    _LAZY.pop(name, None)
    _LOADED.pop(name, None)


def names() -> list[str]:
    """Every declared project name, built-ins first (no project module is imported)."""
    _read_entry_points()
    return list(_LAZY)


def get(name: str) -> "ProjectType":
    """The project type called ``name``, importing its module on first use."""
    if name in _LOADED:
        return _LOADED[name]
    _read_entry_points()
    target = _LAZY.get(name)
    if target is None:
        raise ConfigError(f"unknown annotation project {name!r}; choose one of {', '.join(names())}")
    module_name, attr = target.split(":", 1)
    try:
        found = getattr(importlib.import_module(module_name), attr, None)
    except ImportError as exc:
        raise ConfigError(f"annotation project {name!r} ({target}) cannot be imported: {exc}") from None
    if found is None or name not in _LOADED:
        raise ConfigError(f"annotation project {name!r}: {target} is missing or not registered with @register")
    return _LOADED[name]


def _read_entry_points() -> None:
    if _ENTRY_POINTS_READ[0]:
        return
    _ENTRY_POINTS_READ[0] = True
    for ep in metadata.entry_points(group=GROUP):
        declare(ep.name, ep.value)
