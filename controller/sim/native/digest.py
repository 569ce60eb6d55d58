"""Which core modules the simulator's compiled core holds, and the digest that ties it to them.

Imported by setup.py (by path, before the package exists) and by the loader beside it: standard
library only, no package-relative imports.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: the package the compiled modules are built as
PACKAGE = "slurmlet.controller.sim.native"
#: name -> source under controller/ (the package `slurmlet.controller`): the core modules that
#: plan() runs on (they import only each other) and the simulator's `Ranking` (standard library only)
MODULES = {"priority": "core/priority.py", "model": "core/model.py", "alloc": "core/alloc.py",
           "limits": "core/limits.py", "timemap": "core/timemap.py", "memo": "core/memo.py", "nodes": "core/nodes.py",
           "order": "core/order.py", "cycle": "core/cycle.py", "preempt": "core/preempt.py",
           "mainpass": "core/mainpass.py", "backfill": "core/backfill.py", "plan": "core/plan.py",
           "ranking": "sim/ranking.py"}


def digest(controller_dir: Path) -> str:
    """SHA-256 over the modules' names and sources, in MODULES' order."""
    h = hashlib.sha256()
    for m, rel in MODULES.items():
        h.update(m.encode() + b"\0" + (Path(controller_dir) / rel).read_bytes() + b"\0")
    return h.hexdigest()
