"""The accounting database: clusters, accounts, users, associations and QOS (sacctmgr's world),
and what the controller derives from it: who may submit where (AccountingStorageEnforce), the
running limits each job charges, and the fair-share tree.

Reads go through `Tree`, an in-memory copy rebuilt after every write (the controller is the only
writer), so a submission or a scheduling cycle costs no accounting queries.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from typing import Any

from sqlalchemy import Engine, delete, func, insert, select, update

from slurmlet.controller.core import limits as L
from slurmlet.controller.core.admit import Submission, admit, needs_counts, subtree
from slurmlet.controller.core.assoc import Assoc, Qos, Tree
from slurmlet.controller.core.model import Reason
from slurmlet.controller.errors import InvalidRequest

from .guard import data_version
from .tables import accounts as A
from .tables import assocs as AS
from .tables import clusters as CL
from .tables import jobs as J
from .tables import qos as Q
from .tables import users as U

ADMIN_LEVELS = ("None", "Operator", "Administrator")
QOS_FLAGS = ("DenyOnLimit", "NoDecay", "OverPartQOS", "PartitionMaxNodes", "PartitionMinNodes",
             "PartitionTimeLimit", "RequiresReservation", "NoReserve", "EnforceUsageThreshold", "UsageFactorSafe")
PREEMPT_MODES = ("cluster", "cancel", "requeue", "suspend", "off")

#: job submission refusals, as slurmctld words them


class AcctError(InvalidRequest):
    """A sacctmgr request that cannot be carried out."""


def enforce_flags(config: Any) -> set[str]:
    """AccountingStorageEnforce as a set; `limits`, `qos` and `safe` imply `associations`."""
    words = {w.strip().lower() for w in config.raw_value("accountingstorageenforce", "").split(",") if w.strip()}
    if words & {"limits", "qos", "safe"}:
        words.add("associations")
    if "safe" in words:
        words.add("limits")
    return words


def _json(v: Any) -> dict:
    return json.loads(v) if v else {}


class AccountStore:
    """Reads and writes of the accounting tables."""

    def __init__(self, engine: Engine, cluster: str):
        self.engine = engine
        self.cluster = cluster
        self._tree: Tree | None = None
        self._mark: tuple[int, int] | None = None  #: the data_version the tree was read at
        self.version = 0  #: bumped by every change of the tree: caches derived from it compare it

    # ---------------------------------------------------------------- set-up
    def ensure_defaults(self, now: float) -> None:
        """What slurmdbd has once a cluster is added: the cluster, account root, user root
        (Administrator) in it, and QOS normal."""
        with self.engine.begin() as c:
            if c.execute(select(func.count()).select_from(CL).where(CL.c.name == self.cluster)).scalar() == 0:
                c.execute(insert(CL).values(name=self.cluster, created=now))
            if c.execute(select(func.count()).select_from(A).where(A.c.name == "root")).scalar() == 0:
                c.execute(insert(A).values(name="root", parent=None, description="default root account",
                                           organization="root", created=now))
                c.execute(insert(AS).values(account="root", user="", partition="", shares=1, limits="{}",
                                            created=now))
            if c.execute(select(func.count()).select_from(U).where(U.c.name == "root")).scalar() == 0:
                c.execute(insert(U).values(name="root", default_account="root", admin_level="Administrator",
                                           created=now))
                c.execute(insert(AS).values(account="root", user="root", partition="", shares=1, limits="{}",
                                            created=now))
            if c.execute(select(func.count()).select_from(Q).where(Q.c.name == "normal")).scalar() == 0:
                c.execute(insert(Q).values(name="normal", description="Normal QOS default", priority=0,
                                           preempt="", preempt_mode="cluster", grace_time=0, flags="",
                                           usage_factor=1.0, limits="{}", created=now))
        self._changed()

    def _changed(self) -> None:
        self._tree = None
        self.version += 1

    def tree(self) -> Tree:
        """The accounting tables in memory: kept while nothing was written to them here and no other
        process wrote to the database (SQLite's data_version; on PostgreSQL they are read each time, the
        tree given again while they are unchanged)."""
        with self.engine.connect() as c:
            mark = data_version(c)
            kept = self._tree
            if kept is not None and mark is not None and mark == self._mark:
                return kept
            version = self.version
            assocs = [Assoc(r.id, r.account, r.user, r.partition, r.shares, r.priority,
                            [q for q in r.qos.split(",") if q] if r.qos is not None else None,
                            r.default_qos, _json(r.limits)) for r in c.execute(select(AS).order_by(AS.c.id))]
            qos = {r.name: Qos(r.id, r.name, r.description, r.priority, [p for p in r.preempt.split(",") if p],
                               r.preempt_mode, r.preempt_exempt_time, r.grace_time,
                               [f for f in r.flags.split(",") if f], r.usage_factor, _json(r.limits))
                   for r in c.execute(select(Q).order_by(Q.c.id))}
            t = Tree(clusters=[r.name for r in c.execute(select(CL.c.name).order_by(CL.c.name))],
                     accounts={r.name: r for r in c.execute(select(A))},
                     users={r.name: r for r in c.execute(select(U))}, assocs=assocs, qos=qos)
        if self.version != version:  # (not kept when a write came meanwhile: this read may predate it)
            return t
        if kept is not None and t == kept:
            t = kept  # (unchanged: what was worked out from it holds)
        elif kept is not None:  # another process changed it
            self.version += 1
        self._tree, self._mark = t, mark
        return t

    # ---------------------------------------------------------------- admission
    def admit(self, *, user: str, account: str | None, partition: str, qos: str | None, enforce: set[str],
              time_limit: int | None, tres: dict[str, int], bill: float, n_jobs: int = 1) -> tuple[str, str, int | None]:
        """The account, QOS and time limit a submission gets (core/admit.py decides on the in-memory
        tree and, when submit limits apply, the counts of active jobs), or a refusal with Slurm's message."""
        t = self.tree()
        active = self._active_counts() if "limits" in enforce and needs_counts(t) else {}
        v = admit(Submission(user=user, account=account, partition=partition, qos=qos, enforce=frozenset(enforce),
                             time_limit=time_limit, tres=tres, bill=bill, n_jobs=n_jobs), t, active)
        if v.error is not None:
            raise InvalidRequest(v.error, pre=list(v.pre))
        assert v.account is not None and v.qos is not None  # (admitted: both are decided)
        return v.account, v.qos, v.time_limit

    def _active_counts(self) -> dict[tuple[str, str, str], int]:
        """Pending, running and suspended jobs by (account, user, QOS): what submit limits count."""
        with self.engine.connect() as c:
            rows = c.execute(select(J.c.account, J.c.user, J.c.qos, func.count()).where(
                J.c.state.in_(("PENDING", "RUNNING", "SUSPENDED"))).group_by(J.c.account, J.c.user, J.c.qos))
            return {(r[0], r[1], r[2]): r[3] for r in rows}

    # ---------------------------------------------------------------- running limits
    def job_limits(self, t: Tree, *, user: str, account: str, partition: str, qos: str
                   ) -> tuple[list[tuple[str, str, int, Reason]], Assoc | None, Qos | None]:
        """The counters a job of (user, account, partition, qos) charges while it runs:
        (key, tres, cap, reason) each."""
        a = t.user_assoc(user, account, partition)
        q = t.qos.get(qos)
        out: list[tuple[str, str, int, Reason]] = []
        if q is not None:
            ql = q.limits
            if ql.get("GrpJobs") is not None:
                out.append((f"q/{q.name}/jobs", "jobs", ql["GrpJobs"], L.reason("QOS", "Grp", "jobs")))
            for tres, cap in (ql.get("GrpTRES") or {}).items():
                out.append((f"q/{q.name}/{tres}", tres, cap, L.reason("QOS", "Grp", tres)))
            if ql.get("MaxJobsPerUser") is not None:
                out.append((f"q/{q.name}/u/{user}/jobs", "jobs", ql["MaxJobsPerUser"],
                            L.reason("QOS", "MaxPerUser", "jobs")))
            for tres, cap in (ql.get("MaxTRESPerUser") or {}).items():
                out.append((f"q/{q.name}/u/{user}/{tres}", tres, cap, L.reason("QOS", "MaxPerUser", tres)))
        if a is not None:
            max_jobs = t.inherited(a, "MaxJobs")
            if max_jobs is not None:
                out.append((f"a/{a.id}/max/jobs", "jobs", max_jobs, L.reason("Assoc", "MaxPerUser", "jobs")))
            for x in t.chain(a):
                if x.limits.get("GrpJobs") is not None:
                    out.append((f"a/{x.id}/jobs", "jobs", x.limits["GrpJobs"], L.reason("Assoc", "Grp", "jobs")))
                for tres, cap in (x.limits.get("GrpTRES") or {}).items():
                    out.append((f"a/{x.id}/{tres}", tres, cap, L.reason("Assoc", "Grp", tres)))
        return out, a, q

    # ---------------------------------------------------------------- sacctmgr: writes
    @contextlib.contextmanager
    def _txn(self, commit: bool):  # noqa: ANN202 - a connection in a transaction
        """A transaction that is committed, or rolled back when this is a dry run (sacctmgr asks
        before it commits); the cached tree is dropped after a commit."""
        with self.engine.connect() as c:
            tx = c.begin()
            try:
                yield c
            except BaseException:
                tx.rollback()
                raise
            if commit:
                tx.commit()
                self._changed()
            else:
                tx.rollback()

    def add(self, entity: str, names: list[str], opts: dict[str, str], now: float, commit: bool = True) -> list[str]:
        """sacctmgr add ENTITY NAMES opts; returns sacctmgr's report of what was added (empty:
        nothing new)."""
        t = self.tree()
        _KNOWN_QOS.set(list(t.qos))
        cl = self.cluster
        out: list[str] = []
        with self._txn(commit) as c:
            if entity == "cluster":
                new = [n for n in names if n not in t.clusters]
                for n in new:
                    c.execute(insert(CL).values(name=n, created=now))
                if new:
                    out = [" Adding Cluster(s)"] + [f"  Name           = {n}" for n in new]
            elif entity == "account":
                given = dict(opts)
                parent = opts.pop("parent", "root")
                if parent not in t.accounts:
                    raise AcctError(f" Parent account '{parent}' doesn't exist on cluster {cl}\n"
                                    "        Contact your admin to add this account.\n No associations created.")
                a_vals, limits = _assoc_values(opts, "account")
                desc = (opts.pop("description", None) or "").lower() or None
                org = (opts.pop("organization", None) or "").lower() or None
                _no_more(opts)
                new = [n for n in dict.fromkeys(names) if n not in t.accounts]
                for n in new:
                    c.execute(insert(A).values(name=n, parent=parent, description=desc or n,
                                               organization=org or (parent if parent != "root" else n), created=now))
                    c.execute(insert(AS).values(account=n, user="", partition="", created=now,
                                                limits=json.dumps(limits), **_defaults(a_vals)))
                if new:
                    out = [" Adding Account(s)"] + [f"  {n}" for n in new]
                    out += [" Settings", f"  Description     = {desc or 'Account Name'}",
                            f"  Organization    = {org or 'Parent/Account Name'}", " Associations"]
                    out += [f"  A = {n:<10} C = {cl:<10}" for n in new]
                    if given:
                        out.append(" Settings")
                        if "shares" in a_vals:
                            out.append(f"  Fairshare     = {a_vals['shares']}")
                        out.append(f"  Parent        = {parent}")
            elif entity == "user":
                accts = _split(opts.pop("account", None)) or []
                default = opts.pop("defaultaccount", None)
                parts = _split(opts.pop("partition", None)) or [""]
                level = opts.pop("adminlevel", None)
                if level is not None:
                    level = _admin_level(level)
                a_vals, limits = _assoc_values(opts, "user")
                _no_more(opts)
                if not accts and default:
                    accts = [default]
                if not accts:
                    raise AcctError(" Need name of account to add user to.")
                for acct in accts:
                    if acct not in t.accounts:
                        raise AcctError(f" This account '{acct}' doesn't exist.\n"
                                        "        Contact your admin to add this account.\n"
                                        " No associations or wckeys created.")
                new_users, assoc_lines = [], []
                for n in dict.fromkeys(names):
                    if n not in t.users:
                        c.execute(insert(U).values(name=n, default_account=default or accts[0],
                                                   admin_level=level or "None", created=now))
                        new_users.append(n)
                    for acct in accts:
                        for part in parts:
                            if (acct, n, part) in t.by_key:
                                continue
                            c.execute(insert(AS).values(account=acct, user=n, partition=part, created=now,
                                                        limits=json.dumps(limits), **_defaults(a_vals)))
                            assoc_lines.append(f"  U = {n:<9} A = {acct:<10} C = {cl:<10}"
                                               + (f" P = {part:<10}" if part else ""))
                if new_users or assoc_lines:
                    if new_users:
                        out = [" Adding User(s)"] + [f"  {n}" for n in new_users]
                    settings = ([f"  Default Account = {default}"] if default else []) + (
                        [f"  Admin Level     = {level}"] if level else [])
                    if settings and new_users:
                        out += [" Settings ="] + settings
                    out += [" Associations ="] + assoc_lines + [" Non Default Settings"]
                    out += _setting_lines({**{k: v for k, v in a_vals.items() if k != "qos"}, **limits})
            elif entity == "qos":
                vals, limits = _qos_values(opts, t)
                _no_more(opts)
                new = [n for n in dict.fromkeys(names) if n not in t.qos]
                for n in new:
                    c.execute(insert(Q).values(name=n, created=now, limits=json.dumps(limits),
                                               **{"description": n, "priority": 0, "preempt": "",
                                                  "preempt_mode": "cluster", "grace_time": 0, "flags": "",
                                                  "usage_factor": 1.0, **vals}))
                if new:
                    out = [" Adding QOS(s)"] + [f"  {n}" for n in new] + [" Settings",
                                                                          f"  Description    = {vals.get('description', new[0])}"]
                    out += _setting_lines({**{k: v for k, v in vals.items() if k != "description"}, **limits})
            else:
                raise AcctError("No valid entity in add command\n"
                                "Input line must include \"Account\", \"Cluster\", \"QOS\", or \"User\"")
        return out

    def modify(self, entity: str, where: dict[str, str], sets: dict[str, str], commit: bool = True) -> list[str]:
        """sacctmgr modify ENTITY where ... set ...; returns what changed."""
        t = self.tree()
        _KNOWN_QOS.set(list(t.qos))
        changed: list[str] = []
        with self._txn(commit) as c:
            if entity == "qos":
                names = _split(where.pop("name", "")) or []
                _no_more(where)
                vals, limits = _qos_values(sets, t, modify=True)
                _no_more(sets)
                for n in names:
                    q = t.qos.get(n)
                    if q is None:
                        continue
                    new_limits = _merge(q.limits, limits)
                    v = dict(vals)
                    for k in ("preempt",):  # Preempt+=x / Preempt-=x
                        if k in v and isinstance(v[k], tuple):
                            op, items = v[k]
                            cur = list(q.preempt)
                            cur = cur + [i for i in items if i not in cur] if op == "+" else [i for i in cur if i not in items]
                            v[k] = ",".join(cur)
                    c.execute(update(Q).where(Q.c.id == q.id).values(limits=json.dumps(new_limits), **v))
                    changed.append(f"  {n}")
                if changed:
                    changed.insert(0, " Modified qos...")
            elif entity in ("account", "user"):
                user_lines: list[str] = []
                assoc_lines: list[str] = []
                names = _split(where.pop("name", "")) or []
                accts = _split(where.pop("account")) if entity == "user" and "account" in where else None
                parts = _split(where.pop("partition", "")) if "partition" in where else None
                _no_more(where)
                level = sets.pop("adminlevel", None)
                default = sets.pop("defaultaccount", None)
                desc = sets.pop("description", None)
                org = sets.pop("organization", None)
                parent = sets.pop("parent", None)
                a_vals, limits = _assoc_values(sets, entity, modify=True)
                _no_more(sets)
                for n in names:
                    if entity == "user":
                        urow = t.users.get(n)
                        if urow is None:
                            continue
                        uvals = {}
                        if level is not None:
                            uvals["admin_level"] = _admin_level(level)
                        if default is not None:
                            if not any(a.account == default and a.user == n for a in t.assocs):
                                raise AcctError(" Can't modify because these users aren't associated with new "
                                                f"default account '{default}'...\n  U = {n} C = {self.cluster}",
                                                code=1)
                            uvals["default_account"] = default
                        if uvals:
                            c.execute(update(U).where(U.c.name == n).values(**uvals))
                            user_lines.append(f"  {n}")
                        targets = [a for a in t.assocs if a.user == n and (accts is None or a.account in accts)
                                   and (parts is None or a.partition in parts)]
                    else:
                        if n not in t.accounts:
                            continue
                        avals = {}
                        if desc is not None:
                            avals["description"] = desc
                        if org is not None:
                            avals["organization"] = org
                        if parent is not None:
                            if parent not in t.accounts or n in subtree(t, parent) or parent in subtree(t, n):
                                raise AcctError(f" Parent account '{parent}' doesn't exist or would make a loop.")
                            avals["parent"] = parent
                        if avals:
                            c.execute(update(A).where(A.c.name == n).values(**avals))
                            user_lines.append(f"  {n}")
                        targets = [a for a in t.assocs if a.account == n and not a.user]
                    if a_vals or limits:
                        for a in targets:
                            v = dict(a_vals)
                            if "qos" in v and isinstance(v["qos"], tuple):
                                op, items = v["qos"]
                                cur = list(t.allowed_qos(a))
                                cur = cur + [i for i in items if i not in cur] if op == "+" else [i for i in cur if i not in items]
                                v["qos"] = ",".join(cur)
                            c.execute(update(AS).where(AS.c.id == a.id).values(
                                limits=json.dumps(_merge(a.limits, limits)), **v))
                            if a.user:
                                label = f"  C = {self.cluster:<10} A = {a.account:<20} U = {a.user:<9}"
                            else:
                                label = f"  C = {self.cluster:<10} A = {a.account} of {t.accounts[a.account].parent}"
                            if label not in assoc_lines:
                                assoc_lines.append(label)
                if user_lines:
                    changed += [f" Modified {entity}s..."] + user_lines
                if assoc_lines:
                    changed += [f" Modified {entity} associations..."] + assoc_lines
            else:
                raise AcctError(f"Unknown entity '{entity}'")
        return changed

    def delete(self, entity: str, where: dict[str, str], commit: bool = True) -> list[str]:
        """sacctmgr delete ENTITY where ...; returns what was deleted. Refused while jobs of it run."""
        t = self.tree()
        names = _split(where.pop("name", "")) or []
        accts = _split(where.pop("account", "")) if "account" in where else None
        _no_more(where)
        gone: list[str] = []
        with self._txn(commit) as c:
            def busy(cond: Any) -> bool:
                return bool(c.execute(select(func.count()).select_from(J).where(
                    cond, J.c.state.in_(("RUNNING", "SUSPENDED", "PENDING")))).scalar())
            if entity == "qos":
                for n in names:
                    if n not in t.qos:
                        continue
                    if busy(J.c.qos == n):
                        raise AcctError("Job(s) active, cancel job(s) before remove")
                    c.execute(delete(Q).where(Q.c.name == n))
                    gone.append(n)
            elif entity == "account":
                for n in names:
                    if n not in t.accounts or n == "root":
                        continue
                    sub = subtree(t, n)
                    if busy(J.c.account.in_(sub)):
                        raise AcctError("Job(s) active, cancel job(s) before remove")
                    c.execute(delete(AS).where(AS.c.account.in_(sub)))
                    c.execute(delete(A).where(A.c.name.in_(sub)))
                    gone.append(n)
            elif entity == "user":
                for n in names:
                    if n not in t.users:
                        continue
                    cond = J.c.user == n if accts is None else (J.c.user == n) & J.c.account.in_(accts)
                    if busy(cond):
                        raise AcctError("Job(s) active, cancel job(s) before remove")
                    q = delete(AS).where(AS.c.user == n)
                    if accts is not None:
                        q = q.where(AS.c.account.in_(accts))
                    c.execute(q)
                    left = c.execute(select(AS.c.account).where(AS.c.user == n)).first()
                    if left is None:
                        c.execute(delete(U).where(U.c.name == n))
                    elif accts is not None and t.users[n].default_account in accts:
                        c.execute(update(U).where(U.c.name == n).values(default_account=left.account))
                    gone.append(n)
            elif entity == "cluster":
                for n in names:
                    if n in t.clusters and n != self.cluster:
                        c.execute(delete(CL).where(CL.c.name == n))
                        gone.append(n)
            else:
                raise AcctError(f"Unknown entity '{entity}'")
        if gone:
            head = {"qos": " Deleting QOS(s)...", "account": " Deleting accounts...", "user": " Deleting users...",
                    "cluster": " Deleting clusters..."}[entity]
            return [head] + [f"  {n}" for n in gone]
        return gone


