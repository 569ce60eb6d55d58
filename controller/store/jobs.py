"""JobStore: the only place with SQL. Every state change is one transaction and a compare-and-set.

One facade over modules by concern, each a mixin whose methods share the store's state (caches of
parsed requests, dependencies, reasons and usage):

    intake.py      submission: jobs, arrays, batches, idempotency keys
    scheduling.py  the pass's snapshot and `apply` of its plan
    actions.py     cancel, hold, release, requeue, update
    nodesync.py    the agents' sync: registration, reports, orders, prologs/epilogs, lost nodes
    queries.py     reads for the API (squeue, sacct, sinfo, air list)
    blobs.py       air runs' code and secrets
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, event

from slurmlet.controller.config import ClusterConfig
from slurmlet.controller.core.model import Request

from . import deps
from .accounts import AccountStore
from .actions import Actions
from .base import ACTIVE_STATES, FINAL_STATES, compress, request_of
from .blobs import CodeAndSecrets
from .guard import wrote
from .intake import Intake
from .nodesync import NodeSync
from .queries import Queries
from .scheduling import Scheduling

__all__ = ["JobStore", "ACTIVE_STATES", "FINAL_STATES", "compress", "request_of"]


class JobStore(Intake, Scheduling, Actions, NodeSync, Queries, CodeAndSecrets):
    """All reads and writes of jobs and nodes."""

    def __init__(self, engine: Engine, config: ClusterConfig):
        self.engine = engine
        self.config = config
        #: writes committed on this engine so far (all of them are the event loop's: the routes are
        #: coroutines): `listed` gives the list it made last for the same filters again, reading
        #: nothing, while none was (squeue in a loop)
        self.commits = 0
        event.listen(engine, "commit", self._committed)
        self._requests: dict[int, Request] = {}
        self._last_reasons: dict[int, str] = {}
        self._last_priority: dict[int, int] = {}
        self._last_est: dict[int, float | None] = {}
        self.weights = config.priority_weights()
        self.sched = config.sched_config()
        self._deps: dict[int, tuple[deps.Dependency, bool]] = {}  #: parsed once per pending job
        self._dep_updates: dict[int, str | None] = {}
        self._dep_kill: list[int] = []
        self.next_dep_time: float | None = None
        self._usage_at: float | None = None  #: when per-association usage was last computed
        self._assoc_usage: dict[tuple[str, str], float] = {}
        self.accounts = AccountStore(engine, config.cluster_name)
        self._fs: tuple | None = None  #: (accounts version, usage time) -> fair-share factors
        #: nodes whose agents have new orders outside a scheduling pass (prologs done, epilogs to run)
        self.notify_hosts: set[str] = set()
        #: PrologSlurmctld/EpilogSlurmctld rows may be waiting for the controller
        self.controller_scripts = True
        #: node rows for submit-time checks (capacity_rows); None: read them again
        self._capacity_rows: list[Any] | None = None

    def _committed(self, conn: Any) -> None:
        if wrote(conn):
            self.commits += 1

    def set_config(self, config: ClusterConfig) -> None:
        """scontrol reconfigure: the new configuration, for the next request and pass on."""
        self.config = config
        self.weights = config.priority_weights()
        self.sched = config.sched_config()
        self._usage_at = None

