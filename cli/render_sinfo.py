"""sinfo's output, Slurm 22.05 byte for byte: default, `-N`, `-l`, `-s`, `-R`, `-o`, `-O`. Pure: the
API's nodes and partitions in, lines out."""


from __future__ import annotations

from operator import attrgetter

from slurmlet.cli import hosts
from slurmlet.common import fmt as F
from slurmlet.common.fmt import Field, Spec
from slurmlet.common.jobfacts import free_mem, node_code, node_sct, now_or_clock, null_or

TYPE_CHECKING = False  # keep typing (~7 ms) out of the CLI's import path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    JobDict = dict[str, Any]
    NodeDict = dict[str, Any]
    PartDict = dict[str, Any]

SINFO_DEFAULT = "%9P %.5a %.10l %.6D %.6t %N"
SINFO_LONG = "%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N"
SINFO_NODE = "%N %.6D %.9P %6t"
SINFO_NODE_LONG = "%N %.6D %.9P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E"
SINFO_SUMMARIZE = "%9P %.5a %.10l %.16F %N"
SINFO_REASONS = "%20E %9u %19H %N"
SINFO_REASONS_LONG = "%20E %12U %19H %6t %N"

_MIN_FIELD = 9  # MIN_NODE_FIELD_SIZE / MIN_PART_FIELD_SIZE


class SRec:
    """One sinfo line: a partition (or none) and the nodes merged into it."""

    __slots__ = ("part", "part_inx", "nodes", "names", "now")

    def __init__(self, part: PartDict | None, part_inx: int, now: float) -> None:
        self.part = part
        self.part_inx = part_inx
        self.nodes: list[NodeDict] = []
        self.names: set[str] = set()
        self.now = now

    def add(self, node: NodeDict) -> None:
        """Merge a node in (a node already present is not counted twice)."""
        if node["name"] not in self.names:
            self.names.add(node["name"])
            self.nodes.append(node)

    @property
    def first(self) -> NodeDict:
        """The node whose per-node attributes the line shows."""
        return self.nodes[0] if self.nodes else {}

    def code(self) -> int:
        """State bits of the line (those of its first node)."""
        return node_code(self.nodes[0]) if self.nodes else 0

    def pget(self, key: str, default: Any = None) -> Any:
        """A partition attribute, ``default`` when there is no partition or no value."""
        return default if self.part is None else null_or(self.part.get(key), default)


def _min_max(values: list, fmt_one: Callable[[Any], str] = str, range_: bool = False) -> str:
    """``_build_min_max_*_string``: ``8``, ``8+`` or ``8-16`` (range form)."""
    if not values:
        return "0"
    lo, hi = min(values), max(values)
    if lo == hi:
        return fmt_one(hi)
    return f"{fmt_one(lo)}-{fmt_one(hi)}" if range_ else f"{fmt_one(lo)}+"


def _cpus_aiot(r: SRec) -> tuple[int, int, int, int]:
    """Allocated, idle, other and total CPUs of the line's nodes."""
    a = i = o = t = 0
    for n in r.nodes:
        total = int(n.get("cpus") or 0)
        used = min(int(n.get("cpus_alloc") or 0), total)
        t += total
        a += used
        if F.node_is_other(node_code(n)):
            o += total - used
        else:
            i += total - used
    return a, i, o, t


def _nodes_aiot(r: SRec) -> tuple[int, int, int, int]:
    """Allocated, idle, other and total nodes of the line."""
    a = i = o = 0
    for n in r.nodes:
        c = node_code(n)
        if F.node_is_other(c):
            o += 1
        elif F.node_is_alloc(c):
            a += 1
        else:
            i += 1
    return a, i, o, len(r.nodes)


def _s_state(long_: bool) -> Callable[[SRec], str]:
    """``%t``/``%T``: lower-cased compact or long node state; ``n/a`` without nodes."""
    def get(r: SRec) -> str:
        if not r.nodes:
            return "n/a"
        c = r.code()
        return (F.node_state_long(c) if long_ else F.node_state_compact(c)).lower()
    return get


