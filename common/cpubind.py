"""srun's --cpu-bind (with TaskPlugin=task/affinity): which CPUs each task of a step on a node is bound
to, the SLURM_CPU_BIND* variables its tasks get, and slurmstepd's `verbose` lines, as 22.05 does them
(tests/data/slurm-2205-cpubind.md). Pure functions: srun validates with `parse`, the agent lays out
with `plan` over the CPUs the step has on its node."""

from __future__ import annotations

from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

#: the types 22.05 accepts after the optional quiet/verbose, spelled as srun reads them
KINDS = ("none", "no", "rank", "map_cpu", "mask_cpu", "rank_ldom", "map_ldom", "mask_ldom", "sockets", "cores",
         "threads", "ldoms", "boards")


class CpuBindError(ValueError):
    """srun's refusal: its two lines (error, fatal) and exit status 1."""

    def __init__(self, value: str):
        super().__init__(f'unrecognized --cpu-bind argument "{value}"')
        self.lines = [f'srun: error: unrecognized --cpu-bind argument "{value}"',
                      "srun: fatal: Failed to parse --cpu-bind= values."]


@dataclass(frozen=True)
class Bind:
    verbose: bool = False
    kind: str = "default"  #: default (no type given), none, rank, map_cpu, mask_cpu, cores, ...
    values: tuple[str, ...] = field(default_factory=tuple)  #: map_cpu's CPU ids, mask_cpu's masks


#: the other spellings 22.05's srun takes for a word (case aside): q for quiet, v for verbose, a type
#: in the singular
ALIASES = {"q": "quiet", "v": "verbose", "socket": "sockets", "core": "cores", "thread": "threads",
           "ldom": "ldoms", "board": "boards"}
#: the types that carry a list (`TYPE:LIST` or `TYPE=LIST`), by each of their spellings
LISTS = {"map_cpu": "map_cpu", "mapcpu": "map_cpu", "mask_cpu": "mask_cpu", "maskcpu": "mask_cpu",
         "map_ldom": "map_ldom", "mapldom": "map_ldom", "mask_ldom": "mask_ldom", "maskldom": "mask_ldom"}


def parse(value: str | None) -> Bind:
    """`[quiet|verbose,]TYPE` as srun takes it (SLURM_CPU_BIND's own values included), in every
    spelling 22.05 takes (ALIASES, LISTS; `one_thread` is taken and changes nothing here)."""
    if not value:
        return Bind()
    verbose, kind = False, "default"
    values: tuple[str, ...] = ()
    for tok in value.split(","):
        low = tok.lower()
        low = ALIASES.get(low, low)
        cut = min((i for i in (tok.find(":"), tok.find("=")) if i >= 0), default=-1)
        if low in ("quiet", "verbose"):
            verbose = low == "verbose"
        elif low == "one_thread":
            pass
        elif low in KINDS:
            kind = "none" if low == "no" else low
        elif cut > 0 and tok[:cut].lower() in LISTS:
            rest = tok[cut + 1:]
            kind, values = LISTS[tok[:cut].lower()], tuple(rest.split(",")) if rest else ()
        elif kind in ("map_cpu", "mask_cpu") and tok:  # the rest of a map/mask list after its first comma
            values = (*values, tok)
        else:
            raise CpuBindError(value)
    if kind in ("map_cpu", "mask_cpu"):
        base = 10 if kind == "map_cpu" else 16
        try:
            if not values or any(int(v[2:] if base == 16 and v.lower().startswith("0x") else v, base) < 0
                                 for v in values):
                raise ValueError
        except ValueError:
            raise CpuBindError(value) from None
    return Bind(verbose, kind, values)


def _mask(cpus: list[int]) -> int:
    return sum(1 << c for c in set(cpus))


def _cpus(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def plan(bind: Bind, cpus: list[int], ntasks: int, cpus_per_task: int = 1
         ) -> tuple[Sequence[list[int] | None], dict[str, str]]:
    """Each of the node's `ntasks` tasks' CPUs (None: not bound) out of the step's `cpus` there, and
    the SLURM_CPU_BIND* variables every task of the node gets."""
    v = "verbose" if bind.verbose else "quiet"
    k = bind.kind
    if k == "none":
        return [None] * ntasks, _env(f"{v},none", "", "none", v)
    if k == "rank":
        return [[cpus[i % len(cpus)]] for i in range(ntasks)], _env(f"{v},rank", "", "rank", v)
    if k == "map_cpu":
        got = [[int(bind.values[i % len(bind.values)])] for i in range(ntasks)]
        listed = ",".join(bind.values)
        return got, _env(f"{v},map_cpu:{listed}", listed, "map_cpu:", v)
    if k == "mask_cpu":
        masks = [int(x[2:] if x.lower().startswith("0x") else x, 16) for x in bind.values]
        listed = ",".join(x[2:] if x.lower().startswith("0x") else x for x in bind.values)
        return [_cpus(masks[i % len(masks)]) for i in range(ntasks)], _env(f"{v},mask_cpu:{listed}", listed,
                                                                           "mask_cpu:", v)
    if k in ("cores", "threads"):  # a task's own CPUs; where there are too few, one each in turn
        if len(cpus) >= ntasks * cpus_per_task:
            got = [cpus[i * cpus_per_task:(i + 1) * cpus_per_task] for i in range(ntasks)]
        else:
            got = [[cpus[i % len(cpus)]] for i in range(ntasks)]
    elif k == "default":  # every task on all of the step's CPUs
        listed = f"0x{_mask(cpus):x}"
        return [list(cpus)] * ntasks, _env(f"{v},mask_cpu:{listed}", listed, "mask_cpu:", v)
    else:  # sockets, ldoms, boards and the ldom forms: one socket here, so all of the step's CPUs
        got = [list(cpus) for _ in range(ntasks)]
    listed = ",".join(f"0x{_mask(g):x}" for g in got)
    return got, _env(f"{v},mask_cpu:{listed}", listed, "mask_cpu:", v)


def _env(whole: str, listed: str, kind: str, verbose: str) -> dict[str, str]:
    return {"SLURM_CPU_BIND": whole, "SLURM_CPU_BIND_LIST": listed, "SLURM_CPU_BIND_TYPE": kind,
            "SLURM_CPU_BIND_VERBOSE": verbose}


def verbose_line(bind: Bind, node: str, rank: int, local_id: int, cpus: list[int] | None) -> str:
    """slurmstepd's line on a task's error output under `verbose` ("%s" for its pid)."""
    label = {"none": "NONE", "rank": "RANK", "map_cpu": "MAP"}.get(bind.kind, "MASK")
    if cpus is None:
        return f"cpu-bind={label:<4} - {node}, task {rank:2d} {local_id:2d} [%s]: mask 0x0"
    return f"cpu-bind={label:<4} - {node}, task {rank:2d} {local_id:2d} [%s]: mask 0x{_mask(cpus):x} set"