#: how sacctmgr names the settings it reports after an add
_SETTING_NAMES = {"shares": "Fairshare", "priority": "Priority", "preempt": "Preempt", "preempt_mode": "PreemptMode",
                  "flags": "Flags", "grace_time": "GraceTime", "usage_factor": "UsageFactor",
                  "preempt_exempt_time": "PreemptExemptTime", "default_qos": "DefaultQOS"}


def _setting_lines(values: dict) -> list[str]:
    """`  Name                     = value` lines, by name (sacctmgr's own spacing, quirks included)."""
    lines = []
    for key, v in values.items():
        name = _SETTING_NAMES.get(key, key)
        if isinstance(v, dict):
            v = L.tres_text(v)
        elif name == "MaxWall":
            d, rest = divmod(int(v), 1440)
            v = (f"{d}-" if d else "") + f"{rest // 60:02d}:{rest % 60:02d}:00"
        elif name == "PreemptMode":
            v = str(v).upper()
        elif name in ("GraceTime", "PreemptExemptTime"):
            v = f"{int(v) // 3600:02d}:{int(v) % 3600 // 60:02d}:{int(v) % 60:02d}"
        lines.append((name, f"  {name} = {v}" if name == "MaxJobsPerUser" else f"  {name:<25}= {v}"))
    return [text for _, text in sorted(lines)]


