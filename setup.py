"""Builds slurmlet (pyproject.toml holds everything else), with the simulator's compiled core when asked.

`slurmlet simulate` replays traces through the scheduling core (controller/core) thousands of
passes a second. With SLURMLET_COMPILE=1 in the environment of the install (`SLURMLET_COMPILE=1
pip install .`; test.sh sets it), mypy 2.4.1 becomes a build requirement and, where its compiler
(mypyc) and a C compiler are at hand, the wheel also holds the core's modules and the simulator's
`Ranking` (controller/sim/native/digest.py lists them) compiled, as the package
`slurmlet.controller.sim.native`, from the same sources: staged under build/native-src with that
package name (mypyc names a module after its path), beside a `stamp` module holding the sources'
digest. The simulator uses them only while that digest matches the installed sources
(controller/sim/native/__init__.py); the controller always runs the Python core.

Without SLURMLET_COMPILE (a plain `pip install .`) nothing is compiled and mypy is not installed:
the wheel is pure Python. Asked for but without a C compiler that builds against Python.h, or
without mypyc (a build without isolation), the wheel is pure Python too; should the compiled build
itself fail, the wheel (tagged for this platform) has no compiled core. Either way the simulator
runs the Python core, and a warning (`pip install -v`) says why.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "controller" / "sim" / "native"))
from digest import MODULES, PACKAGE, digest  # noqa: E402 - the one list of compiled modules, beside its loader

del sys.path[0]


#: the environment variable that asks the install for the compiled core
COMPILE = "SLURMLET_COMPILE"
#: what compiles it (pip installs it into an isolated build only when it is asked for)
MYPYC = "mypy==2.4.1"


def _asked() -> bool:
    return os.environ.get(COMPILE, "") not in ("", "0")


def _warn(msg: str) -> None:
    print(f"slurmlet setup: {msg}; the simulator will run the Python core", file=sys.stderr)


def _compiler_problem() -> str | None:
    """Why this interpreter's C compiler cannot build an extension module (None: it can), found by
    compiling a file that includes Python.h, as build_ext would: a wheel without the compiled core
    must then be a pure one (a failure in build_ext itself would leave a platform wheel)."""
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    if not cc or shutil.which(cc[0]) is None:
        return "no C compiler found"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "probe.c")
        src.write_text("#include <Python.h>\nint slurmlet_probe(void) { return 0; }\n")
        cmd = [*cc, *shlex.split(os.environ.get("CFLAGS", "")), "-I", sysconfig.get_paths()["include"],
               "-c", str(src), "-o", str(Path(tmp, "probe.o"))]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"the C compiler did not run ({e})"
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
            return f"the C compiler cannot build against Python.h ({cc[0]}: {last})"
    return None


#: the setup.py commands that build extension modules: the others (egg_info and dist_info, which pip
#: runs for the metadata first; sdist) leave mypyc and the compiler alone
_BUILDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "install", "develop", "bdist_egg"}


def native_extensions() -> list:
    if not _BUILDS & set(sys.argv[1:]):
        return []
    if not _asked():
        _warn(f"{COMPILE} is not set (the compiled core is opt-in: {COMPILE}=1 pip install ...)")
        return []
    problem = _compiler_problem()
    if problem is not None:
        _warn(problem)
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
    except (Exception, SystemExit) as e:  # noqa: BLE001 - mypy reports type errors by exiting
        _warn(f"mypyc could not compile the core ({e})")
        return []
    finally:
        os.chdir(cwd)


class OptionalBuildExt(build_ext):
    """build_ext that leaves the wheel pure Python when the C build fails."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - CompileError, LinkError, a missing header...
            _warn(f"the compiled core did not build ({e})")
            for ext in self.extensions:
                Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)


# setup_requires is what setuptools' build backend answers pip's get_requires_for_build_* with: mypy
# only when the compiled core is asked for
setup(ext_modules=native_extensions(), cmdclass={"build_ext": OptionalBuildExt},
      setup_requires=[MYPYC] if _asked() else [])
