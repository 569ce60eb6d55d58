"""The scheduling core holds no state of its own: what cycles keep from one another is the
caller's `Memo`."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections import deque
from pathlib import Path

from slurmlet.controller import core
from slurmlet.controller.core.memo import Memo
from slurmlet.controller.core.model import Node, Partition, PendingJob, Request, Snapshot
from slurmlet.controller.core.plan import plan
from slurmlet.controller.core.priority import Weights

MUTABLE = (dict, list, set, bytearray, deque)


def _modules() -> list:
    return [importlib.import_module(f"{core.__name__}.{m.name}") for m in pkgutil.iter_modules(core.__path__)]


def _state(mods: list) -> list[str]:
    """Module-level names bound to a mutable container or to a function with a cache."""
    return [f"{mod.__name__}.{name}" for mod in mods for name, value in vars(mod).items()
            if not name.startswith("__") and (isinstance(value, MUTABLE) or hasattr(value, "cache_info"))]


def _snapshot(now: float) -> Snapshot:
    nodes = tuple(Node(f"n{i}", cpus=4, memory=8000, gpus=0, cpus_used=4 if i < 2 else 0) for i in range(4))
    pending = tuple(PendingJob(job_id=i, partition="p", request=Request(nodes_min=1 + i % 2), submit_time=float(i),
                               time_limit=10.0, eligible_time=0.0) for i in range(1, 9))
    return Snapshot(now=now, nodes=nodes, partitions=(Partition("p", tuple(n.name for n in nodes)),), pending=pending,
                    weights=Weights(age=100, jobsize=10))


def test_no_module_of_the_core_holds_mutable_state_before_or_after_a_plan():
    mods = _modules()
    assert len(mods) >= 10 and _state(mods) == []
    memo = Memo()
    for now in (100.0, 200.0):
        assert plan(_snapshot(now), backfill=True, memo=memo) == plan(_snapshot(now), backfill=True)
    assert memo.nodes is not None and memo.bases  # the caller's memo kept what cycles share
    assert _state(mods) == []


def test_no_module_of_the_core_rebinds_a_global():
    here = Path(core.__file__).parent
    found = [f"{path.name}:{node.lineno}" for path in sorted(here.glob("*.py"))
             for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Global | ast.Nonlocal)]
    assert found == []
