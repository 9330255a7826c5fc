"""The annotation-project registry: one name per project type, used by config, CLI, push, pull and
agreement. One ``babelrag.lazy_registry.LazyRegistry`` (the project's registry shape: a
``name -> "module:Class"`` table, ``@register``, declared plug-ins), plus an entry-point group.

Listing names (the config's validation, ``--help``) imports no project module; ``get`` imports one on
first use and checks it registered itself under the declared name, so a typo cannot create a second,
undiscoverable project. Plug-ins: a package lists its module under the entry-point group
``babelrag.annotation_projects`` in its pyproject, or code calls ``declare(name, "module:Class")``.
"""
from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING

from babelrag.errors import ConfigError
from babelrag.lazy_registry import LazyRegistry

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.annotate.project_type import ProjectType

GROUP = "babelrag.annotation_projects"
_PKG = "babelrag.annotate.project_types"

# name -> "module:Class", in the order `all` walks them
PROJECTS: LazyRegistry["ProjectType"] = LazyRegistry("annotation project", {
    "qa_verification": f"{_PKG}.qa_verification:QaVerification",
    "translation": f"{_PKG}.translation:Translation",
    "grounding": f"{_PKG}.grounding:Grounding",
    "forced_choice": f"{_PKG}.forced_choice:ForcedChoice",
    "answer_judgement": f"{_PKG}.answer_judgement:AnswerJudgement",
}, hint=" (docs/annotate.md, 'Adding a project type')")
declare = PROJECTS.register_lazy  # a plug-in's "module:Class", without importing it
forget = PROJECTS.forget  # tests that add a tiny one clean up with this
_entry_points_read = [False]


def register(cls: type["ProjectType"]) -> type["ProjectType"]:
    """Class decorator: make ``cls`` the project type for ``cls.name`` (its spec must carry the same name)."""
    if cls.spec.name != cls.name:
        raise ConfigError(f"annotation project {cls.name!r}: its spec is named {cls.spec.name!r}")
    return PROJECTS.register(cls)


def names() -> list[str]:
    """Every declared project name, built-ins first (no project module is imported)."""
    _read_entry_points()
    return PROJECTS.names()


def get(name: str) -> "ProjectType":
    """The project type called ``name``, importing its module on first use."""
    _read_entry_points()
    return PROJECTS.get(name)


def _read_entry_points() -> None:
    if not _entry_points_read[0]:
        _entry_points_read[0] = True
        for ep in metadata.entry_points(group=GROUP):
            declare(ep.name, ep.value)