def _s_avail(r: SRec) -> str:
    """``%a``: the partition's state."""
    if r.part is None:
        return "n/a"
    return {"UP": "up", "DOWN": "down", "DRAIN": "drain", "INACTIVE": "inactive"}.get(
        str(r.part.get("state") or "UP").upper(), "unknown")


def _s_minutes(key: str, none: str) -> Callable[[SRec], str]:
    """``%l``/``%L``: a partition time in minutes, ``none`` when unset."""
    def get(r: SRec) -> str:
        if r.part is None:
            return "n/a"
        mins = r.part.get(key)
        if mins is None:
            return none
        from slurmlet.common.slurmtime import fmt_secs_short
        return fmt_secs_short(int(mins) * 60)
    return get


def _s_job_size(r: SRec) -> str:
    """``%s``: ``1-infinite`` style node count limits of the partition."""
    if r.part is None:
        return "n/a"
    lo = int(r.part.get("min_nodes") or 0)
    hi = r.part.get("max_nodes")
    if lo < 1 and (hi is None or hi > 0):
        lo = 1
    if hi is None:
        return f"{lo}-infinite"
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _s_load(r: SRec) -> str:
    """``%O``: CPU load (``5.18``), a range when nodes differ."""
    loads = [n.get("cpu_load") for n in r.nodes]
    known = [float(v) for v in loads if v is not None]
    if not known:
        return "N/A"
    return _min_max(known, lambda v: f"{v:.2f}", range_=True)


def _s_free_mem(r: SRec) -> str:
    """``%e``: free memory in MB, a range when nodes differ."""
    vals = [free_mem(n) for n in r.nodes]
    known = [int(v) for v in vals if v is not None]
    if not known:
        return "N/A"
    return _min_max(known, range_=True)


def _s_reason_user(long_: bool) -> Callable[[SRec], str]:
    """``%u``/``%U``: who set the node reason."""
    def get(r: SRec) -> str:
        n = r.first
        if not n.get("reason"):
            return "Unknown"
        user = n.get("reason_user") or "root"
        return f"{user}({n.get('reason_uid') or 0})" if long_ else user
    return get


def _s_hostlist(key: str) -> Callable[[SRec], str]:
    """``%N``/``%n``/``%o``: a compressed host list of one node attribute."""
    def get(r: SRec) -> str:
        return hosts.compress_hostlist([n.get(key) or n["name"] for n in r.nodes])
    return get


def _s_sct(r: SRec) -> str:
    """``%z``: sockets:cores:threads."""
    vals = [node_sct(n) for n in r.nodes] or [(1, 1, 1)]
    return ":".join(_min_max([v[i] for v in vals]) for i in range(3))


