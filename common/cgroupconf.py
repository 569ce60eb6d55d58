"""cgroup.conf's policy and the mounted cgroup hierarchy, as the node agents apply them and `slurmlet
up` checks them before it starts the agents (nothing here writes)."""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass

log = logging.getLogger("slurmlet.agent")

ROOT = "/sys/fs/cgroup"
#: v1 controllers the agent's part of the hierarchy has (those mounted): freezer first, so that a kill
#: freezes first
V1_CONTROLLERS = ("freezer", "memory", "cpuacct", "pids", "cpuset", "devices")


@dataclass(frozen=True)
class Policy:
    """What cgroup.conf has the agent enforce (Slurm's defaults: tracking only, no limits)."""

    ram: bool = False  #: ConstrainRAMSpace: the job's memory is a hard limit
    swap: bool = False  #: ConstrainSwapSpace: RAM plus swap too (no swapping past the limit)
    allowed_ram: float = 100.0  #: AllowedRAMSpace: the limit, in percent of the job's memory
    cores: bool = False  #: ConstrainCores: a job's tasks run on its own CPUs only (a cpuset)
    devices: bool = False  #: ConstrainDevices: a job opens only the GPU device files it was given
    #: SlurmletMaxTasksPerCPU (slurmlet's own key: Slurm has no process limit): a job's processes and
    #: threads on a node, per CPU it has there (its cgroup's pids.max); 0: no limit
    tasks_per_cpu: int = 0

    @classmethod
    def from_conf(cls, conf: dict[str, str]) -> Policy:
        def yes(key: str) -> bool:
            return str(conf.get(key, "no")).strip().lower() in ("yes", "true", "1")
        try:
            allowed = float(conf.get("AllowedRAMSpace", 100))
        except ValueError:
            log.warning("cgroup.conf: AllowedRAMSpace=%s is not a number: 100 taken", conf.get("AllowedRAMSpace"))
            allowed = 100.0
        try:
            tasks = max(0, int(conf.get("SlurmletMaxTasksPerCPU", 0)))
        except ValueError:
            log.warning("cgroup.conf: SlurmletMaxTasksPerCPU=%s is not a number: no limit",
                        conf.get("SlurmletMaxTasksPerCPU"))
            tasks = 0
        return cls(ram=yes("ConstrainRAMSpace"), swap=yes("ConstrainSwapSpace"), allowed_ram=allowed,
                   cores=yes("ConstrainCores"), devices=yes("ConstrainDevices"), tasks_per_cpu=tasks)

    @property
    def confines(self) -> bool:
        """Whether it limits anything a job may use (not only tracks it)."""
        return self.ram or self.cores or self.devices or self.tasks_per_cpu > 0

    def memory_limit(self, job_mb: int | None) -> int | None:
        """The job's limit in MB (None: none), from its memory on this node."""
        if not self.ram or not job_mb:
            return None
        return max(1, int(job_mb * self.allowed_ram / 100))

    def tasks_limit(self, job_cpus: int | None) -> int | None:
        """The job's most processes and threads on a node (None: no limit), from its CPUs there."""
        return self.tasks_per_cpu * max(1, job_cpus or 1) if self.tasks_per_cpu else None


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def mount_type(path: str) -> str | None:
    """The file system type mounted at `path` (followed where it is a link, as `cpuacct` is to a
    co-mounted `cpu,cpuacct`), from /proc/self/mounts."""
    path = os.path.realpath(path)
    with contextlib.suppress(OSError):
        for line in _read("/proc/self/mounts").splitlines():
            parts = line.split()
            if len(parts) > 2 and parts[1] == path:
                return parts[2]
    return None


def mounted(prefer: str | None = None) -> tuple[str, dict[str, str]] | str:
    """The layout to use ("v1" or "v2", `prefer` where given) and its roots by controller ("" for v2),
    or why there is none."""
    v2 = ROOT if mount_type(ROOT) == "cgroup2" else os.path.join(ROOT, "unified")
    v2_ok = mount_type(v2) == "cgroup2"
    v1_ok = all(mount_type(os.path.join(ROOT, c)) == "cgroup" for c in ("freezer", "memory"))
    v2_memory = v2_ok and "memory" in _read(os.path.join(v2, "cgroup.controllers")).split()
    kind = prefer or ("v2" if v2_ok and (v2_memory or not v1_ok) else "v1" if v1_ok else None)
    if kind == "v2" and v2_ok:
        return kind, {"": v2}
    if kind == "v1" and v1_ok:
        return kind, {c: os.path.realpath(os.path.join(ROOT, c)) for c in V1_CONTROLLERS
                      if mount_type(os.path.join(ROOT, c)) == "cgroup"}
    return "no cgroup hierarchy is mounted"


def unwritable(prefer: str | None = None) -> str | None:
    """Why agents started now could not put jobs in cgroups (None: they can): the check `slurmlet up`
    makes before it starts them, without writing anything."""
    if prefer == "none":
        return "SLURMLET_CGROUP=none"
    found = mounted(prefer)
    if isinstance(found, str):
        return found
    for root in found[1].values():
        path = os.path.join(root, "slurmlet")
        path = path if os.path.isdir(path) else root
        if not os.access(path, os.W_OK):
            return f"cannot write {path}" + ("" if os.geteuid() == 0 else " (not root)")
    return None