# ---------------------------------------------------------------- option parsing (sacctmgr's keys)
_ASSOC_LIMIT_KEYS = {
    "grptres": ("GrpTRES", "tres"), "grpjobs": ("GrpJobs", "int"), "grpsubmitjobs": ("GrpSubmitJobs", "int"),
    "grpsubmit": ("GrpSubmitJobs", "int"), "maxjobs": ("MaxJobs", "int"), "maxsubmitjobs": ("MaxSubmitJobs", "int"),
    "maxsubmit": ("MaxSubmitJobs", "int"), "maxtres": ("MaxTRES", "tres"), "maxtresperjob": ("MaxTRES", "tres"),
    "maxwall": ("MaxWall", "wall"), "maxwalldurationperjob": ("MaxWall", "wall"),
}
_QOS_LIMIT_KEYS = {
    "grptres": ("GrpTRES", "tres"), "grpjobs": ("GrpJobs", "int"), "grpsubmitjobs": ("GrpSubmitJobs", "int"),
    "grpsubmit": ("GrpSubmitJobs", "int"), "maxtresperjob": ("MaxTRESPerJob", "tres"),
    "maxtres": ("MaxTRESPerJob", "tres"), "maxtresperuser": ("MaxTRESPerUser", "tres"),
    "maxtrespu": ("MaxTRESPerUser", "tres"), "maxjobsperuser": ("MaxJobsPerUser", "int"),
    "maxjobspu": ("MaxJobsPerUser", "int"), "maxsubmitjobsperuser": ("MaxSubmitJobsPerUser", "int"),
    "maxsubmitpu": ("MaxSubmitJobsPerUser", "int"), "maxwall": ("MaxWall", "wall"),
    "maxwalldurationperjob": ("MaxWall", "wall"),
}
_CLEAR = object()  #: a limit set to -1: removed
#: the QOS names that exist, while a request is checked (QOS= and DefaultQOS= must name them)
_KNOWN_QOS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("known_qos", default=None)