SINFO_FIELDS: dict[str, Field] = {
    "a": Field("AVAIL", _s_avail),
    "A": Field("NODES(A/I)", lambda r: "{}/{}".format(*_nodes_aiot(r)[:2])),
    "b": Field("ACTIVE_FEATURES",
               lambda r: r.first.get("features_act") or r.first.get("features") or "(null)"),
    "B": Field("MAX_CPUS_PER_NODE", lambda r: r.pget("max_cpus_per_node", "UNLIMITED")),
    "c": Field("CPUS", lambda r: _min_max([int(n.get("cpus") or 0) for n in r.nodes])),
    "C": Field("CPUS(A/I/O/T)", lambda r: "{}/{}/{}/{}".format(*_cpus_aiot(r))),
    "d": Field("TMP_DISK", lambda r: _min_max([int(n.get("tmp_disk") or 0) for n in r.nodes])),
    "D": Field("NODES", lambda r: len(r.nodes)),
    "e": Field("FREE_MEM", _s_free_mem),
    "E": Field("REASON", lambda r: r.first.get("reason") or "none"),
    "f": Field("AVAIL_FEATURES", lambda r: r.first.get("features") or "(null)"),
    "F": Field("NODES(A/I/O/T)", lambda r: "{}/{}/{}/{}".format(*_nodes_aiot(r))),
    "g": Field("GROUPS", lambda r: r.pget("allow_groups", "all") if r.part is not None else "n/a"),
    "G": Field("GRES", lambda r: r.first.get("gres") or "(null)"),
    "h": Field("OVERSUBSCRIBE", lambda r: r.pget("oversubscribe", "NO")),
    "H": Field("TIMESTAMP",
               lambda r: F.fmt_time(r.first.get("reason_time")) if r.first.get("reason") else "Unknown"),
    "I": Field("PRIO_JOB_FACTOR", lambda r: r.pget("priority_job_factor", 1)),
    "l": Field("TIMELIMIT", _s_minutes("max_time", "infinite")),
    "L": Field("DEFAULTTIME", _s_minutes("default_time", "n/a")),
    "m": Field("MEMORY", lambda r: _min_max([int(n.get("real_memory") or 0) for n in r.nodes])),
    "M": Field("PREEMPT_MODE", lambda r: r.pget("preempt_mode", "OFF")),
    "n": Field("HOSTNAMES", _s_hostlist("hostname"), hcut=False),
    "N": Field("NODELIST", _s_hostlist("name"), hcut=False),
    "o": Field("NODE_ADDR", _s_hostlist("addr"), hcut=False),
    "O": Field("CPU_LOAD", _s_load),
    "p": Field("PRIO_TIER", lambda r: r.pget("priority_tier", 1)),
    "P": Field("PARTITION", lambda r: "n/a" if r.part is None
               else r.part["name"] + ("*" if r.part.get("default") else "")),
    "r": Field("ROOT", lambda r: "n/a" if r.part is None else ("yes" if r.part.get("root_only") else "no")),
    "R": Field("PARTITION", lambda r: r.pget("name", "n/a")),
    "s": Field("JOB_SIZE", _s_job_size),
    "S": Field("ALLOCNODES", lambda r: r.pget("alloc_nodes", "all") if r.part is not None else "n/a"),
    "t": Field("STATE", _s_state(False)),
    "T": Field("STATE", _s_state(True)),
    "u": Field("USER", _s_reason_user(False)),
    "U": Field("USER", _s_reason_user(True)),
    "v": Field("VERSION", lambda r: r.first.get("version") or "N/A"),
    "V": Field("CLUSTER", lambda r: r.pget("cluster", "N/A")),
    "w": Field("WEIGHT", lambda r: _min_max([int(n.get("weight") or 1) for n in r.nodes])),
    "X": Field("SOCKETS", lambda r: _min_max([node_sct(n)[0] for n in r.nodes])),
    "Y": Field("CORES", lambda r: _min_max([node_sct(n)[1] for n in r.nodes])),
    "Z": Field("THREADS", lambda r: _min_max([node_sct(n)[2] for n in r.nodes])),
    "z": Field("S:C:T", _s_sct),
}

#: Letters whose per-node value must match for nodes to share a sinfo line.
_SINFO_NODE_MATCH: dict[str, Callable[[NodeDict], Any]] = {
    "t": node_code, "T": node_code,
    "c": lambda n: n.get("cpus"), "m": lambda n: n.get("real_memory"),
    "G": lambda n: n.get("gres"), "E": lambda n: n.get("reason"),
    "H": lambda n: n.get("reason_time"), "u": lambda n: n.get("reason_user"),
    "U": lambda n: n.get("reason_user"), "O": lambda n: n.get("cpu_load"),
    "e": free_mem, "z": node_sct, "X": node_sct, "Y": node_sct, "Z": node_sct,
    "d": lambda n: n.get("tmp_disk"), "w": lambda n: n.get("weight"),
    "f": lambda n: n.get("features"), "b": lambda n: n.get("features_act"),
    "v": lambda n: n.get("version"),
}
#: Letters that show partition attributes (records then split by partition value).
_SINFO_PART_LETTERS = frozenset("aBghIlLMpPrRsSV")

