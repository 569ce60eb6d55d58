"""Shared, dependency-free formatting machinery for the slurmlet CLI renderers.

Everything here mirrors a piece of Slurm 22.05's C code so that the renderers in
the renderers (cli/render_*.py) can reproduce its output byte for byte:

* ``%[.][width]X`` format strings (squeue/sinfo ``-o``) and ``Name[:[.]width]``
  long formats (``-O``), printed the way Slurm's ``_print_str`` does it;
* time, duration and time-limit formatting (``slurm_make_time_str``,
  ``secs2time_str``, ``mins2time_str`` and squeue's own ``_print_secs``);
* memory/number unit conversion (``convert_num_unit`` with ``CONVERT_NUM_UNIT_EXACT``);
* job and node state names (compact and long).

The module is imported by every CLI invocation, so it only uses ``time`` at import
time; anything heavier is imported lazily inside the function that needs it.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # typing costs ~7 ms to import: only for type checkers
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    Getter = Callable[[Any], Any]

# ---------------------------------------------------------------------------
# Field tables and format specifications
# ---------------------------------------------------------------------------


class Field:
    """One printable column: its header and how to get its value from a row object.

    ``cut``/``hcut`` are False for the few values/headers Slurm prints without
    truncating them to the field width (squeue's node lists, sinfo's NODELIST header).
    """

    __slots__ = ("header", "getter", "cut", "hcut")

    def __init__(self, header: str, getter: Getter, cut: bool = True, hcut: bool = True) -> None:
        self.header = header
        self.getter = getter
        self.cut = cut
        self.hcut = hcut


class Spec:
    """One parsed item of a format string: a field key plus how to print it.

    ``key`` is None for a pure text item (a prefix before the first ``%``).
    ``suffix`` is the literal text printed right after the field.
    """

    __slots__ = ("key", "width", "right", "suffix")

    def __init__(self, key: str | None, width: int = 0, right: bool = False, suffix: str = "") -> None:
        self.key = key
        self.width = width
        self.right = right
        self.suffix = suffix

    def replace(self, **changes: Any) -> Spec:
        """A copy with some attributes changed."""
        d = {k: getattr(self, k) for k in self.__slots__}
        d.update(changes)
        return Spec(**d)

    def _tuple(self) -> tuple[str | None, int, bool, str]:
        return (self.key, self.width, self.right, self.suffix)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spec) and self._tuple() == other._tuple()

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __repr__(self) -> str:
        return "Spec({!r}, {!r}, {!r}, {!r})".format(*self._tuple())


def parse_format(fmt: str) -> list[Spec]:
    """Parse a Slurm ``-o`` format such as ``"%.18i %.9P %R"`` into specs.

    Mirrors squeue/sinfo ``_parse_format``: the text is split on ``%``; text before
    the first ``%`` becomes a prefix, each token is ``[.][digits]LETTER`` followed by
    a literal suffix. Consecutive ``%`` collapse (as ``strtok`` does).
    """
    specs: list[Spec] = []
    parts = fmt.split("%")
    if parts[0]:
        specs.append(Spec(None, suffix=parts[0]))
    for tok in parts[1:]:
        if not tok:
            continue
        i = 0
        right = tok[0] == "."
        if right:
            i = 1
        width = 0
        while i < len(tok) and tok[i].isdigit():
            width = width * 10 + ord(tok[i]) - 48
            i += 1
        if i >= len(tok):
            continue
        specs.append(Spec(tok[i], width, right, tok[i + 1:]))
    return specs


def parse_long_format(fmt: str, default_width: int = 20) -> list[Spec]:
    """Parse a Slurm ``-O`` long format such as ``"JobID:10,State,Reason:.30"``.

    Each comma-separated item is ``Name[:[.]width[suffix]]``; without a width the
    field is ``default_width`` wide and left-justified. Keys are lower-cased.
    """
    specs: list[Spec] = []
    for tok in fmt.split(","):
        if not tok:
            continue
        name, sep, rest = tok.partition(":")
        if not sep:
            specs.append(Spec(name.lower(), default_width, False))
            continue
        right = rest.startswith(".")
        if right:
            rest = rest[1:]
        i = 0
        while i < len(rest) and rest[i].isdigit():
            i += 1
        width = int(rest[:i]) if i else 0
        specs.append(Spec(name.lower(), width, right, rest[i:]))
    return specs


def pad(value: Any, width: int, right: bool, cut: bool = True) -> str:
    """Print ``value`` the way Slurm's ``_print_str`` does.

    Width 0 prints the value as is. Otherwise the value is right- or left-justified
    in ``width`` columns and, when ``cut``, truncated to its first ``width`` chars.
    """
    s = "(null)" if value is None else str(value)
    if not width:
        return s
    if right:
        s = s.rjust(width)
    if cut:
        s = s[:width]
    return s.ljust(width)


def render_specs(specs: list[Spec], table: dict[str, Field], obj: Any) -> str:
    """Render one line: ``obj=None`` prints the headers instead of the values."""
    out: list[str] = []
    for sp in specs:
        if sp.key is not None:
            f = table[sp.key]
            if obj is None:
                out.append(pad(f.header, sp.width, sp.right, f.hcut))
            else:
                out.append(pad(f.getter(obj), sp.width, sp.right, f.cut))
        out.append(sp.suffix)
    return "".join(out)


def join_lines(lines: Iterable[str]) -> str:
    """The text to write for rendered lines: each one followed by a newline."""
    return "".join(line + "\n" for line in lines)


# ---------------------------------------------------------------------------
# Times and durations
# ---------------------------------------------------------------------------


def fmt_time(ts: float | None, none: str = "Unknown") -> str:
    """``slurm_make_time_str``: ``2026-12-02T10:43:07`` in local time, ``none`` if unset."""
    if ts is None or ts <= 0:
        return none
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ts))


def fmt_date_header(now: float) -> str:
    """The date line that ``squeue -l`` / ``sinfo -l`` print first: ``Wed Dec 02 10:43:11 2026``."""
    return time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now))


def fmt_cpu_time(secs: float | None) -> str | None:
    """sacct's ``_elapsed_time`` (TotalCPU, UserCPU, SystemCPU): ``00:00:00``, ``01:02.345``."""
    if secs is None:
        return None
    whole = int(secs)
    msec = int(round((secs - whole) * 1000))
    if msec >= 1000:
        whole, msec = whole + 1, msec - 1000
    from .slurmtime import dhms
    d, h, m, s = dhms(whole)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h:02d}:{m:02d}:{s:02d}"
    if msec:
        return f"{m:02d}:{s:02d}.{msec:03d}"
    return f"00:{m:02d}:{s:02d}"


