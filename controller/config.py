"""Cluster configuration in slurm.conf syntax (the subset real sites use).

`parse_slurm_conf(text)` turns the file into a frozen `ClusterConfig`. Unknown keys are
collected in `ClusterConfig.warnings` (the daemon logs them) and never stop it; malformed
values raise `ConfigError` naming the key and the line.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import hostlist

UNLIMITED = None


class ConfigError(ValueError):
    """The configuration file is malformed."""


@dataclass(frozen=True)
class NodeConf:
    name: str
    cpus: int | None = None  # None: what the agent reports
    real_memory: int | None = None  # MB
    gpus: int | None = None
    gpu_type: str | None = None
    addr: str | None = None
    weight: int = 1
    features: tuple[str, ...] = ()  # Feature=: with the agent's pool, what NodeSet Feature= selects


@dataclass(frozen=True)
class PartitionConf:
    name: str
    nodes: tuple[str, ...] | None  # None: ALL nodes
    default: bool = False
    #: node features (pools) whose nodes belong to the partition too (a NodeSet with Feature=, a spec's node_pool_ids)
    features: tuple[str, ...] = ()
    max_time: int | None = UNLIMITED  # minutes
    default_time: int | None = None
    priority_tier: int = 1
    priority_job_factor: int = 1
    preempt_mode: str | None = None  # None: the cluster's PreemptMode
    grace_time: int = 0  # seconds
    state: str = "UP"
    max_nodes: int | None = None
    min_nodes: int = 0
    billing_weights: tuple[tuple[str, float], ...] = ()  #: TRESBillingWeights, memory per GB


@dataclass(frozen=True)
class ClusterConfig:
    cluster_name: str = "slurmlet"
    nodes: tuple[NodeConf, ...] = ()
    partitions: tuple[PartitionConf, ...] = ()
    kill_wait: int = 30
    min_job_age: int = 300
    slurmd_timeout: int = 300
    def_mem_per_cpu: int | None = None
    job_requeue: bool = True
    max_array_size: int = 1001
    #: seconds a requeued job waits: a real slurmctld sets BeginTime to now + cred_expire (120) + 1
    requeue_delay: int = 121
    preempt_mode: str = "OFF"
    scheduler_type: str = "sched/backfill"
    #: EnforcePartLimits: NO (past a partition's limits a job pends), ALL or ANY (refused at submission;
    #: YES is ANY, as 22.05 shows it; with one partition a job the two are the same)
    enforce_part_limits: str = "NO"
    #: PrologFlags, lower-cased (`contain`: every job gets an extern step, which sacct lists)
    prolog_flags: tuple[str, ...] = ()
    raw: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    #: nodes of this pool (a JSON spec's login_node_pool_id) belong to no partition and run no jobs
    login_pool: str | None = None
    #: a JSON spec's home_directory_storage: jobs start with HOME=<it>/<user>
    home_storage: str | None = None
    #: where the configuration came from: "slurm.conf" or "spec"
    source: str = "slurm.conf"
    #: parameters set at cluster creation, by the name an error gives them: reconfigure refuses to change them
    fixed: dict[str, str] = field(default_factory=dict)
    #: the slurm.conf text as read ("" for the built-in cluster or a JSON spec): agents keep a copy
    #: for their jobs' SLURM_CONF, as a configless slurmd does
    text: str = ""
    #: cgroup.conf beside slurm.conf (ConstrainRAMSpace, ...), by Slurm's key names; the agents enforce it
    cgroup: dict[str, str] = field(default_factory=dict)
    #: the SlurmctldHost lines in order, each as written (`NAME` or `NAME(ADDRESS)`): the primary first,
    #: then the backups (ControlMachine and BackupController, the older keys, read as the first two)
    controllers: tuple[str, ...] = ()
    #: SlurmctldTimeout: seconds a backup waits for the active controller's lease to be renewed
    slurmctld_timeout: int = 120

    def controller_names(self) -> tuple[str, ...]:
        """The controllers' host names, primary first (one, "localhost", when slurm.conf names none)."""
        return tuple(c.split("(", 1)[0].strip() for c in self.controllers) or ("localhost",)

    @property
    def dynamic_nodes(self) -> bool:
        """True when slurm.conf names no nodes: any registering agent becomes a node."""
        return not self.nodes

    def priority_weights(self):  # noqa: ANN201 - controller.core.priority.Weights
        """PriorityWeight* and friends; all zero unless PriorityType=priority/multifactor."""
        from slurmlet.controller.core.priority import Weights
        raw = {k.lower(): v for k, v in self.raw.items()}
        if raw.get("prioritytype", "priority/basic").lower() != "priority/multifactor":
            return Weights()

        def w(key: str) -> int:
            try:
                return int(raw.get(key, "0"))
            except ValueError:
                raise ConfigError(f"{key}: expected a number, got {raw[key]!r}") from None
        max_age = parse_time_minutes(raw.get("prioritymaxage", "7-0"), "PriorityMaxAge")
        half_life = parse_time_seconds(raw.get("prioritydecayhalflife", "7-0"), "PriorityDecayHalfLife")
        return Weights(age=w("priorityweightage"), fairshare=w("priorityweightfairshare"),
                       jobsize=w("priorityweightjobsize"), partition=w("priorityweightpartition"),
                       qos=w("priorityweightqos"), assoc=w("priorityweightassoc"),
                       max_age=(max_age if max_age is not None else 7 * 1440) * 60.0,
                       favor_small=raw.get("priorityfavorsmall", "no").lower() in ("yes", "1"),
                       decay_half_life=float(half_life or 0), tres=_tres_weights(raw.get("priorityweighttres", "")))

    def fair_tree(self) -> bool:
        """Fair Tree fair-share (Slurm's default) unless PriorityFlags has NO_FAIR_TREE."""
        flags = {f.strip().upper() for f in self.raw_value("priorityflags", "").split(",")}
        return "NO_FAIR_TREE" not in flags

    def priority_calc_period(self) -> float:
        """PriorityCalcPeriod in seconds (default 5 minutes): how often usage is recomputed."""
        v = parse_time_seconds(self.raw_value("prioritycalcperiod", "5"), "PriorityCalcPeriod")
        return float(300 if v is None else v)

    def preempt_mode_of(self, part: PartitionConf) -> str:
        """A partition's effective PreemptMode, without its GANG flag: OFF, CANCEL, REQUEUE or SUSPEND."""
        return _preempt_mode(part.preempt_mode or self.preempt_mode, "PreemptMode")

    def sched_params(self) -> dict[str, str]:
        """SchedulerParameters as a dict; flags without a value map to ''."""
        out: dict[str, str] = {}
        for item in self.raw_value("schedulerparameters", "").split(","):
            k, _, v = item.strip().partition("=")
            if k:
                out[k.lower()] = v.strip()
        return out

    def raw_value(self, key: str, default: str) -> str:
        for k, v in self.raw.items():
            if k.lower() == key:
                return v
        return default

    def bf_interval(self) -> float:
        """Seconds between backfill passes (SchedulerParameters=bf_interval, Slurm's default 30)."""
        v = self.sched_params().get("bf_interval", "30")
        return float(_int(v, "SchedulerParameters bf_interval"))

    def sched_config(self):  # noqa: ANN201 - controller.core.model.SchedConfig
        """SchedulerType, SchedulerParameters (bf_*), PreemptType and PreemptExemptTime for the core."""
        from slurmlet.controller.core.model import SchedConfig
        sp = self.sched_params()

        def num(key: str, default: int, low: int = 0) -> int:
            if key not in sp:
                return default
            v = _int(sp[key], f"SchedulerParameters {key}")
            if v < low:
                raise ConfigError(f"SchedulerParameters {key}: must be at least {low}, got {v}")
            return v

        policy = sp.get("bf_policy", "")
        if policy.lower() not in ("", "easy", "conservative"):
            raise ConfigError(f"SchedulerParameters bf_policy: expected easy or conservative, got {policy!r}")
        stype = self.scheduler_type.lower()
        if stype not in ("sched/backfill", "sched/builtin"):
            raise ConfigError(f"SchedulerType: expected sched/backfill or sched/builtin, got {self.scheduler_type!r}")
        ptype = self.raw_value("preempttype", "preempt/none").lower()
        if ptype not in ("preempt/none", "preempt/partition_prio", "preempt/qos"):
            raise ConfigError(f"PreemptType: expected preempt/none, preempt/partition_prio or preempt/qos, "
                              f"got {ptype!r}")
        exempt = parse_time_seconds(self.raw_value("preemptexempttime", "-1"), "PreemptExemptTime")
        return SchedConfig(backfill=stype == "sched/backfill", bf_window=num("bf_window", 1440, 1),
                           bf_resolution=num("bf_resolution", 60, 1), bf_max_job_test=num("bf_max_job_test", 100, 1),
                           bf_continue="bf_continue" in sp, bf_easy=policy.lower() == "easy",
                           preempt=ptype != "preempt/none", preempt_qos=ptype == "preempt/qos",
                           preempt_exempt_time=exempt or 0)

    def node(self, name: str) -> NodeConf | None:
        for n in self.nodes:
            if n.name == name:
                return n
        return None

    def default_partition(self) -> PartitionConf | None:
        for p in self.partitions:
            if p.default:
                return p
        return self.partitions[0] if self.partitions else None

    def partition(self, name: str) -> PartitionConf | None:
        for p in self.partitions:
            if p.name == name:
                return p
        return None

    def partition_nodes(self, part: PartitionConf, known: list[str],
                        features: Mapping[str, Iterable[str]] | None = None) -> list[str]:
        """Node names of a partition; `known` is every node the controller knows, `features` their
        features (pools). Nodes of the login pool are in no partition."""
        feats = features or {}
        if self.login_pool:
            known = [n for n in known if self.login_pool not in feats.get(n, ())]
        if part.nodes is None:
            return list(known)
        out = list(part.nodes)
        if part.features:
            want = set(part.features)
            out += [n for n in known if n not in out and want.intersection(feats.get(n, ()))]
        return out

    def node_features(self, rows: Iterable) -> dict[str, tuple[str, ...]]:
        """Each node's features: its slurm.conf Feature= and the pool its agent joined (rows of nodes)."""
        out = {n.name: n.features for n in self.nodes if n.features}
        for r in rows:
            pool = getattr(r, "pool", None)
            if pool and pool not in out.get(r.name, ()):
                out[r.name] = out.get(r.name, ()) + (pool,)
        return out

    def script_list(self, key: str) -> str | None:
        """Prolog, Epilog, PrologSlurmctld or EpilogSlurmctld as written (a comma-separated list of
        paths or globs, run in order); None when unset."""
        return self.raw_value(key, "").strip() or None

    def fixed_changes(self, new: ClusterConfig) -> list[str]:
        """The parameters set at cluster creation that `new` would change (reconfigure refuses them)."""
        if new.source != self.source:
            return [f"the configuration's kind ({self.source} -> {new.source})"]
        out = []
        for k in sorted(set(self.fixed) | set(new.fixed)):
            old_v, new_v = self.fixed.get(k, "(null)"), new.fixed.get(k, "(null)")
            if old_v != new_v:
                short = len(old_v) + len(new_v) <= 80
                out.append(f"{k} ({old_v} -> {new_v})" if short else f"{k} (changed)")
        return out


