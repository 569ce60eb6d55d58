"""Slurm's multifactor priority (priority/multifactor), as a pure function of a job and `now`.

    priority = site + W_age*age + W_fairshare*fairshare + W_jobsize*jobsize
               + W_partition*partition + W_qos*qos + W_assoc*assoc - nice      (floor 1; held = 0)

Each factor lies in [0, 1]. Fair-share is Slurm's classic 2^(-usage/shares); usage is an input
(the accounting work feeds real usage; without it every association has none, factor 1.0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Weights:
    age: int = 0
    fairshare: int = 0
    jobsize: int = 0
    partition: int = 0
    qos: int = 0
    assoc: int = 0
    max_age: float = 7 * 86400.0  #: PriorityMaxAge, seconds
    favor_small: bool = False  #: PriorityFavorSmall
    decay_half_life: float = 7 * 86400.0  #: PriorityDecayHalfLife, seconds (0: no decay)
    #: PriorityWeightTRES: (TRES, weight) pairs, e.g. (("cpu", 100), ("mem", 150))
    tres: tuple[tuple[str, int], ...] = ()

    @property
    def active(self) -> bool:
        return any((self.age, self.fairshare, self.jobsize, self.partition, self.qos, self.assoc, self.tres))


@dataclass(frozen=True, slots=True)
class Factors:
    """Each component already multiplied by its weight, as sprio shows them."""

    site: int = 0
    age: int = 0
    assoc: int = 0
    fairshare: int = 0
    jobsize: int = 0
    partition: int = 0
    qos: int = 0
    nice: int = 0
    #: the unrounded weighted sum: Slurm truncates it, while sprio shows each part rounded
    exact: float = 0.0
    #: PriorityWeightTRES parts: (TRES, weighted value) each, as sprio's TRES column shows them
    tres: tuple[tuple[str, float], ...] = ()

    def total(self) -> int:
        return max(1, int(self.exact - self.nice))


def factors(*, w: Weights, now: float, eligible: float | None, nodes: int, cpus: int, total_nodes: int,
            total_cpus: int, partition_factor: int, max_partition_factor: int, nice: int = 0,
            usage: float = 0.0, shares: float = 1.0, qos_factor: float = 0.0,
            fs_factor: float | None = None, job_tres: Mapping[str, float] | None = None,
            part_tres: Mapping[str, float] | None = None) -> Factors:
    age = 0.0
    if eligible is not None and w.max_age > 0:
        age = min(max(now - eligible, 0.0) / w.max_age, 1.0)
    node_part = nodes / total_nodes if total_nodes else 0.0
    cpu_part = cpus / total_cpus if total_cpus else 0.0
    size = min((node_part + cpu_part) / 2, 1.0)  # capped after averaging, as Slurm does
    if w.favor_small:
        size = 1.0 - size
    if fs_factor is not None:  # computed over the association tree (core.fairshare)
        fs = fs_factor
    else:
        fs = 2.0 ** (-usage / shares) if shares > 0 else 0.0
    part = partition_factor / max_partition_factor if max_partition_factor else 0.0
    parts = (w.age * age, w.fairshare * fs, w.jobsize * size, w.partition * part, w.qos * qos_factor)
    tres = tres_parts(w, job_tres or {}, part_tres or {})
    return Factors(age=round(parts[0]), fairshare=round(parts[1]), jobsize=round(parts[2]),
                   partition=round(parts[3]), qos=round(parts[4]), nice=nice,
                   exact=sum(parts) + sum((v for _, v in tres), 0.0), tres=tres)


def tres_parts(w: Weights, job: Mapping[str, float], partition: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
    """PriorityWeightTRES: each weighted TRES's part of what the job's partition has, times its weight."""
    out = []
    for name, weight in w.tres:
        total = partition.get(name, 0)
        out.append((name, weight * min(job.get(name, 0) / total, 1.0) if total else 0.0))
    return tuple(out)


def decayed(amount: float, age: float, half_life: float) -> float:
    """`amount` of usage recorded `age` seconds ago, after PriorityDecayHalfLife's decay."""
    if half_life <= 0 or age <= 0:
        return amount
    decay: float = 2.0 ** (-age / half_life)  # (typeshed: float ** float may be complex; not for a positive base)
    return amount * decay


def decayed_span(start: float, end: float, now: float, half_life: float) -> float:
    """Seconds of use from `start` to `end`, each decayed by PriorityDecayHalfLife from when it
    was used until `now` (the integral of 2^(-(now - t) / half_life) over the span)."""
    if end <= start:
        return 0.0
    if half_life <= 0:
        return end - start
    k = math.log(2) / half_life
    return (math.exp(-k * max(0.0, now - end)) - math.exp(-k * max(0.0, now - start))) / k


def fair_shares(usage: dict[str, float], shares: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Each association's (normalized usage, normalized shares) for the classic 2^(-U/S) factor.

    `usage`: decayed CPU-seconds per association; `shares`: raw shares (associations absent from
    `usage` have none). Both are normalized over all associations, as Slurm's flat tree does.
    """
    total_u = sum(usage.values())
    total_s = sum(shares.values())
    out = {}
    for name, raw in shares.items():
        u = usage.get(name, 0.0) / total_u if total_u > 0 else 0.0
        out[name] = (u, raw / total_s if total_s > 0 else 0.0)
    return out
