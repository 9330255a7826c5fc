"""The import structure the code relies on, checked on every test run (``make test``).

Why an ast walk and not ``import-linter``: it is not installed, and the project's own imports hide in
function bodies too (a lazy import of a project module still makes a cycle at run time). The graph has one
node per project module and an edge for every ``import`` the module runs: at module level and inside
functions; imports under ``if TYPE_CHECKING:`` never run and are left out.

- no import cycle among the project's modules, except the ones listed in ``KNOWN_CYCLES`` (being taken
  apart elsewhere); the list can only shrink: a listed cycle that is gone fails too, so its entry goes;
- the layers: a stage folder imports another only in a declared direction (``STAGE_DIRECTIONS``), and never
  one the other way round (a folder-level cycle); that the core (``babelrag/*``) imports no stage folder is
  ``tests/test_core_architecture.py``'s check;
- in the folders restructured to it, project modules import each other at module level; function-level
  imports are left for heavy third-party libraries, and for the ``cli.py`` command modules that
  ``babelrag --help`` imports (their commands import what they run, so start-up stays fast).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
# source folder -> the package it installs as (setup.py's package-dir mapping)
PACKAGES = {"babelrag": "babelrag", "construct": "babelrag.construct", "annotate": "babelrag.annotate",
            "release": "babelrag.release", "evaluators": "babelrag.evaluators"}
STAGES = ("construct", "annotate", "release", "evaluators")

# (importer, imported): a stage folder may use another's modules only this way round
STAGE_DIRECTIONS = {
    ("annotate", "construct"),  # highlighting encodes sentences with the build's encoders
    ("release", "annotate"),  # a release card carries the annotation summary
    ("evaluators", "release"),  # evaluators read released datasets and their protocol
}
# folder-level cycles still being taken apart (none left: shrink-only)
KNOWN_FOLDER_CYCLES: set[frozenset[str]] = set()

# Each entry: the modules of one import cycle (a strongly connected component of the graph), exactly.
# Owned by the construct/evaluators work of issue 36; remove an entry when its cycle is gone.
KNOWN_CYCLES: set[frozenset[str]] = set()

# where project modules import each other at module level only (files or folders, repo-relative)
MODULE_LEVEL_ONLY = ("annotate", "release", "evaluators", "construct",
                     "babelrag")  # babelrag: the core (babelrag/*.py, babelrag/llm) and babelrag/testing
COMMAND_MODULES = {"annotate/cli.py", "release/cli.py", "evaluators/cli.py", "babelrag/cli.py", "babelrag/llm/cli.py"}
# still lazy (shrink-only)
KNOWN_LAZY: set[str] = set()


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    path: str
    line: int
    in_function: bool


def module_files(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__)."""
    out = {}
    for folder, package in PACKAGES.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            out[".".join([package, *(parts[:-1] if is_package else parts)])] = (path, is_package)
    return out


