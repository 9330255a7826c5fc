"""A name -> class registry whose entries are import paths until first use (the shape of the metric
registry, ``evaluators/registry.py``), for every pluggable part: metrics, encoders, question filters,
release export formats, report views and annotation projects. Listing names imports nothing; ``get`` imports the module, whose class registers itself with the
registry's ``register`` decorator (checked against the declared path, so a typo cannot create a second,
undiscoverable entry). Plug-ins declare theirs with ``register_lazy``, or, for a registry made with an
entry-point ``group``, under that group in their own pyproject (read on first listing).
"""
from __future__ import annotations

import importlib
from importlib import metadata
from typing import Generic, TypeVar

from babelrag.errors import ConfigError

T = TypeVar("T")


class LazyRegistry(Generic[T]):
    def __init__(self, kind: str, table: dict[str, str], hint: str = "", group: str = "", key: str = "name",
                 instantiate: bool = True) -> None:
        self.kind = kind  # "export format", "report view": used in error messages
        self.key = key  # the class attribute that names an entry ("name"; encoders: "kind")
        self.instantiate = instantiate  # entries are instances of the registered classes, or the classes
        self._lazy = dict(table)  # name -> "module:Class"
        self._loaded: dict[str, T] = {}
        self.hint = hint
        self.group = group  # entry-point group plug-in packages declare theirs in ("" = none)
        self._entry_points_read = not group

    def register(self, cls: type) -> type:
        """Class decorator: make ``cls`` (an instance of it, with ``instantiate``) the entry for its name."""
        name = getattr(cls, self.key)
        here = f"{cls.__module__}:{cls.__qualname__}"
        target = self._lazy.setdefault(name, here)
        if target != here:
            raise ConfigError(f"{self.kind} {name!r} is declared as {target} but {here} registers it")
        self._loaded[name] = cls() if self.instantiate else cls
        return cls

    def register_lazy(self, name: str, target: str) -> None:
        """Declare an entry by import path without importing it (plug-ins, tests)."""
        if ":" not in target:
            raise ConfigError(f"{self.kind} target must look like 'module:Class', got {target!r}")
        if name in self._lazy and self._lazy[name] != target:
            raise ConfigError(f"{self.kind} {name!r} is already declared as {self._lazy[name]}")
        self._lazy[name] = target

    def names(self) -> list[str]:
        self._read_entry_points()
        return list(self._lazy)

    def get(self, name: str) -> T:
        if name in self._loaded:
            return self._loaded[name]
        self._read_entry_points()
        target = self._lazy.get(name)
        if target is None:
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}{self.hint}")
        module_name, attr = target.split(":", 1)
        cls = getattr(importlib.import_module(module_name), attr, None)
        if cls is not None and name not in self._loaded and getattr(cls, self.key, None) == name:
            # the module was imported before (its @register ran then) and the entry was forgotten since
            # (a test's clean-up): register the same class again rather than call it unregistered
            self.register(cls)
        if cls is None or name not in self._loaded:
            raise ConfigError(f"{self.kind} {name!r}: {module_name}.{attr} is missing or not registered with "
                              "@register")
        return self._loaded[name]

    def all(self) -> list[T]:
        return [self.get(n) for n in self.names()]

    def _read_entry_points(self) -> None:
        if not self._entry_points_read:
            self._entry_points_read = True
            for ep in metadata.entry_points(group=self.group):
                self.register_lazy(ep.name, ep.value)

    def forget(self, name: str) -> None:
        """Remove an entry (tests that add a tiny one clean up with this)."""
        self._lazy.pop(name, None)
        self._loaded.pop(name, None)

