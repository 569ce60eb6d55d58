"""Launcher: starts batch scripts as process sessions, signals and reaps them. No networking.

Each job runs in its own session (setsid) and, where the node has cgroups (nodeagent/cgroup.py),
in its own cgroup: its whole tree is found and signalled even after the batch shell has exited,
and with a cgroup even what left the session (setsid, a double fork) and its memory is limited.
Each job started is also recorded in the spool (nodeagent/records.py) until the controller has its
end, so that an agent started again after a crash finds and stops what this one left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import stat
import time
from dataclasses import dataclass, field
from typing import Any

from slurmlet.common.cgroupconf import Policy
from slurmlet.common.scripts import exit_code_env, run_scripts, session_pids, signal_session
from slurmlet.nodeagent import identity
from slurmlet.nodeagent.cgroup import GATE, CpuMap, Group, Hierarchy, job_groups, oom_line, others
from slurmlet.nodeagent.records import TOKEN, Records, new_token, proc_entry
from slurmlet.nodeagent.usage import Book, Usage

log = logging.getLogger("slurmlet.agent")

#: the exit "signal" slurmctld records for a batch job whose input could not be opened (ExitCode 0:53)
STDIN_FAILED = 53


@dataclass
class Job:
    job_id: int
    pid: int
    proc: asyncio.subprocess.Process
    err_path: str
    started: float
    restarts: int = 0  # which incarnation of a requeued job this is
    killing: str | None = None  # why we are killing it: cancel, requeue, timeout, orphan
    timers: list[asyncio.TimerHandle] = field(default_factory=list)
    limit_at: float | None = None  # wall-clock time limit (moves later while suspended)
    signal: tuple[int, int, bool] | None = None  # --signal: (signum, seconds before the limit, batch only)
    suspended_at: float | None = None
    notified: bool = False  # got its preemption notice (SIGTERM) and runs out its GraceTime
    epilog: str | None = None  # slurm.conf Epilog (paths and globs), run when the job ends
    usage: Usage | None = None  # of the batch script's process tree
    usage_done: asyncio.Event | None = None  # stops its sampling
    env: dict[str, str] = field(default_factory=dict)  #: the Epilog's environment (env.script_environment)
    owner: dict = field(default_factory=dict)  #: the job's uid and gid: its files are written with their rights
    script: str | None = None  #: the batch script's file, removed when the job ends (as slurmd does)
    cgroup: Group | None = None  #: the batch step's cgroup (None: tracked by session only)
    job_cgroup: Group | None = None  #: the job's, above it: its memory limit, its OOM kills

    def pids(self) -> list[int]:
        """Every process of the batch step: its cgroup's where it has one (the shell was put there
        before it ran anything, so all it started is there, in its session or not), else its
        session's (a scan of every process of the node)."""
        if self.cgroup is not None:
            return self.cgroup.pids()
        return session_pids(self.pid)

    def signal_all(self, sig: int) -> None:
        if self.cgroup is not None:
            self.cgroup.signal(sig)
        else:
            signal_session(self.pid, sig)


#: seconds a launch waits for its files to open as the job's user (a FIFO nobody writes, a hung NFS
#: mount) before it fails the job
OPEN_TIMEOUT = 10.0


def _remove_script(path: str | None, spool: str) -> None:
    """The batch script's file, and the directory of its own it had when it ran as another user."""
    if not path:
        return
    with contextlib.suppress(OSError):
        os.remove(path)
    d = os.path.dirname(path)
    if os.path.basename(d).startswith("slurmlet-job") and os.path.abspath(d) != os.path.abspath(spool):
        with contextlib.suppress(OSError):
            os.rmdir(d)