_GLOBAL_KEYS = {
    "clustername": "cluster_name",
    "killwait": "kill_wait",
    "minjobage": "min_job_age",
    "slurmdtimeout": "slurmd_timeout",
    "defmempercpu": "def_mem_per_cpu",
    "jobrequeue": "job_requeue",
    "maxarraysize": "max_array_size",
    "slurmletrequeuedelay": "requeue_delay",
    "preemptmode": "preempt_mode",
    "schedulertype": "scheduler_type",
    "enforcepartlimits": "enforce_part_limits",
    "prologflags": "prolog_flags",
    "slurmctldtimeout": "slurmctld_timeout",
}
_INT_FIELDS = {"kill_wait", "min_job_age", "slurmd_timeout", "def_mem_per_cpu", "max_array_size", "requeue_delay",
               "slurmctld_timeout"}

# Keys real slurm.conf files carry that slurmlet accepts silently (no behaviour here, or later issues).
_KNOWN_QUIET = {
    "slurmctldhost", "controlmachine", "backupcontroller", "slurmuser", "slurmduser", "authtype", "credtype",
    "mpidefault",
    "proctracktype", "tasktype", "taskplugin", "returntoservice", "slurmdparameters",
    "slurmctldpidfile", "slurmdpidfile", "slurmdspooldir", "statesavelocation", "slurmctldlogfile",
    "slurmdlogfile", "slurmctlddebug", "slurmddebug", "inactivelimit", "waittime",
    "selecttype", "selecttypeparameters", "grestypes", "prioritytype", "prioritydecayhalflife", "prioritycalcperiod",
    "prioritymaxage", "priorityweightage", "priorityweightfairshare", "priorityweightjobsize",
    "priorityweightpartition", "priorityweightqos", "priorityweightassoc", "priorityweighttres",
    "priorityfavorsmall", "priorityflags", "schedulerparameters", "preempttype", "preemptexempttime",
    "accountingstoragetype", "accountingstorageenforce", "accountingstoragehost", "accountingstorageport",
    "jobacctgathertype", "jobacctgatherfrequency", "jobcomptype", "slurmctldport", "slurmdport",
    "switchtype", "mailprog", "include", "prolog", "epilog", "prologslurmctld", "epilogslurmctld",
    "maxjobcount", "firstjobid", "tmpfs", "usepam", "healthcheckprogram", "healthcheckinterval",
    "schedulertimeslice", "overtimelimit", "accountingstoragetres", "clusterid",
}