# ---------------------------------------------------------------------------
# Numbers, memory and TRES strings
# ---------------------------------------------------------------------------

_UNITS = "\0KMGTPE"


def convert_num(value: float | int, unit: str = "M") -> str:
    """``convert_num_unit`` with ``CONVERT_NUM_UNIT_EXACT``: ``1000M``, ``2G``, ``125G``, ``0``.

    The value is only scaled up while it divides exactly by 1024, so ``32000`` MB stays
    ``32000M`` while ``128000`` MB becomes ``125G``. ``unit=""`` means a plain count.
    """
    v = int(value)
    if v == 0:
        return "0"
    idx = _UNITS.index(unit) if unit else 0
    while v >= 1024 and v % 1024 == 0 and idx < len(_UNITS) - 1:
        v //= 1024
        idx += 1
    return f"{v}{_UNITS[idx] if idx else ''}"


def tres_string(pairs: Iterable[tuple[str, Any]]) -> str:
    """Join ``(name, value)`` pairs as ``cpu=1,mem=1000M``; pairs with value None are dropped."""
    return ",".join(f"{k}={v}" for k, v in pairs if v is not None)


# ---------------------------------------------------------------------------
# Hostlists
# ---------------------------------------------------------------------------


def natural_key(name: str) -> tuple[tuple[int, str | int], ...]:
    """Sort key that orders ``node2`` before ``node10``."""
    key: list[tuple[int, str | int]] = []
    num = ""
    text = ""
    for ch in name:
        if ch.isdigit():
            if text:
                key.append((0, text))
                text = ""
            num += ch
        else:
            if num:
                key.append((1, int(num)))
                num = ""
            text += ch
    if text:
        key.append((0, text))
    if num:
        key.append((1, int(num)))
    return tuple(key)


# ---------------------------------------------------------------------------
# Job states
# ---------------------------------------------------------------------------

JOB_STATE_COMPACT: dict[str, str] = {
    "PENDING": "PD", "RUNNING": "R", "SUSPENDED": "S", "COMPLETING": "CG",
    "COMPLETED": "CD", "CANCELLED": "CA", "FAILED": "F", "TIMEOUT": "TO",
    "NODE_FAIL": "NF", "PREEMPTED": "PR", "BOOT_FAIL": "BF", "DEADLINE": "DL",
    "OUT_OF_MEMORY": "OOM", "CONFIGURING": "CF", "REQUEUED": "RQ", "REQUEUE_FED": "RF",
    "REQUEUE_HOLD": "RH", "RESIZING": "RS", "RESV_DEL_HOLD": "RD", "REVOKED": "RV",
    "SIGNALING": "SI", "SPECIAL_EXIT": "SE", "STAGE_OUT": "SO", "STOPPED": "ST",
}

