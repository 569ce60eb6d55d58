"""`Memo`: what `plan()` keeps from one cycle to the next, owned by its caller.

Successive snapshots of one cluster share most of what a cycle derives from them: the nodes'
preference order and partition membership, partition-limit verdicts, the part of each job's
priority that does not age. A caller that plans a sequence of snapshots (the scheduler loop, a
simulation) keeps one `Memo` and passes it to every `plan()`; a fresh one (or none) gives the same
plan, computed from scratch. Every entry is keyed so that a changed input misses it: by the same
frozen objects (identity, the object held beside its id so that the id stays its own) or by value.
One memo serves one caller at a time (it is not locked).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Partition, Request
    from .nodes import Caps, Nodes, Verdicts
    from .priority import Weights


class Memo:
    """The caches of `plan()` across cycles (see the module's docstring); empty when new."""

    __slots__ = ("nodes", "limits", "whole", "whole_by_value", "bases", "last_bases", "seconds")

    def __init__(self) -> None:
        #: the derived node data of the last cycle (`nodes.nodes_of`)
        self.nodes: Nodes | None = None
        #: partition-limit verdicts per (partition, DefMemPerCPU, the nodes' capacities): see `nodes.limits_of`
        self.limits: dict[tuple[Partition, int, tuple[Caps, ...]], Verdicts] = {}
        #: id(request) -> (request, node shape, DefMemPerCPU, `nodes.whole_nodes`)
        self.whole: dict[int, tuple[Request, tuple[int, int, int], int, int]] = {}
        #: (request, cpus, memory, gpus, DefMemPerCPU) -> `nodes.whole_nodes`, by value
        self.whole_by_value: dict[tuple[Request, int, int, int, int], int] = {}
        #: per priority context (`order._base_context`): id(job) -> (job, its priority without age,
        #: site and nice), and None -> how many of those jobs have a site factor or a nice value
        self.bases: dict[tuple[Any, ...], dict[Any, Any]] = {}
        #: the last cycle's (weights, partitions, node count, CPU count, its `bases` entry)
        self.last_bases: tuple[Weights, tuple[Partition, ...], int, int, dict[Any, Any]] | None = None
        #: a time limit in minutes -> in seconds, rounded to the microsecond (`cycle.seconds_of`)
        self.seconds: dict[float, float] = {}