def slurm_time(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


class Launcher:
    def __init__(self, node: str, spool: str, kill_wait: float = 30.0):
        self.node = node
        #: where jobs get their cgroups, and what cgroup.conf has them enforce (set by the agent)
        self.cgroups: Hierarchy | None = None
        self.policy = Policy()
        self.cpumap: CpuMap | None = None  #: the node's CPUs by job, under ConstrainCores
        self.gpu_files: list[str] = []  #: the node's GPU device files by index, under ConstrainDevices
        self.spool = spool
        self.kill_wait = kill_wait
        self.jobs: dict[int, Job] = {}
        self.book = Book()  #: every job's usage samples here (shared with the step runner)
        #: exits not yet acknowledged by the controller
        self.finished: dict[int, dict] = {}
        #: (job, incarnation) that ended recently: a late duplicate launch order must not run them again
        self.done_ids: dict[tuple[int, int], float] = {}
        #: jobs whose batch script has ended and whose end is not recorded yet (their Epilog runs): a
        #: launch order for them meanwhile (the controller has not heard of the end) must not start them again
        self.ending: set[int] = set()
        self.exited = asyncio.Event()
        os.makedirs(spool, exist_ok=True)
        #: what this agent started and whose end the controller does not have yet, on disk
        self.records = Records(spool)

    def running_ids(self) -> list[int]:
        return sorted(self.jobs)

    def ending_ids(self) -> tuple[list[int], list[int]]:
        """The running jobs whose kill sequence has begun, and those running out a preemption's
        GraceTime: the controller repeats no order they have had (see api/nodes.py)."""
        return (sorted(j for j, job in self.jobs.items() if job.killing),
                sorted(j for j, job in self.jobs.items() if job.notified and not job.killing))

    def unacked(self) -> list[dict]:
        return list(self.finished.values())

    def ack(self, ids: list[int]) -> None:
        for i in ids:
            self.finished.pop(i, None)
            self.records.remove(f"job{i}")

    def forget_finished(self) -> int:
        """The controller no longer knows this node (a new database, `--init-db`): the jobs that ended
        here belong to the old one, and their ids may be the new one's. Forget them (their unsent
        reports too), so that a new job under an old id runs. Returns how many there were."""
        n = len(self.done_ids) + len(self.finished)
        self.ack(list(self.finished))
        self.done_ids.clear()
        return n

    async def launch(self, order: dict, env: dict[str, str], epilog_env: dict[str, str] | None = None) -> None:
        """Start the batch script of `order` with the job environment `env`; `epilog_env` is the
        environment the batch host's Epilog gets when the job ends (see env.script_environment)."""
        jid = order["job_id"]
        gen = int(order.get("restarts") or 0)
        if jid in self.jobs or jid in self.ending or (jid, gen) in self.done_ids or jid in self.finished:
            old = self.jobs.get(jid)
            if old is not None and old.restarts != gen:
                log.info("job %s: run %d waits for run %d to end here", jid, gen, old.restarts)
            return
        script = None
        out_path, err_path = order.get("stdout"), order.get("stderr") or order.get("stdout")
        # output files emptied first unless --open-mode=append, and written at their end: the agent
        # appends its own lines (CANCELLED AT, OOM), which a job writing at an offset of its own would overwrite
        mode = "ab" if order.get("open_mode") == "append" else "wab"
        stdin_path = order.get("stdin") or os.devnull
        workdir = order.get("workdir") or "/"
        files = [(stdin_path, "rb")] + ([(out_path, mode)] if out_path else []) + \
            ([(err_path, mode)] if err_path != out_path else [])
        # all with the job's user's rights, in one child: its input first, as slurmstepd does (a job whose
        # input it cannot read never starts, and makes no output file); its output where they may write;
        # its working directory one they may enter (root may enter and write what they may not)
        try:  # (in a thread: an open that hangs must not stop the agent; it is given up after OPEN_TIMEOUT)
            if all(path == os.devnull for path, _ in files):  # (an srun's or salloc's allocation, -o /dev/null)
                opened, bad = identity.open_null(order, files), None
            else:
                opened, bad = await asyncio.get_running_loop().run_in_executor(
                    None, identity.open_all_as, order, files, workdir, OPEN_TIMEOUT)
        except OSError as e:  # no process to open them in, or it hung, or a user unknown here
            log.warning("job %s: launch failed: %s", jid, e)
            self._record(jid, gen, {"job_id": jid, "exit_code": 1, "launch_failed": True, "restarts": gen})
            return
        failed = next((f for f in opened if isinstance(f, OSError)), None)
        if failed is not None:
            for f in opened:
                if not isinstance(f, OSError):
                    f.close()
            if failed is opened[0]:
                log.warning("job %s: could not open stdin file %s: %s", jid, stdin_path, failed.strerror or failed)
                self._record(jid, gen, {"job_id": jid, "exit_code": 0, "signal": STDIN_FAILED, "launch_failed": True,
                                        "restarts": gen})
            else:
                log.warning("job %s: launch failed: %s", jid, failed)
                self._record(jid, gen, {"job_id": jid, "exit_code": 1, "launch_failed": True, "restarts": gen})
            return
        stdin = opened[0]
        out = opened[1] if out_path else open(os.devnull, "wb")
        err = out if err_path == out_path else opened[-1]
        try:
            script = os.path.join(identity.script_dir(order) or self.spool, f"job{jid}.script")
            # a new file, never what stands at its name (the user's directory could hold a link put there
            # to make root write elsewhere): an earlier run's left over goes first, then O_EXCL|O_NOFOLLOW
            with contextlib.suppress(FileNotFoundError):
                os.unlink(script)
            fd = os.open(script, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o700)
            with os.fdopen(fd, "w") as f:
                os.fchmod(fd, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP)
                identity.own_fd(fd, order)  # the job runs as its user (agent as root), who must run it
                f.write(order["script"])
        except OSError as e:
            log.warning("job %s: launch failed: %s", jid, e)
            for f in {stdin, out, err}:
                f.close()
            _remove_script(script, self.spool)
            self._record(jid, gen, {"job_id": jid, "exit_code": 1, "launch_failed": True, "restarts": gen})
            return
        if bad is not None:
            err.write(f"slurmstepd-{self.node}: error: couldn't chdir to `{workdir}': {bad.strerror}: "
                      f"going to /tmp instead\n".encode())
            err.flush()
            workdir = "/tmp"
        # on disk before the job can run: a crash at any moment leaves nothing unrecorded
        rec = {"kind": "batch", "job_id": jid, "restarts": gen, "token": new_token(), "procs": []}
        self.records.save(f"job{jid}", rec)
        env = dict(env, **{TOKEN: rec["token"]})
        env.pop("SLURM_UMASK", None)  # applied to the job (spawn_kwargs), not shown to it: slurmstepd's way
        groups = self._groups(order, "batch")
        try:
            proc = await asyncio.create_subprocess_exec(
                "/bin/sh", "-c", (GATE if groups else "") + identity.LAUNCH, script, workdir, *order.get("argv", []),
                stdin=stdin,
                stdout=out, stderr=err, cwd="/", env=env, start_new_session=True, **identity.spawn_kwargs(order))
        except (OSError, ValueError) as e:  # ValueError: what exec cannot take (a NUL in an argument)
            log.warning("job %s: exec failed: %s", jid, e)
            why = getattr(e, "strerror", None) or e
            err.write(f"slurmstepd-{self.node}: error: execve(): {script}: {why}\n".encode())
            _remove_script(script, self.spool)
            self._record(jid, gen, {"job_id": jid, "exit_code": 1, "launch_failed": True, "restarts": gen})
            return
        finally:
            for f in {out, err, stdin}:
                f.close()
        job = Job(job_id=jid, pid=proc.pid, proc=proc, err_path=err_path or os.devnull, started=time.time(),
                  restarts=gen, epilog=order.get("epilog"), env=epilog_env or {},
                  owner={"uid": order.get("uid"), "gid": order.get("gid")}, script=script)
        if groups:
            job.job_cgroup, job.cgroup = groups
            try:
                await job.cgroup.adopt(proc.pid, self.cpumap.jobs.get(jid) if self.cpumap else None)
            except BaseException:  # the agent stops meanwhile: the shell, stopped at its gate, must not
                with contextlib.suppress(OSError):  # outlive it (a stopped process waits for ever)
                    os.kill(proc.pid, signal.SIGKILL)
                raise
        self.jobs[jid] = job
        self.records.save(f"job{jid}", dict(rec, procs=[proc_entry(proc.pid)]))
        from .usage import watch
        job.usage, job.usage_done = self.book.new(jid, "batch"), asyncio.Event()
        asyncio.create_task(watch(job.pids, job.usage, job.usage_done))
        limit = order.get("time_limit")
        if limit:  # None or 0: no limit (Slurm's --time=0)
            job.limit_at = (order.get("start_time") or time.time()) + limit * 60 + (order.get("suspended_secs") or 0)
            job.signal = _parse_signal_opt(order.get("signal"))
            self._arm(job)
        log.info("Launching batch job %s (run %d) for UID %s: pid %d", jid, gen, order.get("uid"), proc.pid)
        asyncio.create_task(self._reap(job))

    def _groups(self, order: dict, step: str) -> tuple[Group, Group] | None:
        mine: dict[str, Any] = next((a for a in order.get("alloc") or [] if a.get("node") == self.node), {})
        cpus = self.cpumap.take(order["job_id"], mine.get("cpus") or 1) if self.cpumap else None
        return job_groups(self.cgroups, self.policy, order["job_id"], step, mine.get("memory"), cpus,
                          others(self.gpu_files, mine.get("gpu_ids")) if self.policy.devices else None,
                          job_cpus=mine.get("cpus") or 1)

    def _arm(self, job: Job) -> None:
        """Timers for the time limit and --signal, from the job's (possibly moved) limit."""
        if job.limit_at is None:
            return
        loop = asyncio.get_running_loop()
        left = job.limit_at - time.time()
        job.timers.append(loop.call_later(max(0.0, left), self.kill, job.job_id, "timeout"))
        if job.signal:
            signum, before, batch_only = job.signal
            job.timers.append(loop.call_later(max(0.0, left - before), self.send_signal, job.job_id, signum,
                                              batch_only))

    def suspended_ids(self) -> list[int]:
        return sorted(j.job_id for j in self.jobs.values() if j.suspended_at is not None)

    def suspend(self, jid: int) -> None:
        """SUSPEND preemption: stop the whole session; the time limit stands still meanwhile."""
        job = self.jobs.get(jid)
        if job is None or job.killing or job.suspended_at is not None:
            return
        # the freezer holds all of the job, its steps and what left the session too (Slurm's
        # proctrack/cgroup); without one, SIGSTOP to its session (proctrack/linuxproc's way)
        if not (job.job_cgroup and job.job_cgroup.freeze()):
            job.signal_all(signal.SIGSTOP)
        for t in job.timers:
            t.cancel()
        job.timers.clear()
        job.suspended_at = time.time()

    def resume(self, jid: int) -> None:
        job = self.jobs.get(jid)
        if job is None or job.suspended_at is None:
            return
        if job.limit_at is not None:
            job.limit_at += time.time() - job.suspended_at
        job.suspended_at = None
        if not (job.job_cgroup and job.job_cgroup.thaw()):
            job.signal_all(signal.SIGCONT)
        if not job.killing:
            self._arm(job)

    async def _reap(self, job: Job) -> None:
        rc = await job.proc.wait()
        if job.usage_done is not None:
            job.usage_done.set()
        if job.killing:
            # processes that caught SIGTERM get KillWait seconds to finish before SIGKILL
            deadline = time.monotonic() + self.kill_wait
            while job.pids() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        for t in job.timers:
            t.cancel()
        # the batch script is done: whatever it left behind in its session (and its cgroup) goes too
        job.signal_all(signal.SIGKILL)
        self.ending.add(job.job_id)
        self.jobs.pop(job.job_id, None)
        _remove_script(job.script, self.spool)
        rep: dict[str, Any] = {"job_id": job.job_id, "exit_code": rc if rc >= 0 else 0,
                               "signal": -rc if rc < 0 else 0, "end_time": time.time(), "restarts": job.restarts}
        if job.killing == "timeout":
            rep["timeout"] = True
        if job.usage is not None:
            rep.update(job.usage.report())
        if job.cgroup is not None:
            rep.update(await self._end_cgroups(job))
        if job.epilog:
            env = dict(job.env, **exit_code_env(rep["exit_code"], rep["signal"]))
            code, out = await run_scripts(job.epilog, env)
            if code:
                log.warning("job %s: epilog failed with exit code %s: %s", job.job_id, code, out.strip()[-200:])
                rep["epilog_failed"] = code
        self._record(job.job_id, job.restarts, rep)
        self.ending.discard(job.job_id)
        log.info("job %s (run %d) completed: exit code %s, signal %s", job.job_id, job.restarts, rep["exit_code"],
                 rep["signal"])

    async def _end_cgroups(self, job: Job) -> dict:
        """The batch step's exact CPU time and its job's OOM kills from their cgroups, then both
        removed (the job's steps still running here go with it, as the job has ended)."""
        cg, job_cg = job.cgroup, job.job_cgroup
        assert cg is not None and job_cg is not None  # (made together, see _groups)
        out: dict = {}
        times = cg.cpu_times()
        if times is not None:
            out.update(user_cpu=round(times[0], 3), system_cpu=round(times[1], 3))
        peak = cg.memory_peak_kb()
        if peak:  # the kernel's own peak: a peak between two samples counts too
            out["max_rss"] = max(peak, job.usage.max_rss if job.usage is not None else 0)
        kills = cg.oom_kills()  # the batch step's own (its job's steps count theirs)
        if kills:
            out["oom"] = True
            with contextlib.suppress(OSError), identity.open_as(job.err_path, "anb", job.owner) as f:
                f.write(oom_line(self.node, f"{job.job_id}.batch", kills).encode())
        await cg.remove(self.kill_wait)
        await job_cg.remove(self.kill_wait)
        if self.cpumap:
            self.cpumap.release(job.job_id)
        return out

    def _record(self, jid: int, gen: int, rep: dict) -> None:
        # kept until acknowledged: an agent started after a crash sends it again
        self.records.save(f"job{jid}", {"kind": "batch", "job_id": jid, "restarts": gen, "procs": [],
                                        "finished": rep})
        self.finished[jid] = rep
        self.done_ids[(jid, gen)] = time.time()
        if len(self.done_ids) > 10000:
            for k in sorted(self.done_ids, key=self.done_ids.__getitem__)[:5000]:
                del self.done_ids[k]
        self.exited.set()

    def refuse(self, order: dict, message: str) -> None:
        """The job cannot start here (its environment failed): say why in its output, report it."""
        jid, gen = order["job_id"], int(order.get("restarts") or 0)
        path = order.get("stderr") or order.get("stdout")
        if path:
            with contextlib.suppress(OSError), identity.open_as(path, "anb", order) as f:
                f.write(f"slurmstepd-{self.node}: error: {message}\n".encode())
        self._record(jid, gen, {"job_id": jid, "exit_code": 1, "launch_failed": True, "restarts": gen})

    def kill(self, jid: int, why: str, grace: float = 0.0) -> None:
        """SIGTERM the job's whole session, SIGKILL after KillWait.

        A preemption with GraceTime first sends SIGCONT and SIGTERM as a notice and starts the
        kill sequence when the grace time is over, as Slurm does.
        """
        job = self.jobs.get(jid)
        if job is None or job.killing:
            return
        if why == "preempt" and grace > 0:
            if job.notified:  # (the controller repeats its order: the notice's timer ends the grace)
                return
            job.notified = True
            job.suspended_at = None
            if job.job_cgroup:
                job.job_cgroup.thaw()
            job.signal_all(signal.SIGCONT)
            job.signal_all(signal.SIGTERM)
            job.timers.append(asyncio.get_running_loop().call_later(grace, self.kill, jid, "preempt"))
            return
        job.killing = why
        job.suspended_at = None
        log.info("job %s (run %d): killing it (%s)", jid, job.restarts, why)
        now = slurm_time(time.time())
        msg = {"timeout": " DUE TO TIME LIMIT", "preempt": " DUE TO PREEMPTION",
               "requeue": " DUE TO JOB REQUEUE"}.get(why, "")
        if why in ("cancel", "timeout", "requeue", "preempt"):
            with contextlib.suppress(OSError), identity.open_as(job.err_path, "anb", job.owner) as f:
                f.write(f"slurmstepd-{self.node}: error: *** JOB {jid} ON {self.node} CANCELLED AT {now}{msg} ***\n"
                        .encode())
        # Slurm sends SIGCONT too, so stopped tasks see the SIGTERM (a frozen job is thawed first)
        if job.job_cgroup:
            job.job_cgroup.thaw()
        job.signal_all(signal.SIGCONT)
        job.signal_all(signal.SIGTERM)
        loop = asyncio.get_running_loop()
        job.timers.append(loop.call_later(self.kill_wait, self._kill_all, job))

    @staticmethod
    def _kill_all(job: Job) -> None:
        job.signal_all(signal.SIGKILL)
        if job.job_cgroup is not None:
            job.job_cgroup.kill()

    def stat(self, jid: int) -> list[dict] | None:
        """sstat of the batch step: its script's process tree, sampled now (None: not running here)."""
        job = self.jobs.get(jid)
        if job is None or job.usage is None:
            return None
        return [dict(job.usage.live(job.pid, job.pids), rank=0, local_id=0)]

    def send_signal(self, jid: int, sig: int, batch_only: bool = False) -> None:
        job = self.jobs.get(jid)
        if job is None:
            return
        if batch_only:
            with contextlib.suppress(ProcessLookupError):
                os.kill(job.pid, sig)
        else:
            job.signal_all(sig)

    async def shutdown(self, grace: float = 1.0) -> None:
        """Agent exit: stop every job's whole process tree (SIGTERM, SIGKILL after `grace`)."""
        jobs = list(self.jobs.values())
        for job in jobs:
            for t in job.timers:
                t.cancel()
            if job.job_cgroup:
                job.job_cgroup.thaw()
            job.signal_all(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while jobs and time.monotonic() < deadline and any(j.pids() for j in jobs):
            await asyncio.sleep(0.05)
        for job in jobs:
            self._kill_all(job)
            if job.job_cgroup is not None:
                await job.job_cgroup.remove(grace + 5)


def _parse_signal_opt(value: str | None) -> tuple[int, int, bool] | None:
    """`[B:]SIG[@secs]` -> (signum, seconds before the limit, batch shell only)."""
    if not value:
        return None
    batch_only = False
    v = value
    if v[:2].upper() in ("B:", "R:"):
        batch_only = v[0].upper() == "B"
        v = v[2:]
    name, _, t = v.partition("@")
    before = int(t) if t.isdigit() else 60
    if name.isdigit():
        return int(name), before, batch_only
    name = name.upper()
    if not name.startswith("SIG"):
        name = "SIG" + name
    sig = getattr(signal, name, None)
    return (int(sig), before, batch_only) if sig is not None else None