_SINFO_LONG_NAMES: dict[str, str] = {
    "available": "a", "nodeai": "A", "features_act": "b", "maxcpuspernode": "B",
    "cpus": "c", "cpusstate": "C", "disk": "d", "nodes": "D", "freemem": "e",
    "reason": "E", "features": "f", "nodeaiot": "F", "groups": "g", "gres": "G",
    "oversubscribe": "h", "timestamp": "H", "priorityjobfactor": "I", "time": "l",
    "defaulttime": "L", "memory": "m", "preemptmode": "M", "nodehost": "n",
    "nodelist": "N", "nodeaddr": "o", "cpusload": "O", "prioritytier": "p",
    "partition": "P", "root": "r", "partitionname": "R", "size": "s", "allocnodes": "S",
    "statecompact": "t", "statelong": "T", "user": "u", "userlong": "U", "version": "v",
    "cluster": "V", "weight": "w", "sockets": "X", "cores": "Y", "threads": "Z", "sct": "z",
    "socketcorethread": "z",
}


def _partition_members(parts: list[PartDict], nodes: list[NodeDict]) -> list[list[NodeDict]]:
    """For each partition, its nodes in node order."""
    by_name = {n["name"]: n for n in nodes}
    order = {n["name"]: i for i, n in enumerate(nodes)}
    out = []
    for p in parts:
        names = p.get("node_names")
        if names is None:
            names = hosts.expand_hostlist(p.get("nodes") or "") if p.get("nodes") else [
                n["name"] for n in nodes if p["name"] in (n.get("partitions") or [])]
        members = [by_name[x] for x in names if x in by_name]
        members.sort(key=lambda n: order[n["name"]])
        out.append(members)
    return out


def _sinfo_sort(recs: list[SRec], spec: str) -> None:
    """Apply a sinfo ``-S`` spec (``#P,-t`` or ``N`` by default), last key first."""
    keys: dict[str, Callable[[SRec], Any]] = {
        "P": lambda r: r.pget("name", ""),
        "t": lambda r: r.code(), "T": lambda r: r.code(),
        "N": lambda r: F.natural_key(r.nodes[0]["name"]) if r.nodes else (),
        "D": lambda r: len(r.nodes),
        "c": lambda r: min((int(n.get("cpus") or 0) for n in r.nodes), default=0),
        "m": lambda r: min((int(n.get("real_memory") or 0) for n in r.nodes), default=0),
        "E": lambda r: r.first.get("reason") or "", "R": lambda r: r.first.get("reason") or "",
        "l": lambda r: r.pget("max_time", 1 << 62),
        "p": lambda r: r.pget("priority_tier", 0),
        "w": lambda r: min((int(n.get("weight") or 1) for n in r.nodes), default=0),
        "O": lambda r: min((float(n.get("cpu_load") or 0) for n in r.nodes), default=0),
    }
    tokens = [k.strip() for k in spec.split(",") if k.strip()]
    for tok in reversed(tokens):
        rev = "-" in tok
        letter = tok.lstrip("+-#")
        if not letter:
            continue
        if letter == "P" and tok.lstrip("+-").startswith("#"):
            key: Callable[[SRec], Any] = attrgetter("part_inx")
        else:
            key = keys.get(letter[0], lambda r: 0)
        recs.sort(key=key, reverse=rev)


def _sinfo_records(nodes: list[NodeDict], parts: list[PartDict], specs: list[Spec],
                   table: dict[str, Field], node_oriented: bool, reasons: bool,
                   now: float) -> list[SRec]:
    """Group (partition, node) pairs into sinfo lines the way sinfo's ``_build_sinfo_data`` does."""
    letters = [sp.key for sp in specs if sp.key is not None]
    part_letters = [k for k in letters if k in _SINFO_PART_LETTERS]
    node_keys = [_SINFO_NODE_MATCH[k] for k in dict.fromkeys(letters) if k in _SINFO_NODE_MATCH]
    recs: dict[tuple[object, ...], SRec] = {}
    order: list[SRec] = []
    members = _partition_members(parts, nodes)
    if part_letters and not node_oriented and not reasons:
        for inx, (p, ms) in enumerate(zip(parts, members)):
            if not ms:
                rec = SRec(p, inx, now)
                recs[("empty", inx)] = rec
                order.append(rec)
    for inx, (p, ms) in enumerate(zip(parts, members)):
        probe = SRec(p, inx, now)
        pkey = tuple(table[k].getter(probe) for k in part_letters)
        for n in ms:
            if reasons and not F.node_is_other(node_code(n)):
                continue
            key: tuple[object, ...] = (pkey, tuple(f(n) for f in node_keys))
            if node_oriented:
                key += (n["name"],)
            found = recs.get(key)
            if found is None:
                found = recs[key] = SRec(p, inx, now)
                order.append(found)
            found.add(n)
    return order