def _split(v: str | None) -> list[str] | None:
    if v is None:
        return None
    return [x.strip() for x in v.split(",") if x.strip()]


def _no_more(opts: dict[str, str]) -> None:
    for k in opts:
        raise AcctError(f" Unknown option: {k}={opts[k]}\n Use keyword 'where' to modify condition")


def _admin_level(v: str) -> str:
    for lvl in ADMIN_LEVELS:
        if lvl.lower().startswith(v.strip().lower()[:3]) and v.strip():
            return lvl
    raise AcctError(f"Invalid AdminLevel '{v}': expected None, Operator or Administrator")


def _limit_value(key: str, kind: str, v: str, modify: bool) -> Any:
    from slurmlet.controller.config import ConfigError, parse_time_minutes
    if kind == "int":
        try:
            n = int(v)
        except ValueError:
            raise AcctError(f" Bad {key} value: {v}") from None
        if n == -1:
            return _CLEAR
        if n < 0:
            raise AcctError(f" Bad {key} value: {v}")
        return n
    if kind == "wall":
        if v.strip() == "-1":
            return _CLEAR
        try:
            m = parse_time_minutes(v, key)
        except ConfigError:
            raise AcctError(f" Bad {key} time format: {key}={v}") from None
        return _CLEAR if m is None else m
    try:
        tres = L.parse_tres(v, allow_clear=True)
    except L.TresError as e:
        raise AcctError(f" Bad {key} value: {v}: {e}") from None
    return tres


