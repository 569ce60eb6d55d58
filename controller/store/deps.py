"""Job dependencies (`sbatch -d`): parsing at submit, evaluation against the targets' states.

Pure functions over plain values; the store feeds them rows. Slurm's rules:

* `after:ID[+min]` holds once the target started (or ended without starting), plus `min` minutes;
* `afterany:ID` once the target ended, in whatever state;
* `afterok:ID` once it completed with exit code 0 (never, if it ended otherwise);
* `afternotok:ID` once it ended in a failed state (never, if it completed);
* `singleton` once no earlier job of the same user and name is still pending or running;
* a job array's id stands for all of its tasks (each must satisfy the item), `ID_TASK` for one;
* items joined by `,` must all hold (one that never can makes the job `DependencyNeverSatisfied`);
  joined by `?`, any one is enough (never, only when none can).

Satisfied items drop out of what `squeue %E` / `scontrol show job` show; the others carry
`(unfulfilled)` or `(failed)`, as Slurm prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from slurmlet.common.grammar import OptError, parse_dependency

ACTIVE = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING")
FAILED_STATES = ("FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
                 "DEADLINE")


@dataclass(frozen=True, slots=True)
class Item:
    kind: str  #: after, afterany, afterok, afternotok, aftercorr, afterburstbuffer, singleton
    target: int | None  #: job id (None for singleton)
    text: str  #: the target as given: "12", "12_3", "12+5"
    minutes: int = 0
    task: int | None = None  #: `12_3`: one task of array 12


@dataclass(frozen=True, slots=True)
class Dependency:
    items: tuple[Item, ...]
    any_of: bool


@dataclass(frozen=True, slots=True)
class Target:
    """What the evaluation needs to know of a target job."""

    state: str
    start_time: float | None
    end_time: float | None
    exit_code: int


def parse(spec: str) -> Dependency:
    """The controller's reading of `--dependency`; ValueError("Job dependency problem") if bad."""
    try:
        items, any_of = parse_dependency(spec)
    except OptError:
        raise ValueError("Job dependency problem") from None
    out = []
    for kind, targets in items:
        if kind == "singleton":
            out.append(Item("singleton", None, ""))
            continue
        for t in targets:
            base, _, mins = t.partition("+")
            head, _, task = base.partition("_")
            out.append(Item(kind, int(head), t, int(mins or 0), int(task) if task.isdigit() else None))
    return Dependency(tuple(out), any_of)


def item_status(it: Item, tgt: Target | None, now: float) -> str:
    """`ok` (holds), `wait` (may still hold) or `failed` (never will)."""
    if tgt is None:  # purged long ago: it ended, as far as anyone can tell
        return "ok" if it.kind in ("after", "afterany", "afterok") else "failed"
    ended = tgt.state not in ACTIVE
    if it.kind == "after":
        began = tgt.start_time if tgt.state != "PENDING" else None
        if began is None and not ended:
            return "wait"
        at = (began or tgt.end_time or now) + it.minutes * 60
        return "ok" if at <= now else "wait"
    if not ended:
        return "wait"
    if it.kind == "afterok":
        return "ok" if tgt.state == "COMPLETED" and tgt.exit_code == 0 else "failed"
    if it.kind == "afternotok":
        return "ok" if tgt.state in FAILED_STATES or tgt.state == "COMPLETED" and tgt.exit_code else "failed"
    return "ok"  # afterany, aftercorr, afterburstbuffer


def items_status(it: Item, tgts: list[Target], now: float) -> str:
    """An item naming several jobs (an array's tasks) holds when it holds for each of them."""
    if not tgts:
        return item_status(it, None, now)
    got = [item_status(it, t, now) for t in tgts]
    return "failed" if "failed" in got else "wait" if "wait" in got else "ok"


def evaluate(dep: Dependency, lookup: Callable[[Item], list[Target]], singleton_blocked: bool,
             now: float) -> tuple[str, str | None, float | None]:
    """(`ok` | `wait` | `never`, what %E shows (None when nothing is left), when an `after+min`
    item will hold, if that is all it waits for)."""
    shown: list[str] = []
    states = []
    wake: float | None = None
    for it in dep.items:
        if it.kind == "singleton":
            st = "wait" if singleton_blocked else "ok"
            if st != "ok":
                shown.append("singleton(unfulfilled)")
        else:
            tgts = lookup(it)
            st = items_status(it, tgts, now)
            if st == "wait" and it.kind == "after" and it.minutes:
                began = [t.start_time for t in tgts if t.state != "PENDING" and t.start_time]
                if began and len(began) == len(tgts):
                    at = max(began) + it.minutes * 60
                    wake = at if wake is None else min(wake, at)
            if st != "ok":
                shown.append(f"{it.kind}:{it.text}({'failed' if st == 'failed' else 'unfulfilled'})")
        states.append(st)
    if dep.any_of:
        verdict = "ok" if "ok" in states else "never" if all(s == "failed" for s in states) else "wait"
    else:
        verdict = "never" if "failed" in states else "wait" if "wait" in states else "ok"
    if verdict == "ok":
        return verdict, None, None
    return verdict, ("?" if dep.any_of else ",").join(shown) or None, wake