def _tres_weights(value: str) -> tuple[tuple[str, int], ...]:
    """PriorityWeightTRES=CPU=1000,Mem=2000,GRES/gpu=3000 -> (("cpu", 1000), ("mem", 2000), ("gres/gpu", 3000))."""
    out = []
    for item in value.split(","):
        name, eq, weight = item.strip().partition("=")
        if not item.strip():
            continue
        name = name.strip().lower()
        known = name in ("cpu", "mem", "node", "gres/gpu", "billing", "energy") or name.startswith("gres/")
        if not eq or not known:
            raise ConfigError(f"PriorityWeightTRES: bad item {item.strip()!r}: expected TRES=WEIGHT")
        out.append(("gres/gpu" if name.startswith("gres/gpu") else name, _int(weight, "PriorityWeightTRES")))
    return tuple(out)


def parse_time_minutes(value: str, key: str) -> int | None:
    """A slurm.conf time value (`UNLIMITED`, `30`, `1:00:00`, `2-00:00:00`) in minutes, seconds rounded up."""
    secs = parse_time_seconds(value, key)
    return None if secs is None else -(-secs // 60)


def parse_time_seconds(value: str, key: str) -> int | None:
    """A slurm.conf duration (`-1`, `30` minutes, `1:00:00`, `2-00:00:00`) in seconds; None: unset."""
    v = value.strip()
    if v.upper() in ("UNLIMITED", "INFINITE", "-1", "NONE", ""):
        return None
    days = 0
    if "-" in v:
        d, v = v.split("-", 1)
        days = _int(d, key)
    parts = [_int(p, key) for p in v.split(":")] if v else [0]
    if any(p < 0 for p in parts) or days < 0:
        raise ConfigError(f"{key}: invalid time {value!r}")
    if len(parts) == 1:
        secs = parts[0] * (3600 if days else 60)
    elif len(parts) == 2:
        secs = parts[0] * 3600 + parts[1] * 60 if days else parts[0] * 60 + parts[1]
    elif len(parts) == 3:
        secs = parts[0] * 3600 + parts[1] * 60 + parts[2]
    else:
        raise ConfigError(f"{key}: invalid time {value!r}")
    return days * 86400 + secs


_PREEMPT_MODES = ("OFF", "CANCEL", "REQUEUE", "SUSPEND")


def _preempt_mode(value: str, key: str) -> str:
    """PreemptMode: one of OFF/CANCEL/REQUEUE/SUSPEND, optionally with GANG (`SUSPEND,GANG`)."""
    words = [w.strip().upper() for w in value.split(",") if w.strip()]
    modes = [w for w in words if w != "GANG"] or ["OFF"]
    if len(modes) > 1 or modes[0] not in _PREEMPT_MODES:
        raise ConfigError(f"{key}: expected OFF, CANCEL, REQUEUE or SUSPEND[,GANG], got {value!r}")
    return modes[0]


def _int(v: str, key: str) -> int:
    try:
        return int(v)
    except ValueError:
        raise ConfigError(f"{key}: expected a number, got {v!r}") from None


def _pairs(line: str) -> list[tuple[str, str]]:
    out = []
    for tok in line.split():
        if "=" not in tok:
            raise ConfigError(f"expected Key=Value, got {tok!r}")
        k, v = tok.split("=", 1)
        out.append((k, v))
    return out


def _gres_gpus(value: str) -> tuple[int, str | None]:
    """`gpu:8` or `gpu:h100:8` -> (8, 'h100'). Other GRES are ignored."""
    total, gtype = 0, None
    for item in value.split(","):
        parts = item.split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) == 2:
            total += _int(parts[1].split("(")[0], "Gres")
        elif len(parts) >= 3:
            gtype = parts[1]
            total += _int(parts[2].split("(")[0], "Gres")
        else:
            total += 1
    return total, gtype


