"""Cgroups for jobs and steps: Slurm's proctrack/cgroup, task/cgroup (memory) and jobacct_gather/cgroup.

Each job gets a cgroup under this agent's own part of a slurmlet hierarchy, and each of its steps
(the batch script is step `batch`) one below it, as slurmstepd lays them out::

    <root>/slurmlet/<node>-<spool hash>/job_<id>/step_<batch|N>

A process is put in its step's cgroup before it runs anything of the job's: the launch shell stops
itself first (`GATE`), the agent moves it and lets it go on. From then on nothing it starts can
leave: processes that call setsid, double-fork or change their process group are still found
(`pids`) and killed (`kill`, under the freezer where there is one, so that none forks meanwhile).

Two layouts are supported: cgroup v2 (the unified hierarchy: one directory per group) and v1 (a
directory per controller: freezer, memory, cpuacct, pids). A hybrid system (v1 controllers beside
an empty v2) uses v1. Where neither can be written (an unprivileged agent, some containers) the
agent says so once and tracks jobs by session, as Slurm's proctrack/linuxproc does.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import hashlib
import logging
import os
import signal
import stat
import struct
import time

from slurmlet.common.cgroupconf import Policy, mounted

log = logging.getLogger("slurmlet.agent")

#: those a job's and a step's groups are made in: freezer (their processes, suspend, kill), memory
#: (its limit, OOM kills, the peak), cpuacct (the CPU time) and pids (its processes no longer count
#: against the agent's own limit, a systemd unit's TasksMax); cpuset and devices only where the job
#: is confined to CPUs or kept from devices (job_groups), as Slurm's task/cgroup makes them only
#: under ConstrainCores and ConstrainDevices. Each is a directory made and removed for every job and
#: step, about 25-70 us of the kernel's time each, beside the writes into it.
V1_ALWAYS = ("freezer", "memory", "cpuacct", "pids")
#: the launch shell stops itself until the agent has put it in its cgroup (prefixed to the shell's code)
GATE = "kill -STOP $$; "



def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()





class Hierarchy:
    """This agent's part of the slurmlet hierarchy: `kind` "v1" or "v2", `base` its directories by
    controller ("" for v2)."""

    def __init__(self, kind: str, base: dict[str, str]):
        self.kind, self.base = kind, base

    @classmethod
    def detect(cls, node: str, spool: str, prefer: str | None = None) -> Hierarchy | None:
        """The hierarchy this agent can write, made now; None (and why, logged once) where none can.
        `prefer` ("v1", "v2" or "none") overrides the choice (SLURMLET_CGROUP)."""
        key = f"{node}-{hashlib.sha256(os.path.abspath(spool).encode()).hexdigest()[:8]}"
        if prefer == "none":
            return None
        found = mounted(prefer)
        if isinstance(found, str):
            log.warning("cgroups: %s; jobs are tracked by session (as proctrack/linuxproc) and --mem is "
                        "not enforced", found)
            return None
        kind, base = found[0], {c: os.path.join(root, "slurmlet", key) for c, root in found[1].items()}
        try:
            for path in base.values():
                _make(path)
            if kind == "v2":  # from the hierarchy's root down to the agent's part, for its jobs
                _enable_controllers(os.path.dirname(os.path.dirname(base[""])), base[""])
        except OSError as e:
            log.warning("cgroups: cannot write %s: %s; jobs are tracked by session (as proctrack/linuxproc) "
                        "and --mem is not enforced", e.filename, e.strerror)
            return None
        h = cls(kind, base)
        log.info("cgroups: %s, jobs under %s", kind, ", ".join(sorted(set(base.values()))))
        return h

    def group(self, job_id: int, step: str | None = None, only: set[str] | None = None) -> Group:
        """The job's (or its step's) group: in every hierarchy of this agent, or (v1) in those of `only`."""
        rel = f"job_{job_id}" if step is None else os.path.join(f"job_{job_id}", f"step_{step}")
        return Group(self.kind, {c: os.path.join(b, rel) for c, b in self.base.items() if only is None or c in only})

    def close(self) -> None:
        """At the agent's exit, its jobs gone: its part of the hierarchy goes too (left when not empty)."""
        for b in self.base.values():
            with contextlib.suppress(OSError):
                for d, _, _ in os.walk(b, topdown=False):
                    os.rmdir(d)

    def stale_jobs(self) -> list[int]:
        """Job cgroups left under this agent's part (by an agent that died)."""
        out = set()
        for b in self.base.values():
            with contextlib.suppress(OSError):
                out |= {int(n[4:]) for n in os.listdir(b) if n.startswith("job_") and n[4:].isdigit()}
        return sorted(out)








