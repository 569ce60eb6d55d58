"""sreport's figures over a window (pure): CPU-seconds allocated to jobs, by user and account, against
what the cluster's CPUs could give while it existed. Slurm rolls these up hourly in slurmdbd; here they
are worked out from the job records when asked."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Used:
    """A job's (or an earlier run's) allocation: its CPUs from start to end (None: still running)."""

    user: str
    account: str
    cpus: int
    start: float
    end: float | None
    gpus: int = 0


@dataclass(slots=True)
class Utilization:
    start: float
    end: float
    total: float  #: CPU-seconds of every CPU over the whole window (percent of Reported is against it)
    reported: float = 0.0  #: CPU-seconds the cluster existed for in the window
    allocated: float = 0.0
    down: float = 0.0  #: not recorded here: 0
    planned_down: float = 0.0
    planned: float = 0.0  #: CPUs held back for pending jobs: not recorded here, 0
    by_user: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def idle(self) -> float:
        return max(0.0, self.reported - self.allocated - self.down - self.planned_down - self.planned)


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def utilization(used: Iterable[Used], cpus: int, created: float, start: float, end: float,
                now: float, tres: str = "cpu") -> Utilization:
    """The window [start, end): reported is `cpus` from the cluster's creation (or the window's start)
    until the window's end or now; each allocation counts its CPUs for its time within the window.
    `tres="gres/gpu"`: GPUs instead (`cpus` is then the cluster's GPUs), as `sreport -T gres/gpu`."""
    u = Utilization(start, end, total=cpus * (end - start))
    u.reported = cpus * overlap(start, end, created, now)
    for x in used:
        end_x = now if x.end is None else x.end
        secs = (x.gpus if tres == "gres/gpu" else x.cpus) * overlap(start, end, x.start, end_x)
        if secs > 0:
            u.allocated += secs
            key = (x.user, x.account)
            u.by_user[key] = u.by_user.get(key, 0.0) + secs
    u.allocated = min(u.allocated, u.reported) if u.reported else u.allocated
    return u


def top_users(u: Utilization, count: int = 10) -> list[tuple[str, str, float]]:
    """(user, account, CPU-seconds), most first (ties by name), at most `count`."""
    rows = sorted(((usr, acct, secs) for (usr, acct), secs in u.by_user.items()), key=lambda r: (-r[2], r[0], r[1]))
    return rows[:count]