def _limits(opts: dict[str, str], table: dict, modify: bool) -> dict:
    out: dict = {}
    for k in list(opts):
        if k in table:
            key, kind = table[k]
            out[key] = _limit_value(key, kind, opts.pop(k), modify)
    return out


def _merge(cur: dict, new: dict) -> dict:
    out = dict(cur)
    for k, v in new.items():
        if v is _CLEAR:
            out.pop(k, None)
        elif isinstance(v, dict):
            merged = dict(out.get(k) or {})
            for tk, tv in v.items():
                if tv == -1:
                    merged.pop(tk, None)
                else:
                    merged[tk] = tv
            if merged:
                out[k] = merged
            else:
                out.pop(k, None)
        else:
            out[k] = v
    return out


def _clean(limits: dict) -> dict:
    return {k: ({tk: tv for tk, tv in v.items() if tv != -1} if isinstance(v, dict) else v)
            for k, v in limits.items() if v is not _CLEAR}


def _assoc_values(opts: dict[str, str], entity: str, modify: bool = False) -> tuple[dict, dict]:
    vals: dict = {}
    for k in ("fairshare", "share", "shares"):
        if k in opts:
            v = opts.pop(k)
            try:
                vals["shares"] = int(v) if v.lower() != "parent" else 0
            except ValueError:
                raise AcctError(f" Bad Fairshare value: {v}") from None
            if vals["shares"] < 0:
                raise AcctError(f" Bad Fairshare value: {v}")
    if "priority" in opts:
        v = opts.pop("priority")
        vals["priority"] = _number(v, int, "Priority") if v != "-1" else None
    for k in ("qos", "qoslevel"):
        for op in ("+", "-", ""):
            kk = k + op
            if kk in opts:
                items = _split(opts.pop(kk)) or []
                known = _KNOWN_QOS.get()
                for i in items:
                    if known is not None and i not in known:
                        raise AcctError(f"sacctmgr: error: You gave a bad qos '{i}'. Valid QOS's are "
                                        f"{','.join(known)}\n Unknown option: {kk}={','.join(items)}\n"
                                        " Use keyword 'where' to modify condition")
                vals["qos"] = (op, items) if op and modify else ",".join(items)
    if "defaultqos" in opts:
        v = opts.pop("defaultqos")
        vals["default_qos"] = v if v != "-1" else None
    limits = _limits(opts, _ASSOC_LIMIT_KEYS, modify)
    return vals, (limits if modify else _clean(limits))


