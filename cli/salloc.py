"""salloc: get an allocation, run a command (the user's shell by default) here with the job's
environment, release the allocation when it exits. Its steps (`srun` under it) run on the job's
nodes. Messages, exit status and signals as Slurm 22.05's salloc (tests/data/slurm-2205-salloc.md)."""

from __future__ import annotations

import os
import sys

from slurmlet.cli import http

TYPE_CHECKING = False  # keep typing out of salloc's import path
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable

#: job states in which the allocation still exists
LIVE = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING")


def main(argv: list[str]) -> int:
    from slurmlet.cli.common import current_user
    from slurmlet.cli.opts import parse_salloc
    from slurmlet.common.grammar import OptError
    try:
        req = parse_salloc(argv, env=dict(os.environ), cwd=os.getcwd(), user=current_user(),
                           host=os.uname().nodename.split(".")[0])
    except OptError as e:
        (sys.stdout if e.stdout else sys.stderr).write("\n".join(e.lines) + "\n")
        return e.code
    if req["version"]:
        print("slurm-wlm 22.05.8")
        return 0
    if req["help"] or req["usage"]:
        from slurmlet.cli.helptext import text
        sys.stdout.write(text("salloc", "help" if req["help"] else "usage"))
        return 0
    quiet = bool(req["quiet"])

    def say(line: str) -> None:
        if not quiet:
            print(f"salloc: {line}", file=sys.stderr, flush=True)
    for line in req["info"]:
        if not quiet:
            print(line, file=sys.stderr)
    for opt, _value in req["ignored"]:
        say(f"warning: {opt} is accepted and ignored")
    if req.get("clusters"):
        from slurmlet.cli.clusters import check
        if check("salloc", str(req["clusters"])) is None:
            return 1
    body = req["submit"]
    if req.get("gpu_type"):
        body["gpu_type"] = req["gpu_type"]
    try:
        job_id = http.submit_once("/api/v1/jobs", body)["job_id"]
    except http.ControllerError as e:
        for line in e.pre:
            print(f"salloc: error: {line}", file=sys.stderr)
        print(f"salloc: error: Job submit/allocate failed: {e.error}", file=sys.stderr)
        return e.code or 1
    alloc = Allocation(job_id, say)
    job = alloc.wait_granted(req["immediate"])
    if job is None:
        return 1
    if req["no_shell"]:
        return 0
    return alloc.run(job, body, req["command"] or [_login_shell()], req["kill_command"])


def _login_shell() -> str:
    import pwd
    try:
        return pwd.getpwuid(os.getuid()).pw_shell or "/bin/sh"
    except KeyError:
        return os.environ.get("SHELL") or "/bin/sh"


def allocation_environment(job: dict, submit: dict, env: dict[str, str]) -> dict[str, str]:
    """The environment of salloc's command (pure): the caller's, with what salloc(1) lists under OUTPUT
    ENVIRONMENT VARIABLES for this job and these options, as 22.05 sets them."""
    from slurmlet.common.grammar import compress_counts
    jid = str(job["job_id"])
    out = dict(env)
    if job.get("components"):  # a heterogeneous job: its components' facts, under their groups' names
        return het_allocation_environment(job, out)
    out.update({
        "SLURM_CLUSTER_NAME": str(job.get("cluster") or ""),
        "SLURM_JOBID": jid, "SLURM_JOB_ID": jid,
        "SLURM_JOB_ACCOUNT": str(job.get("account") or job.get("user") or ""),
        "SLURM_JOB_CPUS_PER_NODE": compress_counts(job.get("alloc_cpus") or [job.get("num_cpus") or 1]),
        "SLURM_JOB_NAME": str(job.get("name") or ""),
        "SLURM_JOB_NODELIST": job.get("nodes") or "", "SLURM_NODELIST": job.get("nodes") or "",
        "SLURM_JOB_NUM_NODES": str(job.get("num_nodes") or 1), "SLURM_NNODES": str(job.get("num_nodes") or 1),
        "SLURM_JOB_PARTITION": str(job.get("partition") or ""),
        "SLURM_JOB_QOS": str(job.get("qos") or "normal"),
        "SLURM_NODE_ALIASES": "(null)",
        "SLURM_SUBMIT_DIR": str(submit.get("submit_dir") or os.getcwd()),
        "SLURM_SUBMIT_HOST": str(submit.get("submit_host") or ""),
        "SLURM_TASKS_PER_NODE": compress_counts(job.get("alloc_tasks") or [1]),
    })
    if submit.get("ntasks"):
        out["SLURM_NTASKS"] = out["SLURM_NPROCS"] = str(submit["ntasks"])
    if submit.get("ntasks_per_node"):
        out["SLURM_NTASKS_PER_NODE"] = str(submit["ntasks_per_node"])
    if (submit.get("cpus_per_task") or 1) != 1:
        out["SLURM_CPUS_PER_TASK"] = str(submit["cpus_per_task"])
    if submit.get("mem_per_node") is not None:
        out["SLURM_MEM_PER_NODE"] = str(submit["mem_per_node"])
    if submit.get("mem_per_cpu") is not None:
        out["SLURM_MEM_PER_CPU"] = str(submit["mem_per_cpu"])
    for key, var in (("gpus", "SLURM_GPUS"), ("gpus_per_node", "SLURM_GPUS_PER_NODE"),
                     ("gpus_per_task", "SLURM_GPUS_PER_TASK")):
        if submit.get(key):
            out[var] = str(submit[key])
    return out


