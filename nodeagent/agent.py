"""The agent loop: sync with the controller (long-poll), apply orders, report exits at once."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import platform
import shutil
import signal
import stat
import subprocess
import sys
import time
from typing import TYPE_CHECKING
from urllib.parse import quote

import httpx
import psutil

from ..common import cred, scripts
from ..common.wire import ANSWERS_BYTES, DEFAULT_PORT, PIECE, controller_urls
from . import envs, identity, syncclient, unpack
from . import records as records_mod
from .env import batch_environment, script_environment
from .fence import fence_after
from .launcher import OPEN_TIMEOUT, Launcher
from .steps import StepRunner

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("slurmlet.agent")
LONG_POLL = 2.0  # seconds the controller may hold a sync when there is nothing to do


def detect_gpus() -> tuple[int, str | None]:
    """Real NVIDIA GPUs through nvidia-smi: (count, model short name)."""
    if not shutil.which("nvidia-smi"):
        return 0, None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return 0, None
    names = [line.strip() for line in out.splitlines() if line.strip()]
    if not names:
        return 0, None
    model = names[0].replace("NVIDIA", "").split()[0] if names[0].replace("NVIDIA", "").split() else None
    return len(names), model


#: unshare(2)'s flag for a UTS namespace of its own (os.CLONE_NEWUTS from Python 3.12)
CLONE_NEWUTS = 0x04000000


def own_hostname(name: str) -> None:
    """Move this process into a UTS namespace of its own whose host name is `name`: what it starts
    from then on (jobs, steps, Prolog and Epilog, whichever user they run as) inherits it, and
    `hostname`, `uname -n` and gethostname() there say the node's name, as on a node of its own.
    Needs CAP_SYS_ADMIN (root); raises OSError. unshare(2) moves the calling thread only: called
    before the agent starts any thread, every thread it starts later is in the namespace too."""
    unshare = getattr(os, "unshare", None)
    if unshare is not None:  # Python 3.12+
        unshare(CLONE_NEWUTS)
    else:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWUTS) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"unshare(CLONE_NEWUTS): {os.strerror(err)}")
    import socket
    socket.sethostname(name)


#: the longest pause between attempts to reach a controller that does not answer (seconds); an
#: agent also waits at most a quarter of SlurmdTimeout (`max_backoff`): a controller started again
#: gives its nodes one SlurmdTimeout to sync before it takes them for dead
MAX_BACKOFF = 5.0


def max_backoff(slurmd_timeout: float | None) -> float:
    return min(MAX_BACKOFF, max(slurmd_timeout / 4, 0.1)) if slurmd_timeout else MAX_BACKOFF


def jittered(backoff: float) -> float:
    """A pause of about `backoff` seconds, spread over [0.5, 1) of it (never longer): the agents of
    a cluster whose controller comes back do not all call it in the same instant."""
    import random
    return backoff * (0.5 + random.random() / 2)


class Agent:
    spool_lock: int  #: the spool's lock (flock), held as long as the agent runs (set by main)

    def __init__(self, *, controller: str, name: str, cpus: int | None, memory: int | None, gpus: int | None,
                 gpu_type: str | None, addr: str | None, spool: str, kill_wait: float = 30.0,
                 cluster: str = "slurmlet", pool: str | None = None, slurmd_timeout: float | None = None):
        self.controller = controller.rstrip("/")  #: the controllers' addresses (several: separated by commas)
        self.client: syncclient.SyncClient | None = None  #: the syncs' (it knows which controller is active)
        self.max_backoff = max_backoff(slurmd_timeout)
        self.name = name
        real_gpus, real_type = detect_gpus()
        self.resources = {
            "cpus": cpus or psutil.cpu_count() or 1,
            "memory": memory or int(psutil.virtual_memory().total / 1024 / 1024),
            "gpus": real_gpus if gpus is None else gpus,
            "gpu_type": gpu_type or real_type or ("H100" if (gpus or 0) > 0 and not real_gpus else None),
            "addr": addr or "127.0.0.1",
            "hostname": os.uname().nodename,  # (its own where --own-hostname gave it one: not platform's cache)
            "boot_time": psutil.boot_time(),
            "arch": platform.machine(),
            "os": f"{platform.system()} {platform.release()} {platform.version()}",
            "version": "22.05.8",
            "pool": pool,
        }
        self.launcher = Launcher(name, spool, kill_wait)
        self.spool = spool
        self.steps = StepRunner(name, self.resources["addr"], kill_wait, self.launcher.exited, self.code_dir,
                                self.python_env, records=self.launcher.records)
        self.steps.book = self.launcher.book  # one record of the jobs' usage over time, for the dashboard
        #: jobs and steps whose processes a predecessor of this agent left running, killed by
        #: `recover`; reported to the controller (record name -> report) until it has them
        self.lost: dict[str, dict] = {}
        #: long-polls given up for a newer sync, left to end on their own (see _serve)
        self.dropped: set[asyncio.Task] = set()
        self.cluster = cluster
        self.bin_dir = os.path.dirname(sys.argv[0]) if os.path.isabs(sys.argv[0]) else os.path.dirname(
            shutil.which("slurmlet") or sys.executable)
        self.registered = False
        self.says_ending = True  #: sync bodies may carry ending, notified, steps_ending (see _serve)
        #: Prolog/Epilog runs ordered by the controller, by (job, run, kind): when they started, and
        #: the reports of those that ended, until the controller has them
        self.scripts_seen: dict[tuple[int, int, str], float] = {}
        #: those running now (the controller does not order them again meanwhile: see _serve)
        self.scripts_running: set[tuple[int, int, str]] = set()
        self.scripts_done: dict[tuple[int, int, str], dict] = {}
        self.script_tasks: set[asyncio.Task] = set()
        self.stats: list[dict] = []  #: sstat answers for the next sync
        #: answers to the controller's questions (tail, usage), (when made, answer), sent with each sync
        #: until one carrying them succeeds (a sync this agent drops for a newer one may never have
        #: reached the controller), for ANSWER_TTL seconds at most
        self.answers: list[tuple[float, dict]] = []
        self.tailing: set[asyncio.Task] = set()  #: output reads under way
        self.tail_pool: ThreadPoolExecutor | None = None
        #: the questions taken (by key): each comes again with every sync until its answer arrives
        self.asked: dict[str, float] = {}

    async def run(self) -> None:
        """Serve until SIGTERM/SIGINT; then stop every job's processes and return."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await self.recover()  # before registering: nothing of a crashed agent runs on
        main = asyncio.create_task(self._serve())
        stopper = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait({main, stopper}, return_when=asyncio.FIRST_COMPLETED)
        main.cancel()
        stopper.cancel()
        with contextlib.suppress(BaseException):
            await main
        await self.launcher.shutdown()
        await self.steps.shutdown()
        if self.launcher.cgroups is not None:
            self.launcher.cgroups.close()

    async def recover(self) -> None:
        """What an agent before this one (killed, crashed) left in the spool: reports it could not
        deliver are sent again; the processes of jobs and steps it left running are killed with
        their whole trees (SIGTERM, SIGKILL after KillWait) and the jobs reported lost, so that the
        controller ends them NODE_FAIL (requeued when allowed) rather than runs them twice."""
        recs = self.launcher.records.load()
        stale: dict[str, dict] = {}
        for name, rec in recs.items():
            jid = rec["job_id"]
            if rec.get("finished"):
                if rec.get("kind") == "step":
                    key = f"{jid}.{rec['step_id']}"
                    self.steps.finished[key] = rec["finished"]
                    self.steps.done[key] = time.time()
                else:
                    self.launcher.finished[jid] = rec["finished"]
                    self.launcher.done_ids[(jid, int(rec.get("restarts") or 0))] = time.time()
                continue
            if not rec.get("lost"):
                stale[name] = rec
            lost = {"job_id": jid}
            if rec.get("kind") == "step":
                lost["step_id"] = rec["step_id"]
                self.steps.done[f"{jid}.{rec['step_id']}"] = time.time()
            else:
                lost["restarts"] = int(rec.get("restarts") or 0)
                self.launcher.done_ids[(jid, lost["restarts"])] = time.time()  # that run never again here
            self.lost[name] = lost
        h = self.launcher.cgroups
        if h is not None:
            for jid in h.stale_jobs():  # whatever left its session and environment too
                if not await h.group(jid).remove(self.launcher.kill_wait):
                    log.warning("job %s: processes left by the previous agent outlive SIGKILL", jid)
        if stale:
            killed = await records_mod.stop(list(stale.values()), self.launcher.kill_wait)
            for name, rec in stale.items():
                self.launcher.records.save(name, dict(rec, lost=True))
            log.warning("left behind by the previous agent: %s (%d processes killed)",
                        ", ".join(sorted(stale)), killed)

    async def _serve(self) -> None:
        client = self.client = syncclient.SyncClient(self.controller, connect=5.0, timeout=LONG_POLL + 30.0,
                                                     sign=_sign_headers)
        try:
            backoff = 0.1
            while True:
                self.launcher.exited.clear()
                finished = self.launcher.unacked()
                steps_done = self.steps.unacked()
                scripts_done = dict(self.scripts_done)
                stats, self.stats = self.stats, []
                answers = self.answers_to_send()
                body: dict = {"running": self.launcher.running_ids(), "finished": finished,
                              "suspended": self.launcher.suspended_ids(),
                              "steps_running": self.steps.running_keys(), "steps_finished": steps_done,
                              "scripts_done": list(scripts_done.values()), "stats": stats,
                              "answers": answers,
                              # a report of ended jobs or steps waits for orders too: what it says is
                              # taken before the wait (the freed resources wake the scheduler), so the
                              # next job's order comes in the same request, not in one more sync
                              "wait": 0.0 if scripts_done or answers or not self.registered else LONG_POLL,
                              "cpu_load": os.getloadavg()[0],
                              "free_mem": int(psutil.virtual_memory().available / 1024 / 1024)}
                if not self.registered:
                    body["resources"] = self.resources
                lost = dict(self.lost)
                if lost:
                    body["lost"] = list(lost.values())
                # what is being ended already: its orders again would answer every sync at once (a spin
                # for the KillWait or GraceTime); sent only when there is some, and not to a controller
                # older than these fields (it refused them: 422)
                if self.says_ending:
                    (ending, notified), steps_ending = self.launcher.ending_ids(), self.steps.ending_keys()
                    scripts_running = [f"{j}.{r}.{k}" for j, r, k in sorted(self.scripts_running)]
                    body.update({k: v for k, v in (("ending", ending), ("notified", notified),
                                                    ("steps_ending", steps_ending),
                                                    ("scripts_running", scripts_running)) if v})
                sync = asyncio.create_task(client.post(f"/api/v1/nodes/{quote(self.name, safe='')}/sync", body))
                # only a long-poll is given up for news (a short sync that keeps being dropped for the
                # next answer could starve the node's heartbeat)
                exited = asyncio.create_task(self.launcher.exited.wait() if body["wait"]
                                             else asyncio.sleep(LONG_POLL + 60))
                try:
                    done, _ = await asyncio.wait({sync, exited}, return_when=asyncio.FIRST_COMPLETED)
                except asyncio.CancelledError:  # the agent stops: no request left behind to fail unheard
                    for t in (sync, exited, *self.dropped):
                        t.cancel()
                    raise
                if sync not in done:
                    # a job ended while we waited for orders: report it now in a new sync, which ends
                    # this one's wait on the controller (it then answers no orders: api/nodes.py). This
                    # one is left to end so, not cancelled (its connection would be lost with it), and
                    # the new one takes another connection
                    self.dropped.add(sync)
                    sync.add_done_callback(self._dropped)
                    continue
                exited.cancel()
                try:
                    resp = sync.result()
                except syncclient.SyncError as e:
                    pause = jittered(backoff)
                    log.warning("controller unreachable (%s: %s); retrying in %.1fs", e.__class__.__name__,
                                str(e)[:120] or "-", pause)
                    await asyncio.sleep(pause)
                    backoff = min(backoff * 2, self.max_backoff)
                    continue
                if resp.status_code == 404:  # the controller forgot us (a new database): register again
                    self.registered = False
                    n = self.launcher.forget_finished()
                    if n:
                        log.warning("the controller does not know node %s (a new database?): registering again, "
                                    "forgetting %d ended jobs of the old one", self.name, n)
                    continue
                if resp.status_code == 422 and self.says_ending and \
                        any(k in body for k in ("ending", "notified", "steps_ending", "scripts_running")):
                    log.warning("the controller takes no ending/notified/steps_ending (an older version): "
                                "syncing without them")
                    self.says_ending = False
                    continue
                if resp.status_code >= 400:
                    log.error("sync refused: %s %s", resp.status_code, resp.text[:500])
                    self.delivered(answers)  # (whatever they hold, they must not keep the node from syncing)
                    await asyncio.sleep(jittered(backoff))
                    backoff = min(backoff * 2, self.max_backoff)
                    continue
                try:
                    doc = resp.json()
                    orders = list(doc["orders"])
                except (ValueError, KeyError, TypeError):  # (not the controller's answer: a proxy's page?)
                    log.error("sync answered %s with no orders: %s", resp.status_code, resp.text[:500])
                    await asyncio.sleep(jittered(backoff))
                    backoff = min(backoff * 2, self.max_backoff)
                    continue
                backoff = 0.1
                self.registered = True
                self.launcher.ack([f["job_id"] for f in finished])
                for name in lost:
                    self.lost.pop(name, None)
                    self.launcher.records.remove(name)
                self.steps.ack([f"{f['job_id']}.{f['step_id']}" for f in steps_done])
                for key in scripts_done:
                    self.scripts_done.pop(key, None)
                self.delivered(answers)
                for order in orders:
                    await self.apply(order)
                if doc.get("superseded") and not self.dropped:
                    # our poll was ended by another sync for this node that we did not send: a second
                    # agent runs under this name. Say so, and do not race it for the controller's time.
                    # (While a poll we gave up is still out, it may be the one: the controller can read
                    # a later sync of ours first, on another connection, and the older one then ends it.)
                    log.error("another agent syncs as node %s: give each agent its own --name", self.name)
                    await asyncio.sleep(jittered(self.max_backoff))
        finally:
            await client.aclose()

    def _dropped(self, task: asyncio.Task) -> None:
        """A long-poll given up for a newer sync, ended: its answer (no orders, or orders the newer one
        has again) or its failure is not needed."""
        self.dropped.discard(task)
        if not task.cancelled():
            task.exception()

    async def code_dir(self, order: dict) -> str:
        """An air run's code, unpacked once per run on this node (`CODE_SOURCE_PATH`), as the run's user:
        the archive can only make what they could (see unpack.py), and a bad one fails their job alone."""
        job_id, sha = order["job_id"], order["code"]
        run = os.path.join(self.spool, "runs", str(job_id))
        dest = os.path.join(run, "code")
        if not os.path.isdir(dest):
            try:
                data = await _fetch(f"{self.client.url if self.client else self.controller}/api/v1/code/{sha}")
                os.makedirs(run, exist_ok=True)
                identity.own(run, order)
                await asyncio.get_running_loop().run_in_executor(None, identity.run_as, order, unpack.extract, data,
                                                                 dest)
            except (httpx.HTTPError, OSError, RuntimeError) as e:
                log.warning("job %s: cannot get its code %s: %s", job_id, sha[:12], e)
                with contextlib.suppress(OSError):
                    os.makedirs(dest, exist_ok=True)
        return dest

    async def python_env(self, order: dict, code_dir: str | None) -> str:
        """An air run's environment.dependencies as a virtual environment on this node, built once per
        user and dependency set, by that user (pip and the packages' build scripts run with their rights,
        and `-r FILE` reads only what they may)."""
        root = os.path.join(self.spool, "envs", f"u{order.get('uid', os.getuid())}")
        try:
            os.makedirs(root, mode=0o700, exist_ok=True)
            identity.own(root, order)
            return await asyncio.get_running_loop().run_in_executor(None, identity.run_as, order, envs.ensure, root,
                                                                    order["py_deps"], code_dir)
        except (OSError, RuntimeError) as e:
            raise envs.EnvError(str(e)) from None

    async def apply(self, order: dict) -> None:
        op = order["op"]
        if op == "launch":
            try:  # a uid unknown here, or a group not the user's: the job fails, never runs as root
                identity.job_identity(order)
            except identity.IdentityError as e:
                log.warning("job %s: %s", order["job_id"], e)
                self.launcher.refuse(order, str(e))
                return
            env = batch_environment(order, node=self.name, cluster=self.cluster, controller_url=self.controller,
                                    bin_dir=self.bin_dir, node_addr=self.resources["addr"])
            if self.steps.conf_path:
                env["SLURM_CONF"] = self.steps.conf_path
            if order.get("code"):
                env["CODE_SOURCE_PATH"] = await self.code_dir(order)
            if order.get("home"):  # the cluster's home_directory_storage: HOME=<it>/<user>, made when missing
                with contextlib.suppress(OSError):
                    os.makedirs(order["home"], exist_ok=True)
                env["HOME"] = order["home"]
            if order.get("py_deps"):
                try:
                    envs.activate(env, await self.python_env(order, env.get("CODE_SOURCE_PATH")))
                except envs.EnvError as e:
                    self.launcher.refuse(order, str(e))
                    return
            await self.launcher.launch(order, env, script_environment(order, node=self.name, cluster=self.cluster,
                                                                      context="epilog_slurmd"))
        elif op in ("prolog", "epilog"):
            key = (order["job_id"], order["run"], op)
            if key not in self.scripts_seen:  # orders repeat until the report arrives: run each once
                self.scripts_seen[key] = time.time()
                self.scripts_running.add(key)
                if len(self.scripts_seen) > 10000:
                    for k in sorted(self.scripts_seen, key=self.scripts_seen.__getitem__)[:5000]:
                        del self.scripts_seen[k]
                task = asyncio.create_task(self._node_script(order))
                self.script_tasks.add(task)
                task.add_done_callback(self.script_tasks.discard)
        elif op == "kill":
            self.launcher.kill(order["job_id"], order.get("why", "cancel"), float(order.get("grace") or 0))
        elif op == "step":
            await self.steps.start(order)
        elif op == "kill_step":
            self.steps.kill(f"{order['job_id']}.{order['step_id']}", bool(order.get("now")), order.get("signal"))
        elif op == "suspend":
            self.launcher.suspend(order["job_id"])
        elif op == "resume":
            self.launcher.resume(order["job_id"])
        elif op == "signal":
            self.launcher.send_signal(order["job_id"], order["signal"])
        elif op == "attach":  # sattach: a step's output so far and to come, to one more address
            task = asyncio.create_task(self.steps.attach(f"{order['job_id']}.{order['step_id']}", order["io"]))
            self.script_tasks.add(task)
            task.add_done_callback(self.script_tasks.discard)
        elif op == "stat":  # sstat: the tasks of these steps here, sampled now, with the next sync
            for key in order["keys"]:
                jid, _, sid = key.partition(".")
                tasks = self.launcher.stat(int(jid)) if sid == "batch" else self.steps.stat(key)
                self.stats.append({"key": key, "node": self.name, "tasks": tasks or []})
            self.launcher.exited.set()
        elif op in ("usage", "tail") and not self._first_time(order):
            return
        elif op == "usage":  # the dashboard's plot: the job's samples here over time
            self.answer(order, series=self.launcher.book.series(int(order["job_id"])))
        elif op == "tail" and len(self.tailing) >= TAILS_AT_ONCE:
            self.answer(order, error=f"node {self.name} is busy reading other outputs; try again")
        elif op == "tail":  # the dashboard's view of a job's output, read with its user's rights
            task = asyncio.create_task(self._tail(order))
            self.tailing.add(task)
            task.add_done_callback(self.tailing.discard)
            self.script_tasks.add(task)
            task.add_done_callback(self.script_tasks.discard)

    def _first_time(self, order: dict) -> bool:
        key = str(order.get("key"))
        if key in self.asked:
            return False
        self.asked[key] = time.time()
        if len(self.asked) > 2000:  # (an answered question stops coming within a sync or two)
            for k in list(self.asked)[:1000]:
                del self.asked[k]
        return True

    def answer(self, order: dict, **what) -> None:  # noqa: ANN003
        self.answers.append((time.monotonic(), dict(what, key=order.get("key"))))
        self.launcher.exited.set()  # sync at once: someone waits

    def answers_to_send(self) -> list[dict]:
        """The answers for the next sync: those not yet delivered, the oldest first, at most
        common/wire.ANSWERS_BYTES of them (a page waits ASK_WAIT seconds for one: older ones are dropped)."""
        now = time.monotonic()
        self.answers = [(t, a) for t, a in self.answers if now - t < ANSWER_TTL]
        out: list[dict] = []
        size = 0
        for _, a in self.answers:
            n = len(a.get("data") or "") + 256
            if out and size + n > ANSWERS_BYTES:
                break
            out.append(a)
            size += n
        return out

    def delivered(self, sent: list[dict]) -> None:
        self.answers = [(t, a) for t, a in self.answers if not any(a is b for b in sent)]

    async def _tail(self, order: dict) -> None:
        if self.tail_pool is None:  # (its own threads: a read hung on a dead mount stalls no launch)
            from concurrent.futures import ThreadPoolExecutor
            self.tail_pool = ThreadPoolExecutor(TAILS_AT_ONCE, thread_name_prefix="tail")
        try:
            got = await asyncio.get_running_loop().run_in_executor(self.tail_pool, read_tail, order)
        except (OSError, identity.IdentityError) as e:
            got = {"error": f"{order.get('path')}: {e.strerror or e}"}
        except (KeyError, TypeError, ValueError) as e:
            got = {"error": f"a malformed question: {e}"}
        self.answer(order, **got)


    async def _node_script(self, order: dict) -> None:
        """Prolog (before the job's batch script starts anywhere) or Epilog (after its end) on this
        node, as root with a fixed environment (never the job's); the result goes back with the next sync."""
        op, jid = order["op"], order["job_id"]
        env = script_environment(order, node=self.name, cluster=self.cluster, context=f"{op}_slurmd")
        if op == "epilog":
            env.update(scripts.exit_code_env(int(order.get("exit_code") or 0), int(order.get("signal") or 0)))
            deadline = time.monotonic() + self.launcher.kill_wait + 5
            while any(k.split(".")[0] == str(jid) for k in self.steps.running_keys()) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)  # the job's tasks here are being killed: the epilog runs after them
        code, out = await scripts.run_scripts(order[op] or "", env)
        if code:
            log.warning("job %s: %s failed with exit code %s: %s", jid, op, code, out.strip()[-200:])
        self.scripts_done[(jid, order["run"], op)] = {"job_id": jid, "run": order["run"], "kind": op,
                                                      "exit_code": code}
        self.scripts_running.discard((jid, order["run"], op))
        self.launcher.exited.set()