_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning("cgroups: %s", message)


def _make(path: str) -> None:
    """A cgroup directory and the ones above it; a v1 cpuset takes its parent's CPUs and memory
    nodes (a new one has none, and takes no process until it has)."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        _make(parent)
    os.mkdir(path)
    if os.path.exists(os.path.join(path, "cpuset.mems")) and not _read(os.path.join(path, "cpuset.mems")).strip():
        for f in ("cpuset.mems", "cpuset.cpus"):
            _write(os.path.join(path, f), _read(os.path.join(parent, f)).strip())


def usable_cpus() -> list[int]:
    """The CPUs this node's jobs may be given: the agent's own affinity."""
    return sorted(os.sched_getaffinity(0))


class CpuMap:
    """Which of the node's CPUs each job here has (ConstrainCores): a job takes the lowest-numbered
    free ones; a node declared with more CPUs than it has shares the least-used ones."""

    def __init__(self, cpus: list[int]):
        self.cpus = cpus
        self.jobs: dict[int, list[int]] = {}

    def take(self, job_id: int, n: int) -> list[int]:
        if job_id in self.jobs:
            return self.jobs[job_id]
        use = {c: 0 for c in self.cpus}
        for got in self.jobs.values():
            for c in got:
                use[c] = use.get(c, 0) + 1
        n = max(1, min(n, len(self.cpus)))
        got = sorted(sorted(self.cpus, key=lambda c: (use[c], c))[:n])
        self.jobs[job_id] = got
        return got

    def release(self, job_id: int) -> None:
        self.jobs.pop(job_id, None)


def _enable_controllers(root: str, down_to: str) -> None:
    """v2: pass memory, pids and cpu (those the kernel offers here; a controller bound to v1 is not)
    on to the children of every group from `root` down to `down_to`, which hold no process."""
    path = root
    for part in [""] + os.path.relpath(down_to, root).split(os.sep):
        path = os.path.join(path, part) if part else path
        offered = _read(os.path.join(path, "cgroup.controllers")).split()
        for c in (c for c in ("memory", "pids", "cpu") if c in offered):
            with contextlib.suppress(OSError):  # a controller the parent cannot pass on stays off
                _write(os.path.join(path, "cgroup.subtree_control"), f"+{c}")


class Group:
    """One job's or step's cgroup: its directory per controller (v1) or its one directory (v2)."""

    def __init__(self, kind: str, dirs: dict[str, str]):
        self.kind, self.dirs = kind, dirs

    def _dir(self, controller: str) -> str | None:
        return self.dirs.get("" if self.kind == "v2" else controller)

    def create(self, memory_mb: int | None = None, swap: bool = False, cpus: list[int] | None = None,
               tasks: int | None = None) -> None:
        """Make the group (and its parents); `memory_mb`: a hard limit on RAM (and on RAM plus swap
        with `swap`, ConstrainSwapSpace); `cpus`: the only CPUs its processes may run on (a cpuset,
        where the node has the controller); `tasks`: its most processes and threads (pids.max); all
        set before any process is in it."""
        for path in self.dirs.values():
            _make(path)
        where = self._dir("pids")
        if tasks and where is not None:
            try:
                _write(os.path.join(where, "pids.max"), str(tasks))
            except OSError:  # (v2 without the pids controller here)
                _warn_once("no pids controller here: the number of a job's processes is not limited")
        where = self._dir("cpuset")
        if cpus and where is not None:  # (none mounted in v1, or v2 without the controller: the agent binds instead)
            with contextlib.suppress(OSError):
                _write(os.path.join(where, "cpuset.cpus"), ",".join(map(str, cpus)))
        if self.kind == "v2" and os.path.basename(self.path).startswith("job_"):
            with contextlib.suppress(OSError):  # a job's group holds no process: it passes them on to its steps'
                _enable_controllers(self.path, self.path)
        if memory_mb:
            limit = memory_mb * 1024 * 1024
            if self.kind == "v2":
                if not os.path.exists(os.path.join(self.dirs[""], "memory.max")):
                    _warn_once("the v2 hierarchy has no memory controller here: --mem is not enforced")
                    return
                _write(os.path.join(self.dirs[""], "memory.max"), str(limit))
                if swap:
                    with contextlib.suppress(OSError):
                        _write(os.path.join(self.dirs[""], "memory.swap.max"), "0")
            elif "memory" in self.dirs:
                _write(os.path.join(self.dirs["memory"], "memory.limit_in_bytes"), str(limit))
                if swap:
                    with contextlib.suppress(OSError):  # no memsw files without swap accounting
                        _write(os.path.join(self.dirs["memory"], "memory.memsw.limit_in_bytes"), str(limit))

    def deny_devices(self, paths: list[str]) -> bool:
        """Its processes may not open these device files: v1's devices controller, or in v2 a
        BPF_PROG_TYPE_CGROUP_DEVICE program attached to the group (as Slurm's cgroup/v2 does). False
        where it cannot be done."""
        rules = []
        for path in paths:
            try:
                st = os.stat(path)
            except OSError:
                continue
            kind = "c" if stat.S_ISCHR(st.st_mode) else "b" if stat.S_ISBLK(st.st_mode) else None
            if kind:
                rules.append((kind, os.major(st.st_rdev), os.minor(st.st_rdev)))
        if self.kind == "v2":
            try:
                _bpf_deny(self.dirs[""], rules)
            except OSError as e:
                _warn_once(f"cannot attach a device program to a cgroup ({e.strerror}): jobs may open every GPU")
                return False
            return True
        d = self.dirs.get("devices")
        if d is None:
            return False
        for kind, major, minor in rules:
            _write(os.path.join(d, "devices.deny"), f"{kind} {major}:{minor} rwm")
        return True

    def add(self, pid: int) -> None:
        for path in self.dirs.values():
            _write(os.path.join(path, "cgroup.procs"), str(pid))

    async def adopt(self, pid: int, cpus: list[int] | None = None, timeout: float = 30.0) -> bool:
        """Put a launch shell that stopped itself (`GATE`) in this group (bound to `cpus`, which a
        cpuset also confines it to where there is one), then let it go on. False when it could not
        be moved (it is killed then: it must not run outside its cgroup)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = proc_state(pid)
            if state in ("T", None, "Z"):
                break
            await asyncio.sleep(0.001)
        try:
            self.add(pid)
        except OSError as e:
            if proc_state(pid) not in (None, "Z"):
                log.warning("cgroup %s: cannot add process %s: %s", self.path, pid, e.strerror)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                return False
        if cpus:  # (a CPU id from the user's --cpu-bind may be out of any range: the task runs unbound)
            with contextlib.suppress(OSError, ValueError, OverflowError):
                os.sched_setaffinity(pid, cpus)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGCONT)
        return True

    def exists(self) -> bool:
        return os.path.isdir(self.path)

    @property
    def path(self) -> str:
        return next(iter(self.dirs.values()))

    def pids(self) -> list[int]:
        """Every process in the group and the groups below it."""
        out: set[int] = set()
        top = self._dir("freezer") or self.path
        for dirpath, _dirs, _files in os.walk(top):
            with contextlib.suppress(OSError):
                out |= {int(x) for x in _read(os.path.join(dirpath, "cgroup.procs")).split()}
        return sorted(out)

    def signal(self, sig: int) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def kill(self) -> None:
        """SIGKILL every process of the group, none able to fork meanwhile: v2's cgroup.kill, v1's
        freezer (frozen, killed, thawed: a frozen process dies only once thawed)."""
        if self.kind == "v2":
            with contextlib.suppress(OSError):
                _write(os.path.join(self.dirs[""], "cgroup.kill"), "1")
                return
        elif self.freeze():
            self.signal(signal.SIGKILL)
            self.thaw()
            return
        self.signal(signal.SIGKILL)

    def freeze(self) -> bool:
        """Stop every process of the group (SUSPEND); False where there is no freezer."""
        return self._freezer("FROZEN", "1")

    def thaw(self) -> bool:
        return self._freezer("THAWED", "0")

    def _freezer(self, v1: str, v2: str) -> bool:
        try:
            if self.kind == "v2":
                _write(os.path.join(self.dirs[""], "cgroup.freeze"), v2)
            elif "freezer" in self.dirs:
                _write(os.path.join(self.dirs["freezer"], "freezer.state"), v1)
            else:
                return False
        except OSError:
            return False
        return True

    def oom_kills(self) -> int:
        """How many processes of the group (and the groups below it) the kernel killed for a memory
        limit (its own or its job's). v1 counts a kill where the killed process was, v2 adds it up
        to every group above too: the larger of the group's own count and its steps' sum."""
        top = self._dir("memory")
        if top is None:
            return 0
        name = "memory.events" if self.kind == "v2" else "memory.oom_control"
        own, below = 0, 0
        for dirpath, _dirs, _files in os.walk(top):
            n = _oom_count(os.path.join(dirpath, name))
            if dirpath == top:
                own = n
            else:
                below += n
        return max(own, below)

    def cpu_times(self) -> tuple[float, float] | None:
        """(user, system) CPU seconds of every process that ran in the group: their sum is the
        kernel's exact count (v1 cpuacct.usage, v2 usage_usec, in ns and us); the split between
        the two follows the kernel's tick-based user and system counts, as precise as those are.
        None where the group has no count (v1 without cpuacct)."""
        try:
            if self.kind == "v2":
                stat = dict(line.split() for line in _read(os.path.join(self.dirs[""], "cpu.stat")).splitlines())
                total, user, system = int(stat["usage_usec"]) / 1e6, int(stat["user_usec"]), int(stat["system_usec"])
            elif "cpuacct" in self.dirs:
                d = self.dirs["cpuacct"]
                total = int(_read(os.path.join(d, "cpuacct.usage"))) / 1e9
                stat = dict(line.split() for line in _read(os.path.join(d, "cpuacct.stat")).splitlines())
                user, system = int(stat["user"]), int(stat["system"])
            else:
                return None
        except (OSError, KeyError, ValueError):
            return None
        share = user / (user + system) if user + system else 1.0
        return total * share, total * (1 - share)

    def memory_peak_kb(self) -> int | None:
        """The most memory the group held at once (KB), where the kernel keeps it: what its memory
        limit is held against (anonymous memory and the page cache it brought in)."""
        with contextlib.suppress(OSError, ValueError):
            if self.kind == "v2":
                return int(_read(os.path.join(self.dirs[""], "memory.peak"))) // 1024
            if "memory" in self.dirs:
                return int(_read(os.path.join(self.dirs["memory"], "memory.max_usage_in_bytes"))) // 1024
        return None

    async def remove(self, timeout: float = 30.0) -> bool:
        """Remove the group once its last process is gone (killing what is left), then its job's
        group when no step is left in it. False when processes outlived `timeout` (left for later)."""
        deadline = time.monotonic() + timeout
        while self.pids():
            self.kill()
            if time.monotonic() > deadline:
                log.warning("cgroup %s: processes %s outlived their job", self.path, self.pids()[:5])
                return False
            await asyncio.sleep(0.05)
        for path in self.dirs.values():
            below = [d for d, _, _ in os.walk(path, topdown=False)]  # a job's steps' groups first
            for d in below + [os.path.dirname(path)]:
                if os.path.basename(d).startswith(("job_", "step_")):
                    with contextlib.suppress(OSError):  # EBUSY: another step of the job is still there
                        os.rmdir(d)
        return True