def het_allocation_environment(job: dict, out: dict[str, str]) -> dict[str, str]:
    """salloc's command's environment under a heterogeneous job (pure): as 22.05 sets it, each
    component's facts with the suffix `_HET_GROUP_<n>` (and `_PACK_GROUP_<n>`), the job's id and its
    task count, and none of the job-wide names that a single job's has."""
    from slurmlet.common.grammar import compress_counts
    comps = job["components"]
    out.update({"SLURM_CLUSTER_NAME": str(job.get("cluster") or ""), "SLURM_JOB_ID": str(job["job_id"]),
                "SLURM_HET_SIZE": str(len(comps)), "SLURM_PACK_SIZE": str(len(comps)),
                "SLURM_SUBMIT_DIR": str(job.get("submit_dir") or os.getcwd()),
                "SLURM_SUBMIT_HOST": str(job.get("alloc_node") or "")})
    tasks = 0
    for n, c in enumerate(comps):
        ntasks = sum(c.get("alloc_tasks") or [1])
        tasks += ntasks
        facts = {"SLURM_JOBID": str(c["job_id"]), "SLURM_JOB_ID": str(c["job_id"]),
                 "SLURM_JOB_ACCOUNT": str(c.get("account") or c.get("user") or ""),
                 "SLURM_JOB_CPUS_PER_NODE": compress_counts(c.get("alloc_cpus") or [1]),
                 "SLURM_JOB_NAME": str(c.get("name") or ""), "SLURM_JOB_NODELIST": c.get("nodes") or "",
                 "SLURM_NODELIST": c.get("nodes") or "", "SLURM_JOB_NUM_NODES": str(c.get("num_nodes") or 1),
                 "SLURM_NNODES": str(c.get("num_nodes") or 1), "SLURM_JOB_PARTITION": str(c.get("partition") or ""),
                 "SLURM_JOB_QOS": str(c.get("qos") or "normal"), "SLURM_NODE_ALIASES": "(null)",
                 "SLURM_NPROCS": str(ntasks), "SLURM_NTASKS": str(ntasks),
                 "SLURM_TASKS_PER_NODE": compress_counts(c.get("alloc_tasks") or [1])}
        for name, value in facts.items():
            out[f"{name}_HET_GROUP_{n}"] = out[f"{name}_PACK_GROUP_{n}"] = value
    out["SLURM_NTASKS"] = out["SLURM_NPROCS"] = str(tasks)
    return out


def config_copy(cluster: str) -> str | None:
    """A copy of the cluster's slurm.conf for salloc's command (SLURM_CONF, which 22.05's salloc
    passes on: the file it read), kept under the user's cache directory and refreshed from the
    controller; None when it cannot be had or written."""
    path = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                        "slurmlet", cluster.replace("/", "_"), "slurm.conf")
    try:
        status, _header, data = http.exchange("GET", "/api/v1/config/file")
        if status != 200:
            return None
        try:
            with open(path, "rb") as f:
                if f.read() == data:
                    return path
        except OSError:
            pass
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except (OSError, http.Unreachable):
        return None
    return path


