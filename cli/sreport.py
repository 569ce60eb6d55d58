"""sreport: `cluster utilization` and `user topusage` over the accounting data, in Slurm 22.05's
layout (tests/data/slurm-2205-sreport.md). Down, PLND Down and Planned time are not recorded here
(they read 0); the figures come from the job records, not hourly rollups."""

from __future__ import annotations

import sys
import time

from slurmlet.cli import http

RULE = "-" * 80
UNITS = {"seconds": ("CPU Seconds", 1), "minutes": ("CPU Minutes", 60), "hours": ("CPU Hours", 3600)}
PER = {"secper": "seconds", "minper": "minutes", "hourper": "hours"}


def _hour(t: float) -> float:
    lt = time.localtime(t)
    return time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, lt.tm_hour, 0, 0, 0, 0, -1))


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def _when(value: str, now: float) -> float | None:
    """A start=/end= time; None where it names none (empty), or is refused (parse_time's line said)."""
    from slurmlet.cli.sacct import parse_when
    from slurmlet.common.grammar import OptError
    try:
        return parse_when(value, now) or None
    except OptError as e:
        print(*e.lines, sep="\n", file=sys.stderr)
        return None


def window(args: dict[str, str], now: float) -> tuple[float, float]:
    """start=/end= (sacct's time forms), whole hours as the rollups are; by default yesterday."""
    lt = time.localtime(now)
    midnight = time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, 0, 0, 0, 0, 0, -1))
    start, end = midnight - 86400, midnight
    if "start" in args:  # a bad time is said and the default kept, as 22.05 does
        got = _when(args["start"], now)
        if got is not None:
            start = got
            end = now if "end" not in args else end
    if "end" in args:
        got = _when(args["end"], now)
        if got is not None:
            end = got
    start, end = _hour(start), _hour(end)  # (an end past now counts up to now)
    if end <= start:
        end = start + 3600
    return start, end


def fmt_value(secs: float, unit: str, base: float) -> str:
    """A figure in the chosen unit (rounded to the nearest), a percentage of `base`, or both."""
    if unit == "percent":
        return f"{(100.0 * secs / base) if base else 0.0:.2f}%"
    if unit in PER:
        return f"{fmt_value(secs, PER[unit], base)}({fmt_value(secs, 'percent', base)})"
    return str(int(secs / UNITS[unit][1] + 0.5))


def _title(unit: str) -> str:
    if unit == "percent":
        return "Percentage of Total"
    if unit in PER:
        return f"{UNITS[PER[unit]][0]}/Percentage of Total"
    return UNITS[unit][0]


def table(heads: list[tuple[str, int]], rows: list[list[str]], parsable: str | None, noheader: bool) -> list[str]:
    """sreport's columns: right-aligned, header cut to the width; `-p`/`-P` delimited."""
    out = []
    if parsable:
        end = "|" if parsable == "p" else ""
        if not noheader:
            out.append("|".join(h for h, _ in heads) + end)
        out += ["|".join(r) + end for r in rows]
        return out
    if not noheader:
        out.append("".join(f"{h[:w]:>{w}} " for h, w in heads))
        out.append("".join("-" * w + " " for _, w in heads))
    out += ["".join(f"{v:>{w}} " for v, (_, w) in zip(r, heads)) for r in rows]
    return out


def main(argv: list[str]) -> int:
    unit, parsable, noheader = "minutes", None, False
    words: list[str] = []
    it = iter(argv)
    for a in it:
        if a in ("-t", "--time-format") or a.startswith("--time-format="):
            value = a.split("=", 1)[1] if "=" in a else next(it, "")
            unit = value.lower()
        elif a.startswith("-t") and len(a) > 2:
            unit = a[2:].lower()
        elif a in ("-p", "--parsable"):
            parsable = "p"
        elif a in ("-P", "--parsable2"):
            parsable = "P"
        elif a in ("-n", "--noheader"):
            noheader = True
        elif a in ("-h", "--help", "--usage"):
            from slurmlet.cli.helptext import text
            sys.stdout.write(text("sreport", "usage" if a == "--usage" else "help"))
            return 0
        elif a in ("-V", "--version"):
            print("slurm-wlm 22.05.8")
            return 0
        else:
            words.append(a)
    if unit not in UNITS and unit not in PER and unit != "percent":
        print(f"unknown time format {unit}", file=sys.stderr)
        return 1
    opts = {}
    plain = []
    for w in words:
        k, eq, v = w.partition("=")
        if eq:
            opts[k.lower()] = v
        else:
            plain.append(w.lower())
    if len(plain) < 2 or (plain[0], plain[1]) not in (("cluster", "utilization"), ("user", "topusage")):
        print(f"invalid keyword: {plain[-1] if plain else ''}" if plain else "no command given", file=sys.stderr)
        return 1
    now = time.time()
    start, end = window(opts, now)
    top = int(opts.get("topcount", "10")) if opts.get("topcount", "10").isdigit() else 10
    got = http.request("GET", f"/api/v1/reports/usage?start={start}&end={end}&top={top}")
    lines: list[str] = []
    if plain[0] == "cluster":
        if not noheader:
            lines += [RULE, f"Cluster Utilization {_iso(start)} - {_iso(end - 1)}", f"Usage reported in {_title(unit)}",
                      RULE]
        wide = unit in PER
        names = ["Allocated", "Down", "PLND Down", "Idle", "Planned", "Reported"]
        heads = [("Cluster", 9)] + [(n, 17 if wide else 8) for n in names]
        base = got["reported"]
        vals = [got["allocated"], got["down"], got["planned_down"], got["idle"], got["planned"]]
        row = [got["cluster"], *(fmt_value(v, unit, base) for v in vals),
               fmt_value(got["reported"], unit, got["total"])]
        lines += table(heads, [row] if got["reported"] else [], parsable, noheader)
    else:
        if not noheader:
            lines += [RULE, f"Top {top} Users {_iso(start)} - {_iso(end - 1)} ({int(end - start)} secs)",
                      f"Usage reported in {_title(unit)}", RULE]
        heads = [("Cluster", 9), ("Login", 9), ("Proper Name", 15), ("Account", 15), ("Used", 17 if unit in PER else 8),
                 ("Energy", 8)]
        rows = [[got["cluster"], t["user"], _proper_name(t["user"]), t["account"],
                 fmt_value(t["used"], unit, got["reported"]), "0"] for t in got["top"]]
        lines += table(heads, rows, parsable, noheader)
    sys.stdout.write("".join(x + "\n" for x in lines))
    return 0


def _proper_name(user: str) -> str:
    """The user's full name from the passwd entry (its GECOS field up to the first comma)."""
    import pwd
    try:
        return pwd.getpwnam(user).pw_gecos.split(",")[0] or user
    except KeyError:
        return user