def gpu_files(spec: str | None) -> list[str]:
    """The node's GPU device files in GPU index order: `spec` as gres.conf's File= writes them
    (`/dev/nvidia[0-7]`), else the /dev/nvidiaN files there are."""
    if spec:
        import hostlist
        return hostlist.expand_hostlist(spec)
    return sorted((p for p in glob.glob("/dev/nvidia[0-9]*") if p[11:].isdigit()), key=lambda p: int(p[11:]))


def oom_line(node: str, step: str, kills: int) -> str:
    """slurmstepd's line in a step's error output after OOM kills (22.05's words)."""
    return (f"slurmstepd-{node}: error: Detected {kills} oom-kill event(s) in StepId={step}. Some of your "
            f"processes may have been killed by the cgroup out-of-memory handler.\n")


def others(files: list[str], gpu_ids: list[int] | None) -> list[str]:
    """The GPU device files of the node but those of `gpu_ids`."""
    mine = set(gpu_ids or [])
    return [f for i, f in enumerate(files) if i not in mine]


def job_groups(h: Hierarchy | None, policy: Policy, job_id: int, step: str, job_mb: int | None,
               cpus: list[int] | None = None, deny: list[str] | None = None,
               step_mb: int | None = None, job_cpus: int | None = None) -> tuple[Group, Group] | None:
    """A job's cgroup (made with its memory limit when cgroup.conf constrains RAM; `job_mb`: its
    memory on this node; `cpus`: its CPUs here, under ConstrainCores; `deny`: the device files it may
    not open, under ConstrainDevices; `job_cpus`: how many CPUs it has here, for its process limit,
    SlurmletMaxTasksPerCPU) and its step's below it (`step_mb`: the step's own memory, srun --mem);
    None without cgroups, or when they cannot be made (logged: the job is then tracked by session)."""
    if h is None:
        return None
    only = None
    if h.kind == "v1":  # (cleaning up takes every hierarchy: h.group without `only`)
        only = {*V1_ALWAYS, *(("cpuset",) if cpus else ()), *(("devices",) if deny else ())}
    job, stepg = h.group(job_id, only=only), h.group(job_id, step, only=only)
    try:
        fresh = not job.exists()
        job.create(policy.memory_limit(job_mb), swap=policy.swap, cpus=cpus,
                   tasks=policy.tasks_limit(job_cpus) if fresh else None)
        if deny and fresh:  # once, when the job's group is made (v2 takes one device program a group)
            job.deny_devices(deny)
        stepg.create(policy.memory_limit(step_mb), swap=policy.swap)
    except OSError as e:
        log.warning("job %s: no cgroup (%s: %s); tracked by session", job_id, e.filename, e.strerror)
        return None
    return job, stepg


