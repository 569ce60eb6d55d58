"""Builds slurmlet (pyproject.toml holds everything else) with the simulator's compiled core.

`slurmlet simulate` replays traces through the scheduling core (controller/core) thousands of
passes a second. Where mypy's compiler (mypyc, a build requirement) and a C compiler are at hand,
the wheel also holds the core's modules and the simulator's `Ranking` (controller/sim/native/
digest.py lists them) compiled, as the package `slurmlet.controller.sim.native`, from the same
sources: staged under build/native-src with that package name (mypyc names a module after its
path), beside a `stamp` module holding the sources' digest. The simulator uses them only while
that digest matches the installed sources (controller/sim/native/__init__.py); the controller
always runs the Python core.

Without a C compiler, with SLURMLET_PURE=1 set, or when the compiled build fails, the wheel is
pure Python and the simulator runs the Python core (a warning says why).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "controller" / "sim" / "native"))
from digest import MODULES, PACKAGE, digest  # noqa: E402 - the one list of compiled modules, beside its loader

del sys.path[0]


def _warn(msg: str) -> None:
    print(f"slurmlet setup: {msg}; the simulator will run the Python core", file=sys.stderr)


def _compiler() -> str | None:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    words = shlex.split(cc)
    return shutil.which(words[0]) if words else None


def native_extensions() -> list:
    if os.environ.get("SLURMLET_PURE"):
        return []
    if _compiler() is None:
        _warn("no C compiler found")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _warn("mypyc is not installed")
        return []
    controller = ROOT / "controller"
    stage = ROOT / "build" / "native-src"
    shutil.rmtree(stage, ignore_errors=True)
    pkg = stage.joinpath(*PACKAGE.split("."))
    pkg.mkdir(parents=True)
    for depth in range(1, len(PACKAGE.split(".")) + 1):  # mypyc finds the package name from these
        stage.joinpath(*PACKAGE.split(".")[:depth], "__init__.py").touch()
    for m, rel in MODULES.items():
        shutil.copyfile(controller / rel, pkg / f"{m}.py")
    (pkg / "stamp.py").write_text(f'SOURCES = "{digest(controller)}"\n')
    rel = [str(Path(*PACKAGE.split("."), f"{m}.py")) for m in (*MODULES, "stamp")]
    cwd = os.getcwd()
    os.chdir(stage)
    try:
        return mypycify(rel, opt_level="3", group_name=f"{PACKAGE}.core", target_dir=str(ROOT / "build" / "native-c"))
    except (Exception, SystemExit) as e:  # mypy reports type errors by exiting
        _warn(f"mypyc could not compile the core ({e})")
        return []
    finally:
        os.chdir(cwd)


class OptionalBuildExt(build_ext):
    """build_ext that leaves the wheel pure Python when the C build fails."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # CompileError, LinkError, a missing header...
            _warn(f"the compiled core did not build ({e})")
            for ext in self.extensions:
                Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)


setup(ext_modules=native_extensions(), cmdclass={"build_ext": OptionalBuildExt})
