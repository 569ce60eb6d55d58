"""The controller's live state: its settings, the Controller (the store, the wake-up events, the
node long-polls, the scheduling statistics) and what routes and loops share. The scheduling pass
itself is loops/scheduler.py's; routes record intent and set `Controller.wake`."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from slurmlet.common import render_squeue
from slurmlet.common.wire import DEFAULT_PORT

from . import auth
from .config import ClusterConfig
from .errors import InvalidRequest
from .store.engine import make_engine
from .store.guard import FileGuard, sqlite_path, watch
from .store.jobs import JobStore

if TYPE_CHECKING:
    from .spool import Spool
    from .store.lease import Lease

log = logging.getLogger("slurmlet.controller")
VERSION = "22.05.8"


@dataclass
class Settings:
    db_url: str
    config: ClusterConfig
    listen: str = f"127.0.0.1:{DEFAULT_PORT}"
    #: how long an agent's sync may wait for orders (the agent asks; this caps it)
    max_long_poll: float = 5.0
    #: periodic scheduling pass even without events (BeginTime, node changes)
    sched_interval: float = 1.0
    #: how long a pass waits after its first wake-up for more events to coalesce. Short: a job
    #: submitted right after another one (a script's loop of sbatch) is placed, launched and its end
    #: reported before the next submission comes (5 ms made that end report and the next request
    #: meet, and the request wait behind it: 11.6 -> 10.9 ms a back-to-back sbatch here); a burst's
    #: requests come well within it, and pass_spacing keeps long passes apart
    debounce: float = 0.002
    #: no pass for this long: the next wake-up starts one almost at once (loops/scheduler.py LONE_DELAY:
    #: a burst's first event has nothing to coalesce with; the events that follow it are debounced)
    debounce_after: float = 0.05
    #: after a pass of T seconds the next event-driven one waits at least T * pass_spacing: under a
    #: stream of events (a submission burst) passes take at most 1/(1 + pass_spacing) of the event
    #: loop, and the requests between them are answered instead of waiting behind queue scans
    pass_spacing: float = 2.0
    clock: Callable[[], float] = time.time
    #: re-reads the configuration file (slurm.conf or the JSON spec) for `scontrol reconfigure`
    reload: Callable[[], ClusterConfig] | None = None
    #: the cluster key (controller/auth.py); None: no authentication, every request is trusted
    key: bytes | None = None
    #: the request spool for this host's users, who are who the kernel says (spool.py); None: none
    spool: str | None = None
    #: which of slurm.conf's SlurmctldHost this controller is (failover.whoami; None: this host's name)
    host: str | None = None


@dataclass
class PassStats:
    """One kind of scheduling pass, as sdiag reports it (times in microseconds)."""

    cycles: int = 0
    last_us: int = 0
    max_us: int = 0
    total_us: int = 0
    last_depth: int = 0  #: jobs examined
    total_depth: int = 0
    last_queue: int = 0  #: pending jobs in the snapshot
    total_queue: int = 0
    last_when: float | None = None

    def add(self, us: int, depth: int, queue: int, when: float) -> None:
        self.cycles += 1
        self.last_us, self.max_us, self.total_us = us, max(self.max_us, us), self.total_us + us
        self.last_depth, self.total_depth = depth, self.total_depth + depth
        self.last_queue, self.total_queue = queue, self.total_queue + queue
        self.last_when = when

    def public(self) -> dict:
        n = self.cycles or 1
        return {"cycles": self.cycles, "last_cycle_us": self.last_us, "max_cycle_us": self.max_us,
                "mean_cycle_us": self.total_us // n, "last_depth": self.last_depth,
                "mean_depth": self.total_depth // n, "last_queue_length": self.last_queue,
                "mean_queue_length": self.total_queue // n, "last_cycle_when": self.last_when}


#: questions waiting for one node's answers at most (Controller.ask)
ASKS_PER_NODE = 32
#: how many passes Stats.history keeps
HISTORY = 2000


@dataclass
class Stats:
    main: PassStats = field(default_factory=PassStats)
    backfill: PassStats = field(default_factory=PassStats)
    skipped: int = 0  #: loop wake-ups that found nothing changed and ran no pass
    jobs_started: int = 0
    backfilled: int = 0
    preempted: int = 0
    started: float = field(default_factory=time.time)
    #: the last passes, for the dashboard's Scheduler page: (when, "main" or "backfill", microseconds,
    #: jobs examined, jobs pending, jobs started)
    history: deque = field(default_factory=lambda: deque(maxlen=HISTORY))


@dataclass
class DbHealth:
    """The controller's own outages. While its database refuses writes (locked, read-only, gone) or
    its event loop stands still, the agents' heartbeats are not recorded: that silence is the
    controller's, not the nodes'. The reaper counts a node's silence from `since` at the earliest
    (loops/reaper.py), and not at all while `failing`."""

    #: when the controller began to hear its nodes: its start, or the end of its last outage
    since: float
    #: when the current outage began (None: the database works)
    failing: float | None = None
    why: str = ""

    def failed(self, now: float, why: str) -> None:
        """A transaction was refused for the database's sake."""
        if self.failing is None:
            self.failing = now
            log.error("the database refuses changes (%s): the nodes' silence is not counted until it takes them "
                      "again", why, extra={"action": "database"})
        self.why = why

    def worked(self, now: float) -> None:
        """A change was committed: an outage ends here, and every node gets SlurmdTimeout from now."""
        if self.failing is not None:
            log.warning("the database takes changes again after %.1f s: the nodes' silence counts from now",
                        now - self.failing, extra={"action": "database"})
            self.failing = None
            self.since = max(self.since, now)

    def away(self, now: float) -> None:
        """The controller itself stood still until `now` (its loop did not run): nothing was heard."""
        self.since = max(self.since, now)