def _parse_node_line(pairs: list[tuple[str, str]], warnings: list[str]) -> list[NodeConf]:
    names_expr = pairs[0][1]
    if names_expr.upper() == "DEFAULT":
        return []
    kw: dict = {}
    addrs: list[str] | None = None
    for k, v in pairs[1:]:
        lk = k.lower()
        if lk in ("cpus", "procs"):
            kw["cpus"] = _int(v, k)
        elif lk == "realmemory":
            kw["real_memory"] = _int(v, k)
        elif lk == "gres":
            kw["gpus"], kw["gpu_type"] = _gres_gpus(v)
        elif lk == "nodeaddr":
            addrs = hostlist.expand_hostlist(v)
        elif lk == "weight":
            kw["weight"] = _int(v, k)
        elif lk in ("feature", "features"):
            kw["features"] = tuple(f.strip() for f in v.split(",") if f.strip())
        elif lk in ("sockets", "corespersocket", "threadspercore", "boards", "state", "tmpdisk", "nodehostname", "port",
                    "reason", "socketsperboard"):
            continue
        else:
            warnings.append(f"NodeName: unknown key {k}")
    try:
        names = hostlist.expand_hostlist(names_expr)
    except hostlist.BadHostlist as e:
        raise ConfigError(f"NodeName: bad host list {names_expr!r}: {e}") from None
    return [NodeConf(name=n, addr=addrs[i] if addrs and i < len(addrs) else None, **kw)
            for i, n in enumerate(names)]