def _defaults(vals: dict) -> dict:
    out = {"shares": 1}
    out.update({k: v for k, v in vals.items() if not isinstance(v, tuple)})
    return out


def _number(v: str, cast: type, key: str) -> Any:
    try:
        return cast(v)
    except ValueError:
        raise AcctError(f" Bad {key} value: {v}") from None


def _qos_values(opts: dict[str, str], t: Tree, modify: bool = False) -> tuple[dict, dict]:
    from slurmlet.controller.config import ConfigError, parse_time_seconds
    vals: dict = {}
    if "description" in opts:
        vals["description"] = opts.pop("description")
    if "priority" in opts:
        vals["priority"] = _number(opts.pop("priority"), int, "Priority")
    for op in ("+", "-", ""):
        if "preempt" + op in opts:
            items = _split(opts.pop("preempt" + op)) or []
            for i in items:
                if i not in t.qos:
                    raise AcctError(f"sacctmgr: error: You gave a bad qos '{i}'. Valid QOS's are "
                                    f"{','.join(t.qos)}")
            vals["preempt"] = (op, items) if op and modify else ",".join(items)
    if "preemptmode" in opts:
        v = opts.pop("preemptmode").lower()
        if v.replace(",gang", "") not in PREEMPT_MODES:
            raise AcctError(f" Unknown preempt mode given '{v}'")
        vals["preempt_mode"] = v.replace(",gang", "")
    for key, col in (("gracetime", "grace_time"), ("preemptexempttime", "preempt_exempt_time")):
        if key in opts:
            v = opts.pop(key)
            try:
                vals[col] = parse_time_seconds(v, key) or 0
            except ConfigError:
                raise AcctError(f" Bad {key} time format: {v}") from None
    if "usagefactor" in opts:
        vals["usage_factor"] = _number(opts.pop("usagefactor"), float, "UsageFactor")
    for op in ("+", "-", ""):
        if "flags" + op in opts:
            items = _split(opts.pop("flags" + op)) or []
            canon = []
            for i in items:
                m = next((f for f in QOS_FLAGS if f.lower() == i.lower()), None)
                if m is None and i != "-1":
                    raise AcctError(f" Unknown QOS flag '{i}'")
                if m:
                    canon.append(m)
            vals["flags"] = ",".join(canon)
    limits = _limits(opts, _QOS_LIMIT_KEYS, modify)
    return vals, (limits if modify else _clean(limits))