#: the cluster key (--key-file): every request to the controller carries a credential signed with it
KEY: bytes | None = None


#: output reads at once (more questions are answered "busy")
TAILS_AT_ONCE = 4
#: seconds an answer is kept for sending (its asker has given up by then)
ANSWER_TTL = 30.0
#: file systems whose files are never read for a dashboard: their contents depend on who reads them
#: (the agent reads as root what the user opened) or are no output at all
SPECIAL_FS = frozenset({"proc", "sysfs", "debugfs", "tracefs", "securityfs", "configfs", "cgroup", "cgroup2",
                        "bpf", "efivarfs", "pstore", "fusectl", "devtmpfs", "devpts", "mqueue", "binfmt_misc"})


def _special_devices() -> set[int]:
    out = set()
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] in SPECIAL_FS:
                    with contextlib.suppress(OSError):
                        out.add(os.stat(parts[1].replace("\\040", " ")).st_dev)
    except OSError:
        pass
    return out


def read_tail(order: dict) -> dict:
    """`limit` bytes (PIECE at most) of the file at `path` from `offset` (-1: its last ones), opened as the
    job's user (what they could not read, nobody reads this way); base64, with the offset they start
    at and the file's size. Only a regular file: a FIFO or a device is never read."""
    import base64
    limit = max(0, min(int(order["limit"]), PIECE))  # (so that its answer fits in a sync: common/wire.py)
    offset = int(order["offset"])
    # (non-blocking: a FIFO opens at once, and is refused below)
    (f,), _ = identity.open_all_as(order, [(str(order["path"]), "rnb")], timeout=OPEN_TIMEOUT)
    if isinstance(f, OSError):
        raise f
    with f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if st.st_dev in _special_devices():
            raise OSError(errno.EINVAL, "not an output file (a kernel file system)")
        start = max(0, st.st_size - limit) if offset < 0 else min(offset, st.st_size)
        f.seek(start)
        data = f.read(limit)
    return {"offset": start, "size": max(st.st_size, start + len(data)), "data": base64.b64encode(data).decode()}