class Controller:
    """The daemon's live state: the store, the wake-up events and the scheduling pass."""

    def __init__(self, settings: Settings, lease: Lease | None = None):
        self.settings = settings
        self.config = settings.config
        self.clock = settings.clock
        self.store = JobStore(make_engine(settings.db_url), settings.config)
        if lease is not None:  # (every change it makes checks that this controller still holds the lease)
            lease.fence(self.store.engine)
        self.nonces = auth.Nonces(since=settings.clock())  #: credentials already used (each is good once)
        #: the request spool (Settings.spool), started with the app
        self.spool: Spool | None = None
        #: squeue's text as GET /api/v1/squeue rendered it last, per view (the CLI's own renderer)
        self.squeue_kept = render_squeue.Kept()
        self.db = DbHealth(since=self.clock())
        path = sqlite_path(self.store.engine)
        watch(self.store.engine, lambda why: self.db.failed(self.clock(), why), lambda: self.db.worked(self.clock()),
              FileGuard(path) if path else None)
        self.store.accounts.ensure_defaults(self.clock())
        self.wake = asyncio.Event()
        self.node_events: dict[str, asyncio.Event] = {}
        #: the long-poll each node's agent is waiting in, if any: set to end it early
        self.node_waits: dict[str, asyncio.Event] = {}
        self.stats = Stats()
        self.next_begin: float | None = None
        self.last_sync: dict[str, float] = {}
        #: sstat: the steps ("JOB.STEP") whose tasks each node must sample now, and what came back
        #: (key -> one collector per waiting sstat: node -> the tasks' figures); `stat_came` is set (and
        #: replaced) on each answer
        self.stat_wanted: dict[str, set[str]] = {}
        self.stat_got: dict[str, list[dict[str, list]]] = {}
        self.stat_came = asyncio.Event()
        #: scancel JOB.STEP: the steps whose kill_step orders say to kill at once ("now"), by key, with
        #: when (kept 10 minutes: an order is repeated until the step's report arrives)
        self.steps_kill_now: dict[str, tuple[float, int | None]] = {}
        #: sattach: orders for nodes to send a step's output to one more address
        self.attach_wanted: dict[str, list[dict]] = {}
        #: questions for agents, carried by their next sync (the dashboard's output tail and usage
        #: series): node -> orders; each order's "key" names the future its answer resolves
        self.asks_wanted: dict[str, list[dict]] = {}
        self.asks: dict[str, asyncio.Future] = {}
        #: set (and replaced) whenever jobs may have ended or started: `GET /jobs/{id}?wait=` waits on it
        self.ended = asyncio.Event()
        #: the dashboard's last look at what it shows: (when, `ended` then, fingerprint); see api/web.py
        self.ui_look: tuple | None = None
        self.bf_enabled = self.store.sched.backfill
        self.bf_interval = settings.config.bf_interval()
        self.bf_dirty = self.bf_enabled  #: something changed since the last backfill pass
        self.next_bf = 0.0
        self.script_tasks: set[asyncio.Task] = set()  #: PrologSlurmctld/EpilogSlurmctld runs
        #: when (time.monotonic) the next event-driven pass may start: see Settings.pass_spacing
        self.next_pass = 0.0
        self.last_pass_end = 0.0  #: (time.monotonic) when the last pass ended
        #: an srun's or salloc's allocation was asked for since the last pass: the next one is not
        #: debounced (slurmctld places an allocation in the request that asks for it; sbatch's jobs
        #: wait for batch_sched_delay)
        self.place_now = False
        if self.config.home_storage:  # a spec's home_directory_storage: users' homes live there
            import os
            os.makedirs(self.config.home_storage, exist_ok=True)

    def reconfigure(self) -> list[str]:
        """scontrol reconfigure: re-read the configuration and swap it in whole, or change nothing
        (a malformed file, or a change to a parameter fixed at cluster creation). Returns its warnings."""
        from slurmlet.controller.config import ConfigError
        if self.settings.reload is None:
            raise InvalidRequest("the controller was started without a configuration file")
        try:
            new = self.settings.reload()
        except ConfigError as e:
            raise InvalidRequest(f"{e}; the running configuration is unchanged") from None
        fixed = self.config.fixed_changes(new)
        if fixed:
            raise InvalidRequest(f"{'; '.join(fixed)}: set at cluster creation, a change needs a restart; "
                                 f"the running configuration is unchanged")
        # one synchronous swap: no request or scheduling pass sees half of the old and half of the new
        self.settings = dataclasses.replace(self.settings, config=new)
        self.config = new
        self.store.set_config(new)
        self.bf_enabled = self.store.sched.backfill
        self.bf_interval = new.bf_interval()
        self.bf_dirty, self.next_bf = self.bf_enabled, 0.0
        self.wake.set()
        return list(new.warnings)

    def run_controller_scripts(self) -> None:
        """Start the PrologSlurmctld/EpilogSlurmctld runs waiting in the store; they run as
        subprocesses of their own and never block the event loop."""
        for r in self.store.claim_controller_scripts():
            task = asyncio.create_task(self._controller_script(r))
            self.script_tasks.add(task)
            task.add_done_callback(self.script_tasks.discard)

    async def _controller_script(self, r) -> None:  # noqa: ANN001
        import json

        from slurmlet.common.scripts import run_scripts
        payload = json.loads(r.payload)
        code, out = await run_scripts(payload["script"], payload["env"])
        if code:
            log.error("%s JobId=%s %s exit status %s:0: %s", r.kind, r.job_id, r.kind.split("_")[0], code,
                      out.strip()[-300:], extra={"action": r.kind})
        self.store.controller_script_done({"job_id": r.job_id, "run": r.run, "kind": r.kind, "exit_code": code},
                                          self.clock())
        self.notify(self.store.take_notify())
        self.wake.set()

    def node_event(self, name: str) -> asyncio.Event:
        ev = self.node_events.get(name)
        if ev is None:
            ev = self.node_events[name] = asyncio.Event()
        return ev

    def jobs_changed(self) -> None:
        self.ended.set()
        self.ended = asyncio.Event()

    async def ask(self, node: str, order: dict, timeout: float) -> dict | None:
        """Put `order` to `node`'s agent with its next sync and wait for its answer (None when none
        comes within `timeout` seconds: the node is silent, or answers in an older version)."""
        import secrets
        if len(self.asks_wanted.get(node, ())) >= ASKS_PER_NODE:
            return {"error": f"node {node} has too many questions waiting; try again"}
        key = secrets.token_hex(8)
        fut = asyncio.get_running_loop().create_future()
        self.asks[key] = fut
        self.asks_wanted.setdefault(node, []).append(dict(order, key=key))
        self.notify([node])
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return None
        finally:
            self.asks.pop(key, None)
            left = [o for o in self.asks_wanted.get(node, []) if o["key"] != key]
            if left:
                self.asks_wanted[node] = left
            else:
                self.asks_wanted.pop(node, None)

    def kill_now(self, key: str, first: int | None = None) -> None:
        """scancel JOB.STEP, srun's forced termination: the step's kill orders say to kill its tasks at
        once (SIGKILL), after signal `first` (srun's Ctrl-C)."""
        now = self.clock()
        if len(self.steps_kill_now) >= 1000:
            self.steps_kill_now = {k: v for k, v in self.steps_kill_now.items() if now - v[0] < 600}
        self.steps_kill_now[key] = (now, first)

    def answered(self, answers: list[dict]) -> None:
        """An agent's answers to `ask`s (one nobody waits for any more is dropped)."""
        for a in answers:
            fut = self.asks.get(str(a.get("key")))
            if fut is not None and not fut.done():
                fut.set_result(a)

    def notify(self, hosts) -> None:  # noqa: ANN001
        for h in hosts:
            if h:
                self.node_event(h).set()
