"""`slurmlet simulate`: replay Standard Workload Format traces through the scheduling core.

`swf` parses and cleans traces into plain dataclasses; `engine` runs them on a virtual clock
through `controller.core.plan.plan`. See docs/simulate.md.
"""

from .engine import POLICIES, Engine, Policy, SimResult, SimulationError, policy, simulate
from .swf import SwfError, SwfJob, Trace, load, parse

__all__ = ["POLICIES", "Engine", "Policy", "SimResult", "SimulationError", "SwfError", "SwfJob", "Trace",
           "load", "parse", "policy", "simulate"]
