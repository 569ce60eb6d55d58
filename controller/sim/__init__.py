"""`slurmlet simulate`: replay Standard Workload Format traces through the scheduling core.

`swf` parses and cleans traces into plain dataclasses (`sacct` reads `sacct -P -X` dumps into
the same); `engine` runs them on a virtual clock through `controller.core.plan.plan`; `report`
cuts replays into per-partition, account and user figures, and `html` draws them, with plots, as
one self-contained page. See docs/simulate.md.
"""

from .engine import POLICIES, Engine, Policy, SimResult, SimulationError, policy, simulate
from .swf import SwfError, SwfJob, Trace, load, parse

__all__ = ["POLICIES", "Engine", "Policy", "SimResult", "SimulationError", "SwfError", "SwfJob", "Trace",
           "load", "parse", "policy", "simulate"]
