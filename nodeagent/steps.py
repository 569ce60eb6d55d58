"""Step tasks on one node: start this node's ranks of an srun step, stream their output to srun,
report their exit codes, kill them when the step or its job goes away.

The I/O protocol with srun is plain TCP: for each task and stream the agent opens a connection
to srun's address, sends one JSON header line (`{"rank": 3, "stream": "out"}`) and then the
stream's bytes until it ends; a last connection per task carries `{"rank": 3, "stream": "exit",
"code": 0, "signal": 0, "node": "node2"}`. Under `srun --pty` task 0's one connection is
`{"rank": 0, "stream": "pty"}`, both ways (see ptyrelay.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..common import streamhead
from ..common.cgroupconf import Policy
from ..common.grammar import compress_counts
from ..common.scripts import session_pids, signal_session
from . import identity, ptyrelay
from .cgroup import GATE, CpuMap, Group, Hierarchy, job_groups, oom_line, others
from .envs import EnvError, activate
from .records import TOKEN, Records, new_token, proc_entry
from .usage import Book, watch

if TYPE_CHECKING:
    from ..common.cpubind import Bind

log = logging.getLogger("slurmlet.agent")


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


@dataclass
class StepRun:
    key: str
    procs: dict[int, asyncio.subprocess.Process] = field(default_factory=dict)  #: rank -> process
    results: dict[int, list[int]] = field(default_factory=dict)  #: rank -> [exit code, signal]
    killing: bool = False
    cgroup: Group | None = None  #: the step's cgroup here (None: its tasks are tracked by session)
    cpus: list[int] | None = None  #: the CPUs its tasks here are bound to (ConstrainCores)
    usage: dict = field(default_factory=dict)  #: rank -> nodeagent.usage.Usage of each task here
    usage_done: asyncio.Event = field(default_factory=asyncio.Event)
    entries: list = field(default_factory=list)  #: the tasks as records name them (pid, pgid, create time)
    #: sattach: each task stream's output so far (the last OUTPUT_KEPT bytes), what of it has ended,
    #: and the attached clients (address -> (rank, stream) -> a connection to it)
    output: dict = field(default_factory=dict)
    ended: set = field(default_factory=set)
    attached: dict = field(default_factory=dict)
    words: bool = False  #: its srun reads stream headers as words (common/streamhead.py)
    pumps: dict = field(default_factory=dict)  #: rank -> the tasks relaying its streams to srun
    feeds: list = field(default_factory=list)  #: the tasks relaying srun's stdin to its tasks (--input)
    told: set = field(default_factory=set)  #: the ranks whose exit srun has been sent already
    io: str | None = None  #: its srun's address for the tasks' streams
    ranks: list = field(default_factory=list)  #: its tasks here


#: how much of each task stream a step keeps for a later sattach (replayed first, as slurmstepd does)
OUTPUT_KEPT = 256 << 10


def task_environment(order: dict, rank: int, local_id: int, node_addr: str) -> dict[str, str]:
    """srun's environment with what slurmstepd sets per node and per task."""
    req = order["request"]
    env = dict(req.get("environment") or {})
    node = order["node"]
    tpn = order["tasks_per_node"]
    step = str(order["step_id"])
    node_gpus = order.get("gpu_ids") or []
    gpus = node_gpus
    per_task = req.get("gpus_per_task")
    if per_task and gpus:  # --gpus-per-task: each task its own slice of the node's GPUs
        gpus = gpus[local_id * per_task:(local_id + 1) * per_task]
    env.update({
        "SLURMD_NODENAME": node, "HOSTNAME": node, "SLURM_TOPOLOGY_ADDR": node,
        "SLURM_CPUS_ON_NODE": str(order.get("cpus") or 1), "SLURM_NODEID": str(order["node_index"]),
        "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(local_id),
        "SLURM_GTIDS": ",".join(str(r) for r in order["ranks"]),
        "SLURM_STEP_ID": step, "SLURM_STEPID": step, "SLURM_STEP_NODELIST": order["nodelist"],
        "SLURM_STEP_NUM_NODES": str(len(tpn)), "SLURM_STEP_NUM_TASKS": str(sum(tpn)),
        "SLURM_STEP_TASKS_PER_NODE": compress_counts(tpn), "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
        # srun overwrites the job-wide counts with the step's, as Slurm's srun does
        "SLURM_NNODES": str(len(tpn)), "SLURM_NTASKS": str(sum(tpn)), "SLURM_NPROCS": str(sum(tpn)),
        "SLURM_TASKS_PER_NODE": compress_counts(tpn),
        "SLURMLET_NODE_ADDR": node_addr,
        # the rendezvous of torchrun and the AI Runtime, over the step's nodes
        "MASTER_ADDR": order.get("master_addr") or node_addr, "NUM_NODES": str(len(tpn)),
        "NODE_RANK": str(order["node_index"]),
        "LOCAL_WORLD_SIZE": str(len(order.get("gpu_ids") or []) or len(order["ranks"])),
    })
    job = order.get("job")
    if job:  # the job's, whatever the srun's environment said (srun --jobid from another job or none)
        jid = str(order["job_id"])
        env.update({"SLURM_JOB_ID": jid, "SLURM_JOBID": jid, "SLURM_JOB_NAME": str(req.get("name") or job["name"]),
                    "SLURM_JOB_PARTITION": str(job["partition"]), "SLURM_JOB_ACCOUNT": str(job["account"]),
                    "SLURM_JOB_QOS": str(job["qos"]), "SLURM_JOB_NODELIST": str(order.get("job_nodes") or ""),
                    "SLURM_JOB_NUM_NODES": str(len(job["cpus"]) or 1),
                    "SLURM_JOB_CPUS_PER_NODE": compress_counts(job["cpus"] or [1]),
                    "SLURM_JOB_UID": str(order.get("uid", 0)), "SLURM_JOB_GID": str(order.get("gid", 0))})
        if job.get("user"):
            env["SLURM_JOB_USER"] = str(job["user"])
        if "SLURM_HET_SIZE" in env:  # a heterogeneous job's step: its job is the components it runs in
            env["SLURM_NODELIST"] = env["SLURM_JOB_NODELIST"]
        elif not job.get("srun_step"):  # (a heterogeneous job's come from its batch environment)
            env["SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0"] = env["SLURM_JOB_CPUS_PER_NODE"]
        if not job.get("srun_step"):  # set in an allocation of sbatch's or salloc's, not in an srun's own
            # srun's -m, else cyclic when there are no more tasks than nodes, block otherwise (22.05's)
            env["SLURM_DISTRIBUTION"] = env.get("SLURM_DISTRIBUTION") or ("cyclic" if sum(tpn) <= len(tpn) else "block")
    if req.get("cpus_per_task"):  # the step's -c, whatever its job's (the srun's environment) said
        env["SLURM_CPUS_PER_TASK"] = str(req["cpus_per_task"])
    if order.get("master_port"):
        env["MASTER_PORT"] = str(order["master_port"])
    io = req.get("io")
    if io:
        host, _, port = io.rpartition(":")
        env.update({"SLURM_SRUN_COMM_HOST": host, "SLURM_SRUN_COMM_PORT": port, "SLURM_LAUNCH_NODE_IPADDR": host,
                    "SLURM_STEP_LAUNCHER_PORT": port})
    for k in ("CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK",
              "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE", "SLURM_JOB_GPUS"):
        env.pop(k, None)
    if gpus:
        ids = ",".join(str(g) for g in gpus)
        env.update({"CUDA_VISIBLE_DEVICES": ids, "GPU_DEVICE_ORDINAL": ids, "ROCR_VISIBLE_DEVICES": ids,
                    "ZE_AFFINITY_MASK": ids, "SLURM_STEP_GPUS": ids,
                    # the node's share of the job, as on the batch node
                    "SLURM_JOB_GPUS": ",".join(str(g) for g in node_gpus), "SLURM_GPUS_ON_NODE": str(len(node_gpus))})
    return env