def sinfo_lines(nodes: Iterable[NodeDict], partitions: Iterable[PartDict], *,
                node_oriented: bool = False, long: bool = False, summarize: bool = False,
                fmt: str | None = None, long_fmt: str | None = None, noheader: bool = False,
                reasons: bool = False, now: float | None = None,
                sort: str | None = None) -> list[str]:
    """Render ``sinfo`` output lines (without newlines).

    ``node_oriented`` is ``-N``, ``long`` is ``-l``, ``summarize`` is ``-s``,
    ``reasons`` is ``-R``; ``fmt``/``long_fmt`` are ``-o``/``-O``. Partitions are shown
    in the given (configuration) order, nodes in the given order (natural sort).
    With the built-in formats the PARTITION and (``-N``) NODELIST columns widen to
    their longest value, at least 9.
    """
    t = now_or_clock(now)
    nodes = list(nodes)
    parts = list(partitions)
    table = SINFO_FIELDS
    builtin = fmt is None and long_fmt is None
    if long_fmt:
        specs = []
        for sp in F.parse_long_format(long_fmt):
            letter = _SINFO_LONG_NAMES.get(sp.key or "")
            if letter is None:
                raise ValueError(f"Invalid node format specification: {sp.key}")
            specs.append(Spec(letter, sp.width, sp.right, sp.suffix))
    else:
        if fmt is None:
            if summarize:
                fmt = SINFO_SUMMARIZE
            elif node_oriented:
                fmt = SINFO_NODE_LONG if long else SINFO_NODE
            elif reasons:
                fmt = SINFO_REASONS_LONG if long else SINFO_REASONS
            else:
                fmt = SINFO_LONG if long else SINFO_DEFAULT
        specs = F.parse_format(fmt)
        for sp in specs:
            if sp.key is not None and sp.key not in table:
                raise ValueError(f"Invalid node format specification: {sp.key}")
    recs = _sinfo_records(nodes, parts, specs, table, node_oriented and not summarize,
                          reasons, t)
    _sinfo_sort(recs, sort or ("N" if node_oriented and not summarize else "#P,-t"))
    if builtin:
        specs = _sinfo_widen(specs, recs, part=not reasons, node=node_oriented and not summarize)
    out: list[str] = []
    if long and not noheader:
        out.append(F.fmt_date_header(t))
    if not noheader:
        out.append(F.render_specs(specs, table, None))
    out.extend(_sinfo_render(specs, table, r) for r in recs)
    return out


def _sinfo_widen(specs: list[Spec], recs: list[SRec], *, part: bool, node: bool) -> list[Spec]:
    """sinfo's ``part_field_flag``/``node_field_flag``: size %P and %N to their data."""
    pw = max([_MIN_FIELD] + [len(r.part["name"]) + (1 if r.part.get("default") else 0)
                             for r in recs if r.part is not None])
    nw = max([_MIN_FIELD] + [len(SINFO_FIELDS["N"].getter(r)) for r in recs])
    out = []
    for sp in specs:
        if part and sp.key in ("P", "R"):
            sp = sp.replace(width=pw)
        elif node and sp.key == "N":
            sp = sp.replace(width=nw)
        out.append(sp)
    return out


def _sinfo_render(specs: list[Spec], table: dict[str, Field], r: SRec) -> str:
    """One sinfo data line; ``%P`` keeps its ``*`` when the name fills the width."""
    out: list[str] = []
    for sp in specs:
        if sp.key is not None:
            value = table[sp.key].getter(r)
            if sp.key == "P" and r.part is not None and r.part.get("default") and sp.width \
                    and len(r.part["name"]) >= sp.width:
                value = r.part["name"][:sp.width - 1] + "*"
            out.append(F.pad(value, sp.width, sp.right, table[sp.key].cut))
        out.append(sp.suffix)
    return "".join(out)