def _sign_headers(method: str, target: str, body: bytes) -> dict[str, str]:
    """Agents speak for the node as root, with the cluster key (munge's role), one credential per
    request (bound to its method, target and body): the header that carries it (none without a key)."""
    if KEY is None:
        return {}
    return {cred.HEADER: cred.sign(KEY, 0, "root", cred.bind(method, target, body))}


async def _sign(request: httpx.Request) -> None:
    """_sign_headers' credential on an httpx request (the agent's other requests: code archives)."""
    request.headers.update(_sign_headers(request.method, request.url.raw_path.decode("ascii"), request.content))


async def _fetch(url: str) -> bytes:
    async with httpx.AsyncClient(timeout=httpx.Timeout(120.0, connect=5.0), event_hooks={"request": [_sign]}) as client:
        resp = await client.get(url)
        resp.raise_for_status()
        return resp.content


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="slurmlet agent", description="Run a slurmlet node agent (slurmd).")
    ap.add_argument("--controller", default=os.environ.get("SLURMLET_CONTROLLER", f"http://127.0.0.1:{DEFAULT_PORT}"))
    ap.add_argument("--name", default=platform.node().split(".")[0])
    ap.add_argument("--cpus", type=int)
    ap.add_argument("--memory", type=int, help="MB")
    ap.add_argument("--gpus", type=int, help="fake GPU count when the machine has none")
    ap.add_argument("--gpu-type")
    ap.add_argument("--gpu-files", default=os.environ.get("SLURMLET_GPU_FILES") or None,
                    help="the GPUs' device files in index order, as gres.conf's File= (/dev/nvidia[0-7]); "
                         "default: the /dev/nvidiaN there are (ConstrainDevices denies a job the others)")
    ap.add_argument("--addr", help="address other nodes reach this node at (default 127.0.0.1)")
    ap.add_argument("--spool", help="directory for job scripts (default /tmp/slurmlet-agent-NAME)")
    ap.add_argument("--kill-wait", type=float, default=None, help="seconds between SIGTERM and SIGKILL")
    ap.add_argument("--pool", default=os.environ.get("SLURMLET_POOL") or None,
                    help="the node pool this node joins (default $SLURMLET_POOL): partitions are made of pools")
    ap.add_argument("--key-file", default=None,
                    help="the cluster key (default $SLURMLET_KEY_FILE, ~/.slurmlet/key or /etc/slurmlet/slurmlet.key)")
    ap.add_argument("--cred-socket", default=None,
                    help="also sign credentials for the node's users on this Unix socket, as `slurmlet credd` "
                         f"does (munged's role), e.g. {cred.DEFAULT_SOCKET}: jobs' srun and scontrol use it")
    ap.add_argument("--own-hostname", action="store_true",
                    help="run in a UTS namespace of its own whose host name is --name, so that the jobs here see "
                         "the node's name as their host's (several agents on one host; needs root). `slurmlet up` "
                         "gives it to each agent where it runs as root")
    ap.add_argument("--log-level", default="info")
    args = ap.parse_args(argv)
    global KEY
    key_file = args.key_file or cred.key_path()
    if key_file:
        KEY = cred.read_key(key_file)
        if KEY is None:
            ap.error(f"--key-file: cannot read {key_file}")
        os.environ["SLURMLET_KEY_FILE"] = os.path.abspath(key_file)  # what jobs started here sign with
    if args.cred_socket and KEY is None:
        ap.error("--cred-socket needs the cluster key (--key-file)")
    for opt in ("cpus", "memory", "gpus"):
        v = getattr(args, opt)
        if v is not None and v < (1 if opt != "gpus" else 0):
            ap.error(f"--{opt} must be {'positive' if opt != 'gpus' else 'zero or more'}, got {v}")
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if args.own_hostname and os.uname().nodename != args.name:  # (before any thread: see own_hostname)
        try:
            own_hostname(args.name)
        except (OSError, ValueError) as e:
            log.warning("--own-hostname: jobs here see the host's name %s, not %s: %s", os.uname().nodename,
                        args.name, e)
    urls = controller_urls(args.controller)
    try:
        if not urls:
            raise ValueError(f"not an http://HOST[:PORT] address: {args.controller!r}")
        for u in urls:
            syncclient.address(u)
    except ValueError as e:
        ap.error(f"--controller: {e}")
    controller = ",".join(urls)
    spool = args.spool or f"/tmp/slurmlet-agent-{args.name}"
    try:
        spool_lock = records_mod.lock_spool(spool)
    except (RuntimeError, OSError) as e:
        log.error("%s", e)
        return 1
    if args.cred_socket:
        from . import credd
        assert KEY is not None  # (--cred-socket without the key was refused above)
        try:
            credd.serve(args.cred_socket, KEY)
        except OSError as e:
            log.error("--cred-socket %s: %s", args.cred_socket, e.strerror or e)
            return 1
        os.environ["SLURMLET_CRED_SOCKET"] = os.path.abspath(args.cred_socket)  # passed on to jobs
    cfg = _fetch_config(controller)
    agent = Agent(controller=controller, name=args.name, cpus=args.cpus, memory=args.memory, gpus=args.gpus,
                  gpu_type=args.gpu_type, addr=args.addr, spool=spool,
                  kill_wait=args.kill_wait if args.kill_wait is not None else float(cfg.get("kill_wait", 30)),
                  cluster=cfg.get("cluster_name", "slurmlet"), pool=args.pool,
                  slurmd_timeout=cfg.get("slurmd_timeout"))
    agent.steps.conf_path = _keep_config_file(controller, spool)
    _setup_cgroups(agent, cfg, spool, args.gpu_files)
    agent.spool_lock = spool_lock  # held (flock) as long as this agent runs: a second one on the spool waits
    # the fence kills this agent's jobs if it dies and no agent takes over before SlurmdTimeout runs out
    # (it watches this process through a pidfd: a pipe's end of file proved unreliable, its write end
    # was seen closed within 0.1 s of the agent's start while the agent ran on)
    fence = subprocess.Popen([sys.executable, "-m", "slurmlet.nodeagent.fence", "--spool", spool, "--after",
                              str(fence_after(cfg.get("slurmd_timeout"), agent.launcher.kill_wait)),
                              "--kill-wait", str(agent.launcher.kill_wait), "--agent", str(os.getpid()),
                              *(["--cgroups", json.dumps({"kind": h.kind, "base": h.base})]
                                if (h := agent.launcher.cgroups) else [])],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True, cwd="/")
    try:
        asyncio.run(agent.run())
    except KeyboardInterrupt:
        pass
    fence.terminate()  # a clean exit: the jobs were stopped, the fence has nothing to do
    fence.wait()
    return 0