class StepRunner:
    def __init__(self, node: str, node_addr: str, kill_wait: float, wake: asyncio.Event, code_dir=None,  # noqa: ANN001
                 python_env=None, *, records: Records):  # noqa: ANN001
        self.node = node
        #: each step's tasks here, on disk until the controller has their end (see nodeagent/records.py)
        self.records = records
        self.python_env = python_env  #: async (order, code dir) -> a virtual environment here
        self.code_dir = code_dir  #: async (order) -> where the run's code is unpacked here
        self.node_addr = node_addr
        self.conf_path: str | None = None  #: the agent's copy of slurm.conf (SLURM_CONF in tasks)
        self.cgroups: Hierarchy | None = None  #: set by the agent, as the launcher's
        self.policy = Policy()
        self.cpumap: CpuMap | None = None  #: the launcher's (one per node)
        self.gpu_files: list[str] = []  #: the launcher's
        self.affinity = False  #: TaskPlugin=task/affinity: tasks bound as --cpu-bind says (cpumap is set)
        self.kill_wait = kill_wait
        self.wake = wake  #: set when a step's tasks here ended: the agent reports at once
        self.book = Book()  #: every task's usage samples (the agent shares the launcher's)
        self.running: dict[str, StepRun] = {}
        self.finished: dict[str, dict] = {}  #: reports not yet acknowledged by the controller
        self.done: dict[str, float] = {}  #: ended recently: a repeated order must not run them again

    def running_keys(self) -> list[str]:
        return sorted(self.running)

    def ending_keys(self) -> list[str]:
        """The running steps whose kill sequence has begun."""
        return sorted(k for k, run in self.running.items() if run.killing)

    def unacked(self) -> list[dict]:
        return list(self.finished.values())

    def ack(self, keys: list[str]) -> None:
        for k in keys:
            self.finished.pop(k, None)
            self.records.remove(f"step{k}")

    async def start(self, order: dict) -> None:
        key = f"{order['job_id']}.{order['step_id']}"
        if key in self.running or key in self.done:
            return
        run = self.running[key] = StepRun(key)
        req = order["request"]
        run.words = req.get("io_header") == streamhead.WORDS
        run.io, run.ranks = req.get("io"), list(order["ranks"])
        job_cpus = self.cpumap.take(order["job_id"], order.get("job_cpus") or order.get("cpus") or 1) \
            if self.cpumap else None
        step_mb = req.get("mem_per_node") or ((req.get("mem_per_cpu") or 0) * (order.get("cpus") or 1)) or None
        groups = job_groups(self.cgroups, self.policy, order["job_id"], str(order["step_id"]), order.get("job_memory"),
                            job_cpus, others(self.gpu_files, order.get("gpu_ids")) if self.policy.devices else None,
                            step_mb, order.get("job_cpus") or order.get("cpus") or 1)
        run.cpus = self._step_cpus(order, job_cpus) if job_cpus else None
        binds: Sequence[list[int] | None] = []
        bind_env: dict[str, str] = {}
        bind: Bind | None = None
        if self.affinity and run.cpus:
            from slurmlet.common import cpubind
            try:
                bind = cpubind.parse(req.get("cpu_bind"))
            except cpubind.CpuBindError:  # (srun refused it already: not from srun)
                bind = cpubind.Bind()
            binds, bind_env = cpubind.plan(bind, run.cpus, len(order["ranks"]), req.get("cpus_per_task") or 1)
        if groups:
            run.cgroup = groups[1]
        code = await self.code_dir(order) if order.get("code") and self.code_dir else None
        venv, env_error = None, None
        if order.get("py_deps") and self.python_env:
            try:
                venv = await self.python_env(order, code)
            except EnvError as e:
                env_error = str(e)
        io = req.get("io")
        pumps = []
        rec = {"kind": "step", "job_id": order["job_id"], "step_id": order["step_id"], "token": new_token(),
               "procs": run.entries}
        self.records.save(f"step{key}", rec)  # on disk before a task can run (see nodeagent/records.py)
        # the task's shell changes into it as the job's user, or into /tmp where they cannot (LAUNCH)
        cwd = req.get("cwd") if (req.get("cwd") or "").startswith("/") else "/tmp"
        try:
            identity.job_identity(order)
        except identity.IdentityError as e:
            env_error = str(e)
        for local_id, rank in enumerate(order["ranks"]):
            env = task_environment(order, rank, local_id, self.node_addr)
            env.update(bind_env)
            task_cpus = binds[local_id] if binds else run.cpus
            if self.conf_path:
                env["SLURM_CONF"] = self.conf_path
            env[TOKEN] = rec["token"]
            if code:
                env["CODE_SOURCE_PATH"] = code
            if venv:
                activate(env, venv)
            if env_error:
                pumps.append(self._task_failed(run, io, rank, 1, env_error))
                continue
            terminal = None  # srun --pty: task 0 on a pseudo-terminal, the others' output discarded
            try:
                if req.get("pty") and rank == 0:
                    rows, cols = req.get("winsize") or (24, 80)
                    terminal = ptyrelay.open_pty(identity.job_identity(order), rows, cols)
                    files = (terminal[1], terminal[1])
                elif req.get("pty"):
                    files = (asyncio.subprocess.DEVNULL, asyncio.subprocess.DEVNULL)
                else:
                    files = self._files(order, rank, env)
            except OSError as e:
                pumps.append(self._task_failed(run, io, rank, 1, f"Could not open output file: {e}"))
                continue
            # srun --input: all (the default), one task's rank, or none; a task without it reads /dev/null
            fed = not terminal and bool(io) and req.get("input") in ("all", str(rank))
            launch, args = identity.LAUNCH, [req["argv"][0], cwd, *req["argv"][1:]]
            if bind is not None and bind.verbose:  # slurmstepd's line on the task's stderr, with its pid
                from slurmlet.common.cpubind import verbose_line
                line = verbose_line(bind, self.node.replace("%", "%%"), rank, local_id, binds[local_id])
                launch = f'printf {shlex.quote(line + chr(92) + "n")} "$$" >&2; ' + launch
            if terminal:
                launch, args = ptyrelay.PTY_PREFIX + launch, [req["argv"][0], terminal[2], cwd, *req["argv"][1:]]
            if run.cgroup:
                launch = GATE + launch
            try:
                proc = await asyncio.create_subprocess_exec(
                    "/bin/sh", "-c", launch, *args, cwd="/", env=env,
                    stdin=terminal[1] if terminal else asyncio.subprocess.PIPE if fed else asyncio.subprocess.DEVNULL,
                    stdout=files[0] if files else asyncio.subprocess.PIPE,
                    stderr=files[1] if files else asyncio.subprocess.PIPE, start_new_session=True,
                    **identity.spawn_kwargs(order))
            except (OSError, ValueError) as e:  # ValueError: what exec cannot take (a NUL in an argument)
                if terminal:
                    os.close(terminal[0])
                pumps.append(self._task_failed(run, io, rank, 2,
                                               f"execve(): {req['argv'][0]}: {getattr(e, 'strerror', None) or e}"))
                continue
            finally:
                if terminal:
                    os.close(terminal[1])
                else:
                    for f in set(files):
                        if not isinstance(f, int):
                            f.close()
            if run.cgroup:
                try:
                    await run.cgroup.adopt(proc.pid, task_cpus)
                except BaseException:  # the agent stops meanwhile: the task, stopped at its gate, must
                    with contextlib.suppress(OSError):  # not outlive it (it would wait for ever)
                        os.kill(proc.pid, signal.SIGKILL)
                    raise
            elif task_cpus:  # no cgroup to hold it until then: bound as soon as it runs
                with contextlib.suppress(OSError, ValueError, OverflowError):
                    os.sched_setaffinity(proc.pid, task_cpus)
            run.procs[rank] = proc
            run.entries.append(proc_entry(proc.pid))
            self.records.save(f"step{key}", rec)
            run.usage[rank] = self.book.new(order["job_id"], f"{order['step_id']}.{rank}")
            asyncio.create_task(watch(proc.pid, run.usage[rank], run.usage_done))  # its session: per task
            if fed:
                run.feeds.append(asyncio.create_task(self._feed(io, rank, proc, run)))
            if terminal:
                head = {"rank": rank, "stream": "pty"}
                run.pumps[rank] = [asyncio.create_task(ptyrelay.relay(io, head, terminal[0]))]
            elif not files:
                run.pumps[rank] = [asyncio.create_task(self._pump(io, rank, "out", proc.stdout, run)),
                                   asyncio.create_task(self._pump(io, rank, "err", proc.stderr, run))]
            pumps += run.pumps.get(rank, [])
        asyncio.create_task(self._watch(order, run, pumps))

    def _task_failed(self, run: StepRun, io: str | None, rank: int, code: int, message: str) -> asyncio.Task:
        """A task that could not start: its exit code, and slurmstepd's error line on its stderr."""
        run.results[rank] = [code, 0]
        return asyncio.create_task(self._send(io, rank, "err", f"slurmstepd-{self.node}: error: {message}\n".encode(),
                                              words=run.words))

    def _files(self, order: dict, rank: int, env: dict[str, str]) -> tuple:
        """srun -o/-e: the task writes to its pattern's file (per task with %t: truncated; shared
        by several tasks: appended to) instead of streaming to srun. In a heterogeneous job's
        component N, %j is the component's own job id, %t the rank plus N and %n the node's index among
        the component's, as 22.05 numbers them."""
        req = order["request"]
        if not req.get("stdout"):
            return ()
        from slurmlet.common.patterns import expand_pattern
        het = order.get("het_group") or 0

        def path(pattern: str) -> str:
            aj, at = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
            return expand_pattern(pattern, job_id=order["job_id"] + het, step_id=order["step_id"], task_id=rank + het,
                                  node_index=order.get("het_node_index", order["node_index"]), node=order["node"],
                                  user=env.get("SLURM_JOB_USER", ""), name=env.get("SLURM_JOB_NAME", ""),
                                  array_job_id=int(aj) if aj else None, array_task_id=int(at) if at else None,
                                  workdir=req.get("cwd") or "/")
        out_pat = req["stdout"]
        err_pat = req.get("stderr") or out_pat
        # with the user's rights, not the agent's (see identity.open_as)
        out = identity.open_as(path(out_pat), "wb" if "%t" in out_pat else "ab", order)
        err = out if err_pat == out_pat else identity.open_as(path(err_pat), "wb" if "%t" in err_pat else "ab", order)
        return out, err

    async def _connect(self, io: str | None, header: dict,  # noqa: ANN202 - a StreamWriter or None
                       words: bool = False):
        got = await self._open(io, header, words)
        return got and got[1]

    @staticmethod
    async def _open(io: str | None, header: dict, words: bool = False):  # noqa: ANN205 - (reader, writer) or None
        """A stream to srun, its header sent."""
        if not io:
            return None
        host, _, port = io.rpartition(":")
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 10)
        except (TimeoutError, OSError, ValueError) as e:
            log.warning("step stream %s of rank %s: cannot reach srun at %s (%r): dropped", header.get("stream"),
                        header.get("rank"), io, e)
            return None  # srun is gone: the output is dropped, the task still runs
        w.write(streamhead.write(header, words))
        return r, w

    async def _feed(self, io: str | None, rank: int, proc: asyncio.subprocess.Process, run: StepRun) -> None:
        """srun's stdin to a task's: what srun sends on the task's `in` stream, until it ends (the task's
        stdin then ends too) or the task does (cancelled by _watch)."""
        stdin = proc.stdin
        assert stdin is not None
        got = await self._open(io, {"rank": rank, "stream": "in"}, run.words)
        try:
            while got is not None:
                chunk = await got[0].read(65536)
                if not chunk:
                    break
                stdin.write(chunk)
                await stdin.drain()
        except (OSError, ConnectionError):
            pass  # the task closed its stdin, or srun is gone
        finally:
            stdin.close()
            if got is not None:
                got[1].close()

    async def _pump(self, io: str | None, rank: int, stream: str, reader: asyncio.StreamReader,
                    run: StepRun) -> None:
        w = await self._connect(io, {"rank": rank, "stream": stream}, run.words)
        kept = run.output[(rank, stream)] = bytearray()
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            kept += chunk
            if len(kept) > OUTPUT_KEPT:
                del kept[:len(kept) - OUTPUT_KEPT]
            if w is not None:
                w.write(chunk)
                with contextlib.suppress(OSError, ConnectionError):
                    await w.drain()
            for writers in list(run.attached.values()):
                aw = writers.get((rank, stream))
                if aw is not None and not aw.is_closing():
                    aw.write(chunk)
        run.ended.add((rank, stream))
        for writers in list(run.attached.values()):
            await self._close(writers.pop((rank, stream), None))
        await self._close(w)

    async def attach(self, key: str, io: str) -> None:
        """sattach: `io` gets each task's output so far, then what follows, then the tasks' exits."""
        run = self.running.get(key)
        if run is None or io in run.attached:
            return
        writers: dict = {}
        run.attached[io] = writers
        for (rank, stream), kept in list(run.output.items()):
            w = await self._connect(io, {"rank": rank, "stream": stream})
            if w is None:
                continue
            w.write(bytes(kept))  # (no await between this copy and joining: nothing lost, nothing twice)
            if (rank, stream) in run.ended:
                await self._close(w)
            else:
                writers[(rank, stream)] = w
        for rank, (code, sig) in list(run.results.items()):  # tasks already over
            await self._send(io, rank, "exit", b"", code=code, signal=sig, node=self.node)

    async def _send(self, io: str | None, rank: int, stream: str, data: bytes, *, words: bool = False,
                    **extra) -> None:  # noqa: ANN003
        w = await self._connect(io, {"rank": rank, "stream": stream, **extra}, words)
        if w is not None:
            w.write(data)
        await self._close(w)

    @staticmethod
    async def _close(w) -> None:  # noqa: ANN001
        if w is None:
            return
        with contextlib.suppress(OSError, ConnectionError):
            await w.drain()
            w.close()
            await w.wait_closed()

    async def _watch(self, order: dict, run: StepRun, pumps: list[asyncio.Task]) -> None:
        await asyncio.gather(*(self._task_end(order, run, rank, proc) for rank, proc in run.procs.items()))
        run.usage_done.set()
        for feed in run.feeds:  # (srun's stdin may never end: a terminal)
            feed.cancel()
        for proc in run.procs.values():
            signal_session(proc.pid, signal.SIGKILL)  # whatever the task left behind in its session
        times, oom, peak = None, 0, None
        if run.cgroup is not None:  # and in its cgroup; the kernel's CPU count of all of it
            times = run.cgroup.cpu_times()
            if len(order["ranks"]) == 1:  # its one task's peak (MaxRSS is a task's, not a node's sum)
                peak = run.cgroup.memory_peak_kb()
            job = self.cgroups.group(order["job_id"]) if self.cgroups else None
            oom = run.cgroup.oom_kills()
            await run.cgroup.remove(self.kill_wait)
            if self.cpumap and job is not None and not job.exists():  # its job's last step here
                self.cpumap.release(order["job_id"])
        await asyncio.gather(*pumps, return_exceptions=True)
        self.running.pop(run.key, None)
        self.done[run.key] = time.time()
        if len(self.done) > 10000:
            for k in sorted(self.done, key=self.done.__getitem__)[:5000]:
                del self.done[k]
        reports = {rank: u.report() for rank, u in run.usage.items()}
        if peak:  # the kernel's peak of a lone task (see above): exact, between two samples too
            for rep in reports.values():
                rep["max_rss"] = max(peak, rep["max_rss"])
        usage = {"max_rss": max((u["max_rss"] for u in reports.values()), default=0),
                 "max_vms": max((u["max_vms"] for u in reports.values()), default=0),
                 "user_cpu": sum(u["user_cpu"] for u in reports.values()),
                 "system_cpu": sum(u["system_cpu"] for u in reports.values()),
                 "tasks": {str(rank): [u["max_rss"], u["max_vms"]] for rank, u in reports.items()}}
        if times is not None:
            usage.update(user_cpu=round(times[0], 3), system_cpu=round(times[1], 3))
        if oom:
            usage["oom"] = True
        self.finished[run.key] = {"job_id": order["job_id"], "step_id": order["step_id"], "usage": usage,
                                  "results": {str(k): v for k, v in run.results.items()}, "end_time": time.time()}
        # kept until acknowledged: an agent started after a crash sends it again
        self.records.save(f"step{run.key}", {"kind": "step", "job_id": order["job_id"], "step_id": order["step_id"],
                                             "procs": [], "finished": self.finished[run.key]})
        # the report is on its way (the sync wakes) before srun hears the exits; srun then waits until
        # the controller has every node's report (cli/srun.py), so the batch script's end, which
        # cancels steps still running, cannot overtake it
        self.wake.set()
        io = order["request"].get("io")
        if oom > 0:  # slurmstepd's line on the step's error output; srun says which tasks it killed
            await self._send(io, order["ranks"][0], "err", oom_line(self.node, run.key, oom).encode(), words=run.words)
        for rank in order["ranks"]:
            if rank not in run.told:
                await self._tell_exit(io, run, rank, oom > 0)

    async def _task_end(self, order: dict, run: StepRun, rank: int, proc: asyncio.subprocess.Process) -> None:
        """Wait for a task's end. While the step's other tasks here still run, its exit goes to srun as
        soon as its output has (as slurmstepd sends each task's exit: srun -K stops the step on it);
        the last ones go with the step's end (`_watch`)."""
        rc = await proc.wait()
        run.results[rank] = [rc, 0] if rc >= 0 else [0, -rc]
        if not all(r in run.results for r in run.procs):
            asyncio.create_task(self._early_exit(run, rank, rc))

    async def _early_exit(self, run: StepRun, rank: int, rc: int) -> None:
        # (apart from _watch: what the task left behind may hold its output open until the step's end)
        await asyncio.gather(*run.pumps.get(rank, []), return_exceptions=True)
        if rank in run.told or all(r in run.results for r in run.procs):
            return  # (the step's end tells it, after the node's report is on its way)
        oom = run.cgroup is not None and rc == -signal.SIGKILL and run.cgroup.oom_kills() > 0
        await self._tell_exit(run.io, run, rank, oom)

    async def _tell_exit(self, io: str | None, run: StepRun, rank: int, oom: bool) -> None:
        """A task's exit to its srun and to the sattach clients attached."""
        run.told.add(rank)
        code, sig = run.results.get(rank, [0, 0])
        extra = {"oom": True} if oom and sig == signal.SIGKILL else {}
        await self._send(io, rank, "exit", b"", code=code, signal=sig, node=self.node, words=run.words, **extra)
        for other in list(run.attached):  # sattach's
            await self._send(other, rank, "exit", b"", code=code, signal=sig, node=self.node, **extra)

    def stat(self, key: str) -> list[dict] | None:
        """sstat: each task here of a running step, sampled now (None: no such step here)."""
        run = self.running.get(key)
        if run is None:
            return None
        return [dict(run.usage[rank].live(proc.pid, self._task_pids(run, proc.pid)), rank=rank, local_id=local_id)
                for local_id, (rank, proc) in enumerate(sorted(run.procs.items()))
                if rank in run.usage and proc.returncode is None]

    def _step_cpus(self, order: dict, job_cpus: list[int]) -> list[int]:
        """The step's CPUs out of its job's here: as many as it has, the least used by the job's
        other steps running here (steps side by side, as a workflow engine starts them, each get
        their own while there are enough)."""
        n = max(1, order.get("cpus") or 1)
        if n >= len(job_cpus):
            return list(job_cpus)
        prefix = f"{order['job_id']}."
        use = {c: 0 for c in job_cpus}
        for key, other in self.running.items():
            if key.startswith(prefix) and other.cpus:
                for c in other.cpus:
                    if c in use:
                        use[c] += 1
        return sorted(sorted(job_cpus, key=lambda c: (use[c], c))[:n])

    @staticmethod
    def _task_pids(run: StepRun, sid: int):  # noqa: ANN205 - () -> list[int]
        """A task's processes: its session's; with a cgroup, those that left every task's session
        count as the first task's (the kernel does not say which task they came from)."""
        def pids() -> list[int]:
            got = set(session_pids(sid))
            if run.cgroup is not None and run.procs and sid == min(p.pid for p in run.procs.values()):
                sessions = {p.pid for p in run.procs.values()}
                got |= {p for p in run.cgroup.pids() if _sid(p) not in sessions}
            return sorted(got)
        return pids

    @staticmethod
    def _signal(run: StepRun, sig: int) -> None:
        for proc in run.procs.values():
            signal_session(proc.pid, sig)
        if run.cgroup is not None:
            run.cgroup.signal(sig)

    async def _aborted(self, run: StepRun, line: bytes, first: int | None = None) -> None:
        """The lines first (srun has them before the tasks' exits), then signal `first`, then SIGKILL."""
        async def both() -> None:
            await self._send(run.io, run.ranks[0], "err", line, words=run.words)
            await self._send(run.io, run.ranks[0], "aborted", b"", words=run.words, wait=int(self.kill_wait) + 2)
        try:  # (at most 2 s: an unreachable srun must not keep the tasks alive)
            if run.ranks and run.io:
                await asyncio.wait_for(both(), 2)
        except TimeoutError:
            pass
        finally:
            if first:  # (a task that keeps the default action ends of it: the first fatal signal counts)
                self._signal(run, first)
            self._kill_all(run)

    def _kill_all(self, run: StepRun) -> None:
        self._signal(run, signal.SIGKILL)
        if run.cgroup is not None:
            run.cgroup.kill()

    def kill(self, key: str, now: bool = False, first: int | None = None) -> None:
        """SIGTERM every task of the step here (and whatever is in its cgroup), SIGKILL after KillWait;
        `now` (scancel JOB.STEP, srun forcing its step's end): SIGKILL at once, after signal `first`
        (srun's Ctrl-C), and slurmstepd's lines to srun: the step's CANCELLED line on its error stream,
        then that it was aborted (srun says so)."""
        run = self.running.get(key)
        if run is None or (run.killing and not now):
            return
        if now:
            from .launcher import slurm_time
            when = slurm_time(time.time())
            line = f"slurmstepd-{self.node}: error: *** STEP {key} ON {self.node} CANCELLED AT {when} ***\n"
            run.killing = True
            asyncio.create_task(self._aborted(run, line.encode(), int(first) if first else None))
            return
        run.killing = True
        self._signal(run, signal.SIGCONT)
        self._signal(run, signal.SIGTERM)
        asyncio.get_running_loop().call_later(self.kill_wait, self._kill_all, run)

    async def shutdown(self, grace: float = 1.0) -> None:
        runs = list(self.running.values())
        for run in runs:
            self._signal(run, signal.SIGTERM)
        deadline = time.monotonic() + grace
        def alive() -> bool:
            return any(session_pids(p.pid) for r in runs for p in r.procs.values()) or \
                any(r.cgroup is not None and r.cgroup.pids() for r in runs)
        while runs and time.monotonic() < deadline and alive():
            await asyncio.sleep(0.05)
        for run in runs:
            self._kill_all(run)