class Allocation:
    """One salloc's job (or an srun's own, `prog`): waiting for it, running the command under it,
    releasing it."""

    def __init__(self, job_id: int, say: Callable[[str], object], prog: str = "salloc") -> None:
        self.job_id = job_id
        self.say = say
        self.prog = prog
        self.released = False  # by this salloc: its end is not news
        self.child: subprocess.Popen[bytes] | None = None

    def _cancel(self) -> None:
        try:
            http.request("POST", "/api/v1/jobs/cancel", {"ids": [self.job_id], "uid": os.getuid()})
        except (http.ControllerError, http.Unreachable):
            pass

    def wait_granted(self, immediate: float | None = None) -> dict | None:
        """Until the job runs (None: it ended first, a signal made salloc give up, or it still pended
        `immediate` seconds on, -I), printing salloc's lines on the way (an srun's: those two commands
        share)."""
        import signal
        import time
        stop: list[int] = []

        def on_signal(signum, frame) -> None:  # noqa: ANN001
            stop.append(signum)
        old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            start, announced = time.monotonic(), False
            while not stop:
                # the controller answers once the job leaves PENDING, or after half a second
                job = http.request("GET", f"/api/v1/jobs/{self.job_id}?wait=0.5&until=start", timeout=60)
                if job["state"] not in ("PENDING", "CONFIGURING"):
                    break
                # the scheduler places a job within tens of milliseconds when it fits: only a job that
                # has not started after a second is reported pending, as salloc's immediate answer
                if not announced and time.monotonic() - start > 1.0:
                    if self.prog == "salloc":
                        self.say(f"Pending job allocation {self.job_id}")
                    self.say(f"job {self.job_id} queued and waiting for resources")
                    announced = True
                if immediate is not None and time.monotonic() - start >= immediate:
                    self._cancel()
                    if self.prog == "salloc":
                        self.say(f"Job allocation {self.job_id} has been revoked.")
                    why = "Connection timed out" if self.prog == "salloc" else "Requested nodes are busy"
                    print(f"{self.prog}: error: Unable to allocate resources: {why}", file=sys.stderr)
                    return None
            if stop:  # (also one that came during the last poll, which found the job started)
                self._cancel()
                self.say(f"Job allocation {self.job_id} has been revoked.")
                if self.prog == "salloc":
                    print("salloc: Job aborted due to signal", file=sys.stderr)
                return None
        finally:
            for s, h in old.items():
                signal.signal(s, h)
        if job["state"] not in ("RUNNING", "SUSPENDED"):
            self.say(f"Job allocation {self.job_id} has been revoked.")
            return None
        if job.get("het_job_id") is not None:  # a heterogeneous job: its components too, in order
            listed = http.request("GET", f"/api/v1/jobs?ids={self.job_id}")["jobs"]
            job["components"] = sorted(listed, key=lambda c: c.get("het_job_offset") or 0)
        if announced:
            self.say(f"job {self.job_id} has been allocated resources")
        if self.prog != "salloc":
            return job
        self.say(f"Granted job allocation {self.job_id}")
        self.say("Waiting for resource configuration")
        self.say(f"Nodes {job.get('nodes')} are ready for job")
        return job

    def run(self, job: dict, submit: dict, command: list[str], kill_signal: int | None) -> int:
        import signal
        import subprocess

        from slurmlet.cli.common import start_thread
        env = allocation_environment(job, submit, dict(os.environ))
        conf = config_copy(str(job.get("cluster") or "slurmlet"))
        if conf:
            env["SLURM_CONF"] = conf
        hung_up: list[int] = []

        def hang_up(signum, frame) -> None:  # noqa: ANN001 - SIGTERM/SIGHUP to salloc: give the job up
            if not self.released:
                self.released = True
                self._cancel()
                self.say(f"Job allocation {self.job_id} has been revoked.")
            hung_up.append(signum)
            if self.child and self.child.poll() is None:
                self.child.send_signal(signal.SIGHUP)
        # before the command starts (it may be quick to be signalled); handlers, unlike SIG_IGN, are not
        # inherited: Ctrl-C is the command's (the terminal sends it there too), salloc stays
        signal.signal(signal.SIGINT, lambda signum, frame: None)
        signal.signal(signal.SIGTERM, hang_up)
        signal.signal(signal.SIGHUP, hang_up)
        try:
            self.child = subprocess.Popen(command, env=env)
        except OSError as e:
            print(f"salloc: error: {command[0]}: {e.strerror}", file=sys.stderr)
            self.release(1)
            return 1
        if hung_up:
            self.child.send_signal(signal.SIGHUP)
        start_thread(self._watch, kill_signal)
        while True:
            try:
                code = self.child.wait()
                break
            except InterruptedError:
                continue
        code = 128 - code if code < 0 else code
        if not self.released:
            self.released = True
            self.say(f"Relinquishing job allocation {self.job_id}")
            self.release(code)
        return code

    def release(self, code: int) -> None:
        try:
            http.request("POST", f"/api/v1/jobs/{self.job_id}/complete", {"exit_code": min(255, max(0, code))})
        except http.ControllerError:
            pass  # ended already (cancelled, timed out): nothing left to give back

    def _watch(self, kill_signal: int | None) -> None:
        """The allocation ended under the command (scancel, its time limit, a node lost): say so, as
        salloc does; the command goes on unless -K named a signal for it."""
        import time
        while not self.released:
            try:
                job = http.request("GET", f"/api/v1/jobs/{self.job_id}?wait=30", timeout=60)
            except (http.ControllerError, http.Unreachable):
                time.sleep(1.0)
                continue
            if job["state"] in LIVE or self.released:
                continue
            self.released = True
            if job["state"] == "TIMEOUT":
                self.say(f"Job {self.job_id} has exceeded its time limit and its allocation has been revoked.")
            else:
                self.say(f"Job allocation {self.job_id} has been revoked.")
            if kill_signal and self.child and self.child.poll() is None:
                self.child.send_signal(kill_signal)
            return