#: States in which a job no longer holds (or never got) resources.
JOB_FINISHED = frozenset({
    "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
})


def job_state_compact(state: str | None) -> str:
    """``RUNNING`` -> ``R``, ``OUT_OF_MEMORY`` -> ``OOM`` (squeue ``%t``)."""
    return JOB_STATE_COMPACT.get(state or "", state or "")


# ---------------------------------------------------------------------------
# Node states (numeric model of Slurm 22.05's node_state bits)
# ---------------------------------------------------------------------------

NODE_UNKNOWN, NODE_DOWN, NODE_IDLE, NODE_ALLOCATED, NODE_ERROR, NODE_MIXED, NODE_FUTURE = range(7)
NODE_BASE = 0x0F
FLAG_NET = 0x10
FLAG_RES = 0x20
FLAG_CLOUD = 0x80
FLAG_DRAIN = 0x200
FLAG_COMPLETING = 0x400
FLAG_NO_RESPOND = 0x800
FLAG_POWERED_DOWN = 0x1000
FLAG_FAIL = 0x2000
FLAG_POWERING_UP = 0x4000
FLAG_MAINT = 0x8000
FLAG_REBOOT = 0x10000

_BASE_NAMES = {
    "UNKNOWN": NODE_UNKNOWN, "DOWN": NODE_DOWN, "IDLE": NODE_IDLE,
    "ALLOCATED": NODE_ALLOCATED, "ALLOC": NODE_ALLOCATED, "ERROR": NODE_ERROR,
    "MIXED": NODE_MIXED, "MIX": NODE_MIXED, "FUTURE": NODE_FUTURE,
}
_FLAG_NAMES = {
    "DRAIN": FLAG_DRAIN, "COMPLETING": FLAG_COMPLETING, "NOT_RESPONDING": FLAG_NO_RESPOND,
    "NO_RESPOND": FLAG_NO_RESPOND, "POWERED_DOWN": FLAG_POWERED_DOWN, "FAIL": FLAG_FAIL,
    "MAINTENANCE": FLAG_MAINT, "MAINT": FLAG_MAINT, "REBOOT_REQUESTED": FLAG_REBOOT,
    "RESERVED": FLAG_RES, "CLOUD": FLAG_CLOUD, "POWERING_UP": FLAG_POWERING_UP,
    "PERFCTRS": FLAG_NET,
}
#: Flag order of ``node_state_string_complete`` (scontrol show node ``State=``).
_FLAG_ORDER = (
    (FLAG_CLOUD, "CLOUD"), (FLAG_COMPLETING, "COMPLETING"), (FLAG_DRAIN, "DRAIN"),
    (FLAG_FAIL, "FAIL"), (FLAG_MAINT, "MAINTENANCE"), (FLAG_NET, "PERFCTRS"),
    (FLAG_POWERED_DOWN, "POWERED_DOWN"), (FLAG_REBOOT, "REBOOT_REQUESTED"),
    (FLAG_RES, "RESERVED"), (FLAG_NO_RESPOND, "NOT_RESPONDING"),
    (FLAG_POWERING_UP, "POWERING_UP"),
)


def node_state_code(state: str | None, *, cpus_alloc: int = 0, jobs: int = 0) -> int:
    """Turn an API node state (``IDLE``, ``MIXED``, ``DRAINED``, ``DRAINING``, ``DOWN*``,
    ``IDLE+DRAIN``, ``MIXED+COMPLETING`` ...) into Slurm's numeric state bits.

    ``DRAINED``/``DRAINING`` are Slurm's derived names: they become ``IDLE+DRAIN``
    or ``ALLOCATED/MIXED+DRAIN`` (``cpus_alloc``/``jobs`` tell which).
    """
    s = (state or "UNKNOWN").upper()
    code = 0
    base: int | None = None
    if s.endswith("*"):
        code |= FLAG_NO_RESPOND
        s = s[:-1]
    for part in s.split("+"):
        if part in _BASE_NAMES and base is None:
            base = _BASE_NAMES[part]
        elif part in ("DRAINED", "DRAIN") and base is None:
            code |= FLAG_DRAIN
        elif part == "DRAINING":
            code |= FLAG_DRAIN
            base = NODE_MIXED if base is None else base
        elif part in ("COMPLETING", "COMP"):
            code |= FLAG_COMPLETING
        elif part in _FLAG_NAMES:
            code |= _FLAG_NAMES[part]
    if base is None:
        if code & FLAG_DRAIN:
            base = NODE_MIXED if (cpus_alloc or jobs) else NODE_IDLE
        elif code & FLAG_COMPLETING:
            base = NODE_MIXED if cpus_alloc else NODE_IDLE
        else:
            base = NODE_UNKNOWN
    return code | base