#: the bpf(2) system call's number (no libc wrapper), by machine
_SYS_BPF = {"x86_64": 321, "aarch64": 280, "ppc64le": 361, "s390x": 351, "riscv64": 280}


def _bpf_insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def _bpf_deny(cgroup_dir: str, rules: list[tuple[str, int, int]]) -> None:
    """Attach to a v2 cgroup a device program that refuses these (type, major, minor) devices and
    allows every other one (BPF_PROG_TYPE_CGROUP_DEVICE; its context is access_type (type in the low
    16 bits: 1 block, 2 char), major, minor). Once attached it stays with the cgroup, and its
    descendants cannot replace it. Raises OSError where the kernel refuses."""
    import ctypes
    nr = _SYS_BPF.get(os.uname().machine)
    if nr is None:
        raise OSError(95, f"no bpf system call number for {os.uname().machine}")
    ldxw, and32, jne, mov64, exit_ = 0x61, 0x54, 0x55, 0xb7, 0x95
    code = [_bpf_insn(ldxw, 2, 1, 0), _bpf_insn(and32, 2, 0, 0, 0xFFFF), _bpf_insn(ldxw, 3, 1, 4),
            _bpf_insn(ldxw, 4, 1, 8)]
    for kind, major, minor in rules:  # a match: refuse (r0 = 0); else on to the next rule
        code += [_bpf_insn(jne, 2, 0, 4, 2 if kind == "c" else 1), _bpf_insn(jne, 3, 0, 3, major),
                 _bpf_insn(jne, 4, 0, 2, minor), _bpf_insn(mov64, 0, 0, 0, 0), _bpf_insn(exit_)]
    code += [_bpf_insn(mov64, 0, 0, 0, 1), _bpf_insn(exit_)]
    libc = ctypes.CDLL(None, use_errno=True)
    prog, lic = ctypes.create_string_buffer(b"".join(code)), ctypes.create_string_buffer(b"GPL")
    # union bpf_attr for BPF_PROG_LOAD: prog_type, insn_cnt, insns, license, log_level, log_size, log_buf
    attr = ctypes.create_string_buffer(struct.pack("<IIQQIIQ", 15, len(code), ctypes.addressof(prog),
                                                   ctypes.addressof(lic), 0, 0, 0).ljust(128, b"\0"))
    fd = libc.syscall(nr, 5, attr, 128)
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    try:
        cfd = os.open(cgroup_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:  # BPF_PROG_ATTACH: target_fd, attach_bpf_fd, attach_type (BPF_CGROUP_DEVICE), flags
            attach = ctypes.create_string_buffer(struct.pack("<IIII", cfd, fd, 6, 0).ljust(128, b"\0"))
            if libc.syscall(nr, 8, attach, 128) < 0:
                e = ctypes.get_errno()
                raise OSError(e, os.strerror(e))
        finally:
            os.close(cfd)
    finally:
        os.close(fd)


def _oom_count(path: str) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in _read(path).splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
    return 0


def proc_state(pid: int) -> str | None:
    """A process's state letter (R, S, T, Z, ...) from /proc; None when it is gone."""
    try:
        stat = _read(f"/proc/{pid}/stat")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:][:1] or None