def _runtime_imports(tree: ast.Module):
    """(import node, inside a function) for every import that runs: ``if TYPE_CHECKING:`` bodies left out."""
    def walk(node: ast.AST, in_function: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from (x for n in child.orelse for x in walk_one(n, in_function))
                continue
            yield from walk_one(child, in_function)

    def walk_one(node: ast.AST, in_function: bool):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
        yield from walk(node, in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    yield from walk(tree, False)


def project_imports() -> list[Import]:
    return _imports_under(ROOT)


@lru_cache(maxsize=4)
def _imports_under(root: Path) -> list[Import]:
    modules = module_files(root)

    def resolve(name: str):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    found = []
    for name, (path, is_package) in modules.items():
        rel = path.relative_to(root).as_posix()
        for node, in_function in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    package = name if is_package else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        package = package.rpartition(".")[0]
                    base = f"{package}.{base}" if base else package
                # `from pkg import module` imports the module; `from module import name` the module itself
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in dict.fromkeys(targets):
                imported = resolve(target)
                if imported and imported != name:
                    found.append(Import(name, imported, rel, node.lineno, in_function))
    return found


def folder_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else "core"


def _graph(imports: list[Import]) -> nx.DiGraph:
    graph = nx.DiGraph()
    for imp in imports:
        graph.add_edge(imp.importer, imp.imported, at=f"{imp.path}:{imp.line}")
    return graph


def _describe(graph: nx.DiGraph, component: frozenset[str]) -> str:
    """One cycle through the component, each edge with the line that makes it."""
    cycle = nx.find_cycle(graph.subgraph(component))
    return " -> ".join(f"{a} ({graph.edges[a, b]['at']})" for a, b in cycle) + f" -> {cycle[0][0]}"


def cycles(imports: list[Import]) -> tuple[nx.DiGraph, set[frozenset[str]]]:
    graph = _graph(imports)
    return graph, {frozenset(c) for c in nx.strongly_connected_components(graph) if len(c) > 1}


def test_no_import_cycle_beyond_the_known_ones():
    graph, found = cycles(project_imports())
    new = [_describe(graph, c) for c in sorted(found - KNOWN_CYCLES, key=sorted)]
    assert not new, "import cycle(s):\n" + "\n".join(new)
    gone = [sorted(c) for c in KNOWN_CYCLES - found]
    assert not gone, f"these cycles are gone (or changed): take them out of KNOWN_CYCLES: {gone}"


def test_stage_folders_import_each_other_only_in_declared_directions():
    imports = project_imports()
    pairs = {(folder_of(i.importer), folder_of(i.imported)) for i in imports}
    across = {p for p in pairs if "core" not in p and p[0] != p[1]}
    reversed_known = {(b, a) for a, b in STAGE_DIRECTIONS
                      if frozenset({a, b}) in KNOWN_FOLDER_CYCLES}
    undeclared = sorted(
        f"{i.path}:{i.line}: {i.importer} -> {i.imported}" for i in imports
        if (folder_of(i.importer), folder_of(i.imported)) in across - STAGE_DIRECTIONS - reversed_known)
    assert not undeclared, "stage folder imports in no declared direction:\n" + "\n".join(undeclared)
    graph = nx.DiGraph(sorted(across))
    found = {frozenset(c) for c in nx.strongly_connected_components(graph) if len(c) > 1}
    assert found <= KNOWN_FOLDER_CYCLES, f"folder-level import cycle(s): {sorted(map(sorted, found))}"
    gone = [sorted(c) for c in KNOWN_FOLDER_CYCLES - found]
    assert not gone, f"these folder cycles are gone: take them out of KNOWN_FOLDER_CYCLES: {gone}"


def test_restructured_folders_import_project_modules_at_module_level():
    def covered(path: str) -> bool:
        return any(path == p or path.startswith(p + "/") for p in MODULE_LEVEL_ONLY)

    lazy = [i for i in project_imports() if i.in_function and covered(i.path) and i.path not in COMMAND_MODULES]
    new = sorted(f"{i.path}:{i.line}: {i.imported}" for i in lazy if i.path not in KNOWN_LAZY)
    assert not new, "function-level imports of project modules:\n" + "\n".join(new)
    gone = KNOWN_LAZY - {i.path for i in lazy}
    assert not gone, f"no function-level project import left in {sorted(gone)}: take them out of KNOWN_LAZY"


def test_the_graph_sees_function_level_imports_and_skips_type_checking_ones(tmp_path, monkeypatch):
    """The checker itself: a cycle made only by an import inside a function is found; one made by an
    ``if TYPE_CHECKING:`` import is not (it never runs)."""
    pkg = tmp_path / "babelrag"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from babelrag import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import x\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from babelrag import d\n")
    (pkg / "d.py").write_text("import babelrag.c\n")
    for folder in STAGES:
        (tmp_path / folder).mkdir()
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    graph, found = cycles(project_imports())
    assert found == {frozenset({"babelrag.a", "babelrag.b"})}
    assert "b.py:2" in _describe(graph, frozenset({"babelrag.a", "babelrag.b"}))