#: node_state_string's words (`_LONG`) and node_state_string_compact's (`_COMPACT`), by meaning
_LONG = dict(maint="MAINTENANCE", reboot="REBOOT_REQUESTED", draining="DRAINING", drained="DRAINED",
             failing="FAILING", fail="FAIL", alloc="ALLOCATED", comp="COMPLETING", resv="RESERVED",
             mix="MIXED", future="FUTURE", unknown="UNKNOWN")
_COMPACT = dict(maint="MAINT", reboot="BOOT", draining="DRNG", drained="DRAIN", failing="FAILG", fail="FAIL",
                alloc="ALLOC", comp="COMP", resv="RESV", mix="MIX", future="FUTR", unknown="UNK")


def _node_state(code: int, word: dict[str, str]) -> str:
    """A node's state as `node_state_string` (or, with `_COMPACT`, its compact form) words it."""
    base = code & NODE_BASE
    star = "*" if code & FLAG_NO_RESPOND else ""
    busy = base in (NODE_ALLOCATED, NODE_MIXED) or code & FLAG_COMPLETING
    if code & FLAG_MAINT and not (code & FLAG_DRAIN or base in (NODE_ALLOCATED, NODE_DOWN, NODE_MIXED)):
        return word["maint"] + star
    if code & FLAG_REBOOT:
        return word["reboot"] + star
    if code & FLAG_DRAIN:
        return word["draining" if busy else "drained"] + star
    if code & FLAG_FAIL:
        return word["failing" if (code & FLAG_COMPLETING or base == NODE_ALLOCATED) else "fail"] + star
    if base == NODE_DOWN:
        return "DOWN" + (star or ("~" if code & FLAG_POWERED_DOWN else ""))
    if base == NODE_ALLOCATED:
        return word["alloc"] + (star or ("+" if code & FLAG_COMPLETING else ""))
    if code & FLAG_COMPLETING:
        return word["comp"] + star
    if base == NODE_IDLE:
        if star:
            return "IDLE*"
        if code & FLAG_POWERED_DOWN:
            return "IDLE~"
        if code & FLAG_POWERING_UP:
            return "IDLE#"
        if code & FLAG_RES:
            return word["resv"]
        return "IDLE"
    if base == NODE_MIXED:
        return word["mix"] + star
    if base == NODE_FUTURE:
        return word["future"] + star
    if base == NODE_ERROR:
        return "ERROR" + star
    return word["unknown"] + star


def node_state_long(code: int) -> str:
    """``node_state_string``: ``IDLE``, ``MIXED``, ``DRAINING``, ``DOWN*``, ``COMPLETING``..."""
    return _node_state(code, _LONG)


def node_state_compact(code: int) -> str:
    """``node_state_string_compact``: ``IDLE``, ``MIX``, ``ALLOC``, ``DRNG``, ``COMP``, ``DOWN*``..."""
    return _node_state(code, _COMPACT)


def node_state_complete(code: int) -> str:
    """``node_state_string_complete`` (scontrol ``State=``): ``MIXED``, ``IDLE+DRAIN``,
    ``DOWN+NOT_RESPONDING``."""
    base, flags = node_state_parts(code)
    return "+".join([base, *flags])


_BASE_WORDS = {NODE_UNKNOWN: "UNKNOWN", NODE_DOWN: "DOWN", NODE_IDLE: "IDLE", NODE_ALLOCATED: "ALLOCATED",
               NODE_ERROR: "ERROR", NODE_MIXED: "MIXED", NODE_FUTURE: "FUTURE"}


def node_state_parts(code: int) -> tuple[str, list[str]]:
    """The base state (``IDLE``, ``MIXED``, ``DOWN``...) and the flags (``DRAIN``, ``NOT_RESPONDING``...)
    of ``node_state_string_complete``, apart (`sinfo --json`'s ``state`` and ``state_flags``)."""
    return _BASE_WORDS.get(code & NODE_BASE, "UNKNOWN"), [name for bit, name in _FLAG_ORDER if code & bit]


def node_is_other(code: int) -> bool:
    """Nodes that sinfo counts as "other" in A/I/O/T: down, drained/draining, failed."""
    return (code & NODE_BASE) == NODE_DOWN or bool(code & (FLAG_DRAIN | FLAG_FAIL))


def node_is_alloc(code: int) -> bool:
    """Nodes that sinfo counts as "allocated" in A/I/O/T."""
    return (code & NODE_BASE) in (NODE_ALLOCATED, NODE_MIXED) or bool(code & FLAG_COMPLETING)
