"""One shape for every extension point: a name -> "module:attr" table, filled without importing anything.

An extension point (``construct``'s question filters; encoders, export formats, annotation projects and
report views follow the same recipe, see docs/architecture.md) makes one ``Registry``. Each extension is
one module whose class carries a ``name`` and is marked with ``@REGISTRY.register``; the package declares
its built-in ones in the registry's table (``builtins``), and a plug-in package lists its module under the
registry's entry-point group in its own pyproject (``[project.entry-points."babelrag.filters"]``), or
calls ``declare(name, "module:attr")``. Listing names imports no extension module; ``get`` imports one on
first use and checks it registered itself under the declared name, so a typo cannot make a second,
undiscoverable extension.
"""
from __future__ import annotations

import importlib
from collections.abc import Mapping
from importlib import metadata
from typing import Any, Generic, TypeVar

from babelrag.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Extensions of one kind (``kind`` names them in errors), by name, in declaration order."""

    def __init__(self, kind: str, group: str, builtins: Mapping[str, str] = ()) -> None:
        self.kind = kind
        self.group = group  # entry-point group plug-ins declare theirs in
        self._lazy: dict[str, str] = dict(builtins)
        self._loaded: dict[str, T] = {}
        self._entry_points_read = False

    def register(self, cls: type) -> type:
        """Class decorator: ``cls`` (an instance of it) is the extension called ``cls.name``."""
        here = f"{cls.__module__}:{cls.__qualname__}"
        name = getattr(cls, "name", "")
        if not name:
            raise ConfigError(f"{self.kind} {here} has no name")
        target = self._lazy.setdefault(name, here)
        if target != here:
            raise ConfigError(f"{self.kind} {name!r} is declared as {target} but {here} registers it")
        self._loaded[name] = cls()
        return cls

    def declare(self, name: str, target: str) -> None:
        """Declare an extension by import path without importing it (plug-ins, tests)."""
        if ":" not in target:
            raise ConfigError(f"{self.kind} target must look like 'module:Class', got {target!r}")
        if self._lazy.get(name, target) != target:
            raise ConfigError(f"{self.kind} {name!r} is already declared as {self._lazy[name]}")
        self._lazy[name] = target

    def forget(self, name: str) -> None:
        """Remove a declared extension (tests)."""
        self._lazy.pop(name, None)
        self._loaded.pop(name, None)

    def names(self) -> list[str]:
        """Every declared name (built-ins first, then plug-ins); imports no extension module."""
        self._read_entry_points()
        return list(self._lazy)

    def get(self, name: str) -> T:
        """The extension called ``name``, importing its module on first use."""
        if name in self._loaded:
            return self._loaded[name]
        self._read_entry_points()
        target = self._lazy.get(name)
        if target is None:
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        module_name, attr = target.split(":", 1)
        try:
            found = getattr(importlib.import_module(module_name), attr, None)
        except ImportError as exc:
            raise ConfigError(f"{self.kind} {name!r} ({target}) cannot be imported: {exc}") from None
        if found is None or name not in self._loaded:
            raise ConfigError(f"{self.kind} {name!r}: {target} is missing or not marked with @register")
        return self._loaded[name]

    def _read_entry_points(self) -> None:
        if self._entry_points_read:
            return
        self._entry_points_read = True
        for ep in metadata.entry_points(group=self.group):
            self.declare(ep.name, ep.value)

