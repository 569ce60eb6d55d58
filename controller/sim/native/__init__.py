"""The scheduling core compiled with mypyc, for the simulator.

setup.py builds controller/core's modules and the simulator's `Ranking` (`digest.MODULES`) from
the installed sources as this package's extension modules, beside a `stamp` module holding the
sources' digest. `load()` returns them only while that digest is the installed sources': after an
edit of the core without a rebuild, the simulator runs the Python core instead. The controller
never imports this package.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from .digest import MODULES, PACKAGE, digest


def load() -> dict[str, ModuleType]:
    """The compiled modules by name; ImportError (saying why) when there are none to use."""
    try:
        stamp = importlib.import_module(f"{PACKAGE}.stamp")
    except ImportError:
        raise ImportError("not built (the install was not asked for it with SLURMLET_COMPILE=1, found no C "
                          "compiler or mypyc, or the build failed: `pip install -v` shows why)") from None
    from slurmlet import controller
    try:
        sources = digest(Path(controller.__file__).parent)
    except OSError as e:
        raise ImportError(f"not checked against the installed sources ({e.strerror}: {e.filename})") from None
    if stamp.SOURCES != sources:
        raise ImportError("built from other sources than the installed core (reinstall to rebuild it)")
    mods = {m: importlib.import_module(f"{PACKAGE}.{m}") for m in MODULES}
    for m, mod in mods.items():
        if Path(mod.__file__ or "").suffix == ".py":
            raise ImportError(f"{PACKAGE}.{m} is not compiled")
    return mods
