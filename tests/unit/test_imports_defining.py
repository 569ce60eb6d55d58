"""Each name is imported from the module that defines it: no module of the package answers names lazily
(a module-level PEP 562 ``__getattr__``), and no import asks a module for a name that module itself
only imported (a re-export), whether as ``from m import name`` or as ``m.name`` after ``import m``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = {"cli": "slurmlet.cli", "common": "slurmlet.common", "controller": "slurmlet.controller",
         "nodeagent": "slurmlet.nodeagent"}


def _modules() -> dict[str, Path]:
    """slurmlet's modules by dotted name, from the source folders (pyproject's package-dir)."""
    out = {}
    for folder, package in PARTS.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join((package, *rel))] = path
    return out


MODULES = _modules()
TREES = {name: ast.parse(path.read_text(), str(path)) for name, path in MODULES.items()}


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _imported_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level by `from ... import` (under `if` blocks too); modules
    it imports whole (`import os`) are its own business, and patched through it in tests."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.ImportFrom) and _top_level(tree, node):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _top_level(tree: ast.Module, target: ast.AST) -> bool:
    def walk(body: list[ast.stmt]) -> bool:
        for node in body:
            if node is target:
                return True
            if isinstance(node, ast.If | ast.Try) and any(
                    walk(b) for b in (node.body, node.orelse, *(h.body for h in getattr(node, "handlers", ())),
                                      getattr(node, "finalbody", []))):
                return True
        return False
    return walk(tree.body)


def _defined_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level other than by importing them."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _top_level(tree, node):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


IMPORTED = {name: _imported_names(tree) - _defined_names(tree) for name, tree in TREES.items()}


def test_no_module_answers_names_lazily() -> None:
    lazy = [name for name, tree in TREES.items()
            if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body)]
    assert lazy == []


def test_names_are_imported_from_the_module_that_defines_them() -> None:
    found = []
    for path in sorted([*MODULES.values(), *(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]):
        module = next((m for m, p in MODULES.items() if p == path), None)
        tree = TREES[module] if module else ast.parse(path.read_text(), str(path))
        aliases: dict[str, str] = {}  # a local name -> the slurmlet module it names
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _absolute(module, node) if module else (node.module or "")
                for a in node.names:
                    if f"{source}.{a.name}" in MODULES:
                        aliases[a.asname or a.name] = f"{source}.{a.name}"
                    elif a.name in IMPORTED.get(source, ()):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {a.name} from {source}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in MODULES:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.attr in IMPORTED.get(aliases.get(node.value.id, ""), ())):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr} "
                             f"(defined elsewhere than {aliases[node.value.id]})")
    assert found == [], "\n".join(found)
