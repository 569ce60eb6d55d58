"""`admit(submission, tree, active) -> Verdict`: the admission policy, beside `plan()`.

What slurmctld decides when a job is submitted, under AccountingStorageEnforce:

1. **Association.** The job's account is the one asked for, else the user's default account.
   With `associations` enforced, a (user, account, partition) without an association is refused
   (`Invalid account or account/partition combination specified`); without enforcement an
   unknown user or account is let through (account: the default or the user's name; QOS: normal).
2. **QOS.** The one asked for, else the association's default (inherited up the account tree),
   else `normal`. With `associations` or `qos` enforced it must exist and be allowed to the
   association (`Invalid qos specification`).
3. **Limits** (`limits` enforced). A job without a time limit gets its QOS's MaxWall, else its
   association's (inherited). Submit limits count the jobs already pending or running (an array
   counts task by task): the QOS's MaxSubmitJobsPerUser and GrpSubmitJobs, the association's
   MaxSubmitJobs (inherited) and every GrpSubmitJobs up the tree. Under a QOS with DenyOnLimit a
   job that could never start (past a per-job limit, or alone past the QOS's per-user or group
   TRES) is refused too. Each of these refusals is `Job violates accounting/QOS policy ...` after
   the limit's reason (`QOSMaxSubmitJobPerUserLimit`, ...), as sbatch prints them.

Pure: the tree (core/assoc.py) and the active-job counts by (account, user, QOS) are read by the
store in the submission's request; no database, clock or I/O here. Deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from . import limits as L
from .alloc import partition_misfit
from .assoc import Assoc, Qos, Tree
from .model import Node, Reason, Request

ERR_ACCOUNT = "Invalid account or account/partition combination specified"
ERR_QOS = "Invalid qos specification"
ERR_POLICY = "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"

#: the limits that count submitted jobs
SUBMIT_LIMITS = ("MaxSubmitJobsPerUser", "GrpSubmitJobs", "MaxSubmitJobs")


@dataclass(frozen=True, slots=True)
class Submission:
    user: str
    account: str | None
    partition: str
    qos: str | None
    enforce: frozenset[str]  #: AccountingStorageEnforce: associations, qos, limits
    time_limit: int | None  #: minutes; None: none asked for
    tres: Mapping[str, int] = field(default_factory=dict)  #: what one job asks for (cpu, mem, node, gres/gpu)
    bill: float = 0.0  #: its billing TRES
    n_jobs: int = 1  #: jobs this submission adds (an array's tasks, and those of the same batch before it)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Accepted with an account, QOS and time limit; or refused with Slurm's message (`error`),
    printed after `pre` (the limit's reason) when there is one."""

    account: str | None = None
    qos: str | None = None
    time_limit: int | None = None
    error: str | None = None
    pre: tuple[str, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.error is None


def needs_counts(t: Tree) -> bool:
    """Whether any submit limit exists: without one, admission needs no count of active jobs."""
    return any(a.limits.get(k) is not None for a in t.assocs for k in SUBMIT_LIMITS) or \
        any(q.limits.get(k) is not None for q in t.qos.values() for k in SUBMIT_LIMITS)


def admit(sub: Submission, t: Tree, active: Mapping[tuple[str, str, str], int]) -> Verdict:
    """The verdict on a submission; `active`: pending, running and suspended jobs by (account,
    user, QOS), needed only when `limits` is enforced and a submit limit exists (needs_counts)."""
    urow = t.users.get(sub.user)
    account = sub.account or (urow.default_account if urow is not None else None)
    a = t.user_assoc(sub.user, account, sub.partition) if account else None
    if "associations" in sub.enforce and a is None:
        return Verdict(error=ERR_ACCOUNT)
    if a is None:
        return Verdict(account or sub.user, sub.qos or "normal", sub.time_limit)
    qos = sub.qos or t.default_qos(a) or "normal"
    if ("associations" in sub.enforce or "qos" in sub.enforce) and (qos not in t.qos or qos not in t.allowed_qos(a)):
        return Verdict(error=ERR_QOS)
    time_limit = sub.time_limit
    if "limits" in sub.enforce:
        q = t.qos.get(qos)
        max_wall = q.limits.get("MaxWall") if q is not None else None
        if max_wall is None:
            max_wall = t.inherited(a, "MaxWall")
        if time_limit is None and max_wall is not None:
            time_limit = max_wall  # a job without --time gets the QOS's or association's MaxWall
        why = submit_limit(t, a, q, sub.user, sub.n_jobs, active)
        if why is not None:
            return Verdict(error=ERR_POLICY, pre=(why,))
        if q is not None and "DenyOnLimit" in q.flags:
            # refused outright what would otherwise wait: past a per-job limit, or a job that
            # alone goes past its QOS's per-user or group TRES limits
            reason = per_job_reason(t, a, q, dict(sub.tres), sub.bill, time_limit)
            for kind, key in (("MaxPerUser", "MaxTRESPerUser"), ("Grp", "GrpTRES")):
                for name, cap in (q.limits.get(key) or {}).items():
                    if reason is None and L.need(name, dict(sub.tres), sub.bill) > cap:
                        reason = L.reason("QOS", kind, name)
            if reason is not None:
                return Verdict(error=ERR_POLICY, pre=(reason.value,))
    return Verdict(account, qos, time_limit)


def submit_limit(t: Tree, a: Assoc, q: Qos | None, user: str, n: int,
                 active: Mapping[tuple[str, str, str], int]) -> str | None:
    """The first submit limit that `n` more jobs would pass (its reason), else None: the QOS's
    MaxSubmitJobsPerUser and GrpSubmitJobs, the association's MaxSubmitJobs, the GrpSubmitJobs up
    the tree; pending, running and suspended jobs count, arrays task by task."""
    #: (accounts, user, QOS, cap, reason): the jobs whose (account, user, QOS) key has an account in
    #: `accounts`, that user and that QOS (None: any) count against `cap`
    checks: list[tuple[set[str] | None, str | None, str | None, int, str]] = []
    if q is not None:
        if q.limits.get("MaxSubmitJobsPerUser") is not None:
            checks.append((None, user, q.name, q.limits["MaxSubmitJobsPerUser"], "QOSMaxSubmitJobPerUserLimit"))
        if q.limits.get("GrpSubmitJobs") is not None:
            checks.append((None, None, q.name, q.limits["GrpSubmitJobs"], "QOSGrpSubmitJobsLimit"))
    max_submit = t.inherited(a, "MaxSubmitJobs")
    if max_submit is not None:
        checks.append(({a.account}, user, None, max_submit, "AssocMaxSubmitJobLimit"))
    for x in t.chain(a):
        if x.limits.get("GrpSubmitJobs") is not None:
            if x.user:
                checks.append(({x.account}, x.user, None, x.limits["GrpSubmitJobs"], "AssocGrpSubmitJobsLimit"))
            else:
                checks.append((set(subtree(t, x.account)), None, None, x.limits["GrpSubmitJobs"],
                               "AssocGrpSubmitJobsLimit"))
    for accounts, who, qos, cap, why in checks:
        have = sum(count for (acct, u, qn), count in active.items()
                   if (accounts is None or acct in accounts) and (who is None or u == who)
                   and (qos is None or qn == qos))
        if have + n > cap:
            return why
    return None


def subtree(t: Tree, account: str) -> list[str]:
    """An account and every account below it."""
    out, todo = [], [account]
    while todo:
        name = todo.pop()
        out.append(name)
        todo.extend(n for n, r in t.accounts.items() if r.parent == name)
    return out


def per_job_reason(t: Tree, a: Assoc, q: Qos | None, tres: dict[str, int], bill: float,
                   time_limit: int | None) -> Reason | None:
    """Why a job can never start under its QOS's or association's per-job limits."""
    if q is not None:
        why = L.per_job_reason("QOS", q.limits.get("MaxTRESPerJob") or {}, q.limits.get("MaxWall"), tres,
                               time_limit, bill)
        if why is not None:
            return why
    return L.per_job_reason("Assoc", t.inherited(a, "MaxTRES") or {}, t.inherited(a, "MaxWall"), tres,
                            time_limit, bill)


#: Slurm's refusals under EnforcePartLimits=ALL|ANY|YES, in the order slurmctld checks
ERR_NODE_COUNT = "Node count specification invalid"
ERR_TIME_LIMIT = "Requested time limit is invalid (missing or exceeds some limit)"
ERR_PROCESSORS = "More processors requested than permitted"
ERR_NOT_AVAILABLE = "Requested node configuration is not available"


def partition_refusal(req: Request, time_limit: int | None, max_time: int | None, max_nodes: int | None,
                      members: list[Node], def_mem: int) -> str | None:
    """Why a submission beyond its partition's limits is refused at once when EnforcePartLimits is
    ALL, ANY or YES (with NO it pends with the partition-limit reason instead), None when it is within
    them: the node count (the partition's nodes, MaxNodes), the time limit (MaxTime), the CPUs, then
    whether it fits the partition's empty nodes at all."""
    why = partition_misfit(req, max_nodes, members, def_mem)
    if why == "nodes":
        return ERR_NODE_COUNT
    if max_time is not None and time_limit is not None and time_limit > max_time:
        return ERR_TIME_LIMIT
    return {"cpus": ERR_PROCESSORS, "fit": ERR_NOT_AVAILABLE}.get(why or "")