def _parse_partition_line(pairs: list[tuple[str, str]], warnings: list[str]) -> PartitionConf | None:
    name = pairs[0][1]
    if name.upper() == "DEFAULT":
        return None
    kw: dict = {"nodes": None}
    for k, v in pairs[1:]:
        lk = k.lower()
        if lk == "nodes":
            kw["nodes"] = None if v.upper() == "ALL" else tuple(hostlist.expand_hostlist(v))
        elif lk == "default":
            kw["default"] = v.upper() == "YES"
        elif lk == "maxtime":
            kw["max_time"] = parse_time_minutes(v, k)
        elif lk == "defaulttime":
            kw["default_time"] = parse_time_minutes(v, k)
        elif lk == "prioritytier":
            kw["priority_tier"] = _int(v, k)
        elif lk == "priorityjobfactor":
            kw["priority_job_factor"] = _int(v, k)
        elif lk == "preemptmode":
            _preempt_mode(v, k)
            kw["preempt_mode"] = v.upper()
        elif lk == "gracetime":
            kw["grace_time"] = _int(v, k)
            if kw["grace_time"] < 0:
                raise ConfigError(f"{k}: must not be negative, got {v!r}")
        elif lk == "state":
            kw["state"] = v.upper()
        elif lk == "maxnodes":
            kw["max_nodes"] = None if v.upper() == "UNLIMITED" else _int(v, k)
        elif lk == "minnodes":
            kw["min_nodes"] = _int(v, k)
        elif lk == "tresbillingweights":
            from slurmlet.controller.core.limits import TresError, parse_billing_weights
            try:
                kw["billing_weights"] = tuple(parse_billing_weights(v.strip('"')).items())
            except TresError as e:
                raise ConfigError(str(e)) from None
        elif lk in ("oversubscribe", "shared", "allowaccounts", "allowgroups", "allowqos", "qos",
                    "exclusiveuser", "hidden", "rootonly", "lln", "defmempercpu", "maxmempercpu",
                    "overtimelimit", "disablerootjobs", "reqresv", "alternate"):
            continue
        else:
            warnings.append(f"PartitionName={name}: unknown key {k}")
    return PartitionConf(name=name, **kw)


