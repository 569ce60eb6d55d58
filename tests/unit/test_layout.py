"""The package layout's rules (docs/architecture.md), checked on the source so that they stay true:
one installed top-level package, each room importing only what it may."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

ROOMS = ("cli", "common", "controller", "nodeagent")
STDLIB = sys.stdlib_module_names


def modules(room: str) -> dict[str, Path]:
    """slurmlet.<room>.* dotted name -> source file."""
    out = {}
    for path in sorted((ROOT / room).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(["slurmlet", *parts])] = path
    return out


def imports(name: str, path: Path) -> set[str]:
    """Every module a file imports, anywhere in it (function-level imports too), as absolute names."""
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            # `from . import x` / `from slurmlet.common import cred` import submodules by name
            found.update(f"{mod}.{a.name}" for a in node.names)
    return found


def room_of(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[1] if parts[0] == "slurmlet" and len(parts) > 1 else None


ALL = {n: p for room in ROOMS for n, p in modules(room).items()}


def test_every_package_is_installed_and_nothing_else() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert cfg["package-dir"] == {f"slurmlet.{r}": r for r in ROOMS}
    folders = sorted("slurmlet." + ".".join(p.parent.relative_to(ROOT).parts)
                     for r in ROOMS for p in (ROOT / r).rglob("__init__.py"))
    assert sorted(cfg["packages"]) == folders


@pytest.mark.parametrize("room", ROOMS)
def test_no_room_imports_another_room(room: str) -> None:
    allowed = {"cli": {"cli", "common"}, "common": {"common"}, "controller": {"controller", "common"},
               "nodeagent": {"nodeagent", "common"}}[room]
    bad = []
    for name, path in modules(room).items():
        if name == "slurmlet.cli.main":  # the one entry point: it dispatches to the daemons
            continue
        bad += [f"{name} imports {m}" for m in imports(name, path) if room_of(m) and room_of(m) not in allowed]
        bad += [f"{name} imports {m} (not slurmlet.{m})" for m in imports(name, path) if m.split(".")[0] in ROOMS]
    assert bad == []


def test_common_and_the_scheduling_core_are_stdlib_only() -> None:
    bad = []
    for name, path in ALL.items():
        if not (name.startswith(("slurmlet.common", "slurmlet.controller.core"))):
            continue
        for m in imports(name, path):
            top = m.split(".")[0]
            if top == "slurmlet":
                ok = room_of(m) == "common" or (name.startswith("slurmlet.controller.core")
                                                and m.startswith("slurmlet.controller.core"))
            else:
                ok = top in STDLIB
            if not ok:
                bad.append(f"{name} imports {m}")
    assert bad == []


def test_imported_slurmlet_modules_exist() -> None:
    """A moved module leaves no import of its old name behind."""
    missing = []
    for name, path in ALL.items():
        for m in imports(name, path):
            if m.startswith("slurmlet.") and m not in ALL and m.rpartition(".")[0] not in ALL:
                missing.append(f"{name} imports {m}")
    assert missing == []


@pytest.mark.e2e
def test_the_wheel_installs_one_top_level_package(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (wheel,) = tmp_path.glob("slurmlet-*.whl")
    tops = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith((".dist-info", ".data"))} == {"slurmlet"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "slurmlet/controller/store/migrations/script.py.mako" in names
    assert "slurmlet/common/cred.py" in names and "slurmlet/cli/main.py" in names


def test_only_the_simulator_runs_the_compiled_core() -> None:
    """controller/sim/native (the core compiled for the simulator by setup.py) is imported by the
    simulator's engine alone, and the modules it is compiled from import the standard library and
    one another only (staged as one package, anything else would not compile)."""
    native = "slurmlet.controller.sim.native"
    users = sorted(n for n, p in ALL.items() if not n.startswith(native)
                   and any(m == native or m.startswith(native + ".") for m in imports(n, p)))
    assert users == ["slurmlet.controller.sim.engine"]
    from slurmlet.controller.sim.native.digest import MODULES
    compiled = {"slurmlet.controller." + rel.removesuffix(".py").replace("/", "."): m for m, rel in MODULES.items()}
    bad = []
    for name in compiled:
        for m in imports(name, ALL[name]):
            top = m.split(".")[0]
            if not (top in STDLIB or m in compiled or (top == "slurmlet" and m.rpartition(".")[0] in compiled)
                    or m == name.rpartition(".")[0]):
                bad.append(f"{name} imports {m}")
    assert bad == []