def _setup_cgroups(agent: Agent, cfg: dict, spool: str, gpu_spec: str | None = None) -> None:
    """Jobs in cgroups unless slurm.conf's ProctrackType says otherwise (22.05's default is
    proctrack/cgroup); cgroup.conf's constraints from the controller. SLURMLET_CGROUP=v1|v2|none
    chooses the layout (tests run both on one machine)."""
    from ..common.cgroupconf import Policy
    from .cgroup import Hierarchy
    raw = {k.lower(): v for k, v in (cfg.get("raw") or {}).items()}
    proctrack = raw.get("proctracktype", "proctrack/cgroup").strip().lower()
    prefer = os.environ.get("SLURMLET_CGROUP") or (None if proctrack == "proctrack/cgroup" else "none")
    h = Hierarchy.detect(agent.name, spool, prefer if prefer in ("v1", "v2", "none") else None)
    policy = Policy.from_conf(cfg.get("cgroup") or {})
    if policy.ram and h is None:
        log.warning("cgroup.conf: ConstrainRAMSpace=yes, but this node has no cgroups: --mem is not enforced")
    agent.launcher.cgroups = agent.steps.cgroups = h
    agent.launcher.policy = agent.steps.policy = policy
    if policy.devices:
        from .cgroup import gpu_files
        agent.launcher.gpu_files = agent.steps.gpu_files = gpu_files(gpu_spec)
        if h is None:
            log.warning("cgroup.conf: ConstrainDevices=yes, but this node has no cgroups: jobs may open every "
                        "GPU's device file")
    affinity = "task/affinity" in raw.get("taskplugin", "").lower()  # srun --cpu-bind binds step tasks
    agent.steps.affinity = affinity
    if policy.cores or affinity:  # the CPUs a job gets here: a cpuset where the node has one, else affinity
        from .cgroup import CpuMap, usable_cpus
        agent.launcher.cpumap = agent.steps.cpumap = CpuMap(usable_cpus())


def _keep_config_file(controller: str, spool: str) -> str | None:
    """The controller's slurm.conf, copied to `spool`/conf/slurm.conf for the jobs' SLURM_CONF (a
    configless slurmd keeps one the same way); None when it cannot be had or written."""
    path = os.path.join(spool, "conf", "slurm.conf")
    try:
        r = _get_active(controller, "/api/v1/config/file", 10)
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(r.text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except (httpx.HTTPError, OSError) as e:
        log.warning("no copy of the cluster's slurm.conf for jobs' SLURM_CONF: %s", e)
        return None
    return path


def _get_active(controller: str, path: str, timeout: float) -> httpx.Response:
    """GET `path` from the active one of the controllers (the first that answers it)."""
    err: httpx.HTTPError | None = None
    for url in controller_urls(controller):
        try:
            r = httpx.get(f"{url}{path}", timeout=timeout)
            r.raise_for_status()
            return r
        except httpx.HTTPError as e:
            err = e
    assert err is not None
    raise err


def _fetch_config(controller: str) -> dict:
    """The cluster's KillWait and name; waits for a controller to come up and be active."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return _get_active(controller, "/api/v1/config", 5).json()
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