#: slurm.conf keys that only a restart changes (scontrol reconfigure refuses them), as Slurm spells them
FIXED_KEYS = ("ClusterName", "AccountingStorageType", "SlurmctldHost", "SlurmctldPort", "SlurmdPort",
              "StateSaveLocation", "AuthType")


def _nodeset(pairs: list[tuple[str, str]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`NodeSet=NAME Feature=F` or `NodeSet=NAME Nodes=LIST`: (features, node names)."""
    feats: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    for k, v in pairs[1:]:
        if k.lower() in ("feature", "features"):
            feats = tuple(f.strip() for f in v.split(",") if f.strip())
        elif k.lower() == "nodes":
            names = tuple(hostlist.expand_hostlist(v))
        else:
            raise ConfigError(f"NodeSet={pairs[0][1]}: unknown key {k}")
    return feats, names


def _with_nodesets(p: PartitionConf, sets: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> PartitionConf:
    """A partition's Nodes= entries that name a NodeSet become its features (or the set's nodes)."""
    if p.nodes is None or not any(n in sets for n in p.nodes):
        return p
    names: list[str] = []
    feats = list(p.features)
    for n in p.nodes:
        f, members = sets.get(n, ((), (n,)))
        names += [m for m in members if m not in names]
        feats += [x for x in f if x not in feats]
    return dataclasses.replace(p, nodes=tuple(names), features=tuple(feats))


def parse_slurm_conf(text: str) -> ClusterConfig:
    """Parse slurm.conf text. Unknown keys become warnings; bad values raise ConfigError."""
    warnings: list[str] = []
    values: dict = {}
    raw: dict[str, str] = {}
    nodes: list[NodeConf] = []
    parts: list[PartitionConf] = []
    nodesets: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    controllers: list[str] = []
    legacy: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            pairs = _pairs(line)
            key = pairs[0][0].lower()
            if key == "nodename":
                nodes.extend(_parse_node_line(pairs, warnings))
                continue
            if key == "partitionname":
                p = _parse_partition_line(pairs, warnings)
                if p:
                    parts.append(p)
                continue
            if key == "nodeset":
                nodesets[pairs[0][1]] = _nodeset(pairs)
                continue
            if key in ("slurmctldhost", "controlmachine", "backupcontroller"):
                if len(pairs) > 1:
                    raise ConfigError(f"{pairs[0][0]}: one host per line")
                ctl = pairs[0][1].strip()
                if not ctl or not re.fullmatch(r"[A-Za-z0-9._-]+(\([^()\s]+\))?", ctl):
                    raise ConfigError(f"{pairs[0][0]}: invalid value {ctl!r} (NAME or NAME(ADDRESS))")
                if key == "slurmctldhost":
                    controllers.append(ctl)
                else:
                    legacy[key] = ctl
            for k, v in pairs:
                raw[k] = v
                lk = k.lower()
                attr = _GLOBAL_KEYS.get(lk)
                if attr is None:
                    if lk not in _KNOWN_QUIET:
                        warnings.append(f"unknown key {k}")
                    continue
                if attr in _INT_FIELDS:
                    values[attr] = _int(v, k)
                elif attr == "job_requeue":
                    values[attr] = v.strip() not in ("0", "no", "NO")
                elif attr == "preempt_mode":
                    _preempt_mode(v, k)
                    values[attr] = v.upper()
                elif attr == "prolog_flags":
                    values[attr] = tuple(f.strip().lower() for f in v.split(",") if f.strip())
                elif attr == "enforce_part_limits":
                    mode = v.strip().upper()
                    if mode not in ("NO", "ALL", "ANY", "YES"):
                        raise ConfigError(f"{k}: invalid value {v!r} (NO, ALL, ANY or YES)")
                    values[attr] = "ANY" if mode == "YES" else mode
                else:
                    values[attr] = v
        except ConfigError as e:
            raise ConfigError(f"line {lineno}: {e}") from None
    seen = set()
    for n in nodes:
        if n.name in seen:
            raise ConfigError(f"NodeName {n.name} defined twice")
        seen.add(n.name)
    parts = [_with_nodesets(p, nodesets) for p in parts]
    if not parts:
        parts.append(PartitionConf(name="debug", nodes=None, default=True))
    elif not any(p.default for p in parts):
        parts[0] = dataclasses.replace(parts[0], default=True)
    if not controllers and legacy:  # (22.05 reads ControlMachine and BackupController where no SlurmctldHost is)
        controllers = [legacy[k] for k in ("controlmachine", "backupcontroller") if k in legacy]
    values["controllers"] = tuple(controllers)
    if len(set(c.split("(", 1)[0] for c in controllers)) < len(controllers):
        raise ConfigError("SlurmctldHost: a host named twice")
    fixed = {k: v for k in FIXED_KEYS for rk, v in raw.items() if rk.lower() == k.lower()}
    if controllers:
        fixed["SlurmctldHost"] = ",".join(controllers)
    if nodes:
        fixed["NodeName"] = " ".join(f"{n.name}:{n.cpus}:{n.real_memory}:{n.gpus}:{n.gpu_type}:{n.addr}"
                                     for n in nodes)
    cfg = ClusterConfig(nodes=tuple(nodes), partitions=tuple(parts), raw=raw,
                        warnings=tuple(warnings), fixed=fixed, text=text, **values)
    cfg.sched_config()  # bad scheduler, preemption or priority settings fail at start-up, naming the key
    cfg.priority_weights()
    cfg.bf_interval()
    return cfg


def read_config_file(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None


def load_config(path: str | None) -> ClusterConfig:
    if path is None:
        return parse_slurm_conf("")
    cfg = parse_slurm_conf(read_config_file(path))
    cgroup_conf = os.path.join(os.path.dirname(path), "cgroup.conf")
    if os.path.exists(cgroup_conf):
        values, warnings = parse_cgroup_conf(read_config_file(cgroup_conf))
        cfg = dataclasses.replace(cfg, cgroup=values, warnings=cfg.warnings + tuple(warnings))
    return cfg


#: cgroup.conf keys the agents act on (Slurm's, and SlurmletMaxTasksPerCPU: nodeagent/cgroup.py's Policy); the
#: others real files carry are accepted with a warning
CGROUP_KEYS = ("ConstrainRAMSpace", "ConstrainSwapSpace", "AllowedRAMSpace", "AllowedSwapSpace", "CgroupPlugin",
               "CgroupAutomount", "CgroupMountpoint", "ConstrainCores", "ConstrainDevices", "MemorySwappiness",
               "SlurmletMaxTasksPerCPU")


def parse_cgroup_conf(text: str) -> tuple[dict[str, str], list[str]]:
    """cgroup.conf's `Key=Value` lines (comments and blank lines skipped), keys as Slurm spells them."""
    values: dict[str, str] = {}
    warnings = []
    known = {k.lower(): k for k in CGROUP_KEYS}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        name = known.get(key.strip().lower())
        if not sep or name is None:
            warnings.append(f"cgroup.conf line {lineno}: {key.strip()!r} is not supported (ignored)")
            continue
        values[name] = value.strip()
    return values, warnings
