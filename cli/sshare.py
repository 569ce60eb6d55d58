"""sshare: the fair-share tree (shares, usage and factors of accounts and users).

    sshare [-a] [-l] [-A accounts] [-u users] [-P|-p] [-n] [-o format]
"""

from __future__ import annotations

import sys

from slurmlet.cli import common, http
from slurmlet.cli.argv import Opt
from slurmlet.cli.printfields import lines, pick

TABLE: list[Opt] = [
    ("a", "all", 0, "all"), ("l", "long", 0, "long"), ("A", "accounts", 1, "accounts"), ("u", "users", 1, "users"),
    ("P", "parsable2", 0, "parsable2"), ("p", "parsable", 0, "parsable"), ("n", "noheader", 0, "noheader"),
    ("o", "format", 1, "format"), ("M", "clusters", 1, "clusters"), ("h", "help", 0, "help"),
    ("V", "version", 0, "version"), ("", "usage", 0, "usage"), ("v", "verbose", 0, "verbose"),
    ("e", "helpformat", 0, "helpformat"), ("m", "partition", 0, "partition"),
]
USAGE = "Usage:  sshare [OPTION]"


def _f(v):  # noqa: ANN001, ANN202
    if v is None:
        return None
    return v if isinstance(v, str) else f"{v:.6f}"


FIELDS = {
    "account": ("Account", -20, lambda r: " " * r["depth"] + r["account"]),
    "user": ("User", 10, lambda r: r["user"] or None),
    "rawshares": ("RawShares", 10, lambda r: r["raw_shares"] if r["depth"] else None),
    "normshares": ("NormShares", 11, lambda r: _f(r["norm_shares"])),
    "rawusage": ("RawUsage", 11, lambda r: int(r["raw_usage"])),
    "normusage": ("NormUsage", 11, lambda r: _f(r["norm_usage"]) if r["depth"] else None),
    "effectvusage": ("EffectvUsage", 13, lambda r: _f(r["effective_usage"])),
    "fairshare": ("FairShare", 10, lambda r: _f(r["fairshare"])),
    "levelfs": ("LevelFS", 10, lambda r: _f(r["level_fs"])),
    "grptresmins": ("GrpTRESMins", 30, lambda r: None),
    "tresrunmins": ("TRESRunMins", 30, lambda r: r.get("tres_run_mins")),
}
DEFAULT = "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare"
LONG = "Account,User,RawShares,NormShares,RawUsage,NormUsage,EffectvUsage,FairShare,LevelFS,GrpTRESMins,TRESRunMins"
LONG_CLASSIC = LONG.replace("LevelFS,", "")  #: no LevelFS without Fair Tree


def main(argv: list[str]) -> int:
    res = common.command_options("sshare", argv, TABLE, USAGE, help_hint=False)
    if isinstance(res, int):
        return res
    o, _pos = res
    if "helpformat" in o:
        print(" ".join(c[0] for c in (FIELDS[k] for k in FIELDS)))
        return 0
    doc = http.request("GET", "/api/v1/shares")
    rows = doc["shares"]
    long = "long" in o
    fmt = ",".join(common.split_list(o["format"])) if "format" in o else None
    try:
        cols = pick(FIELDS, fmt, (LONG if doc["fair_tree"] else LONG_CLASSIC) if long else DEFAULT, "sshare")
    except ValueError as e:
        print(f"sshare: error: {e}", file=sys.stderr)
        return 1
    users = set(common.split_list(o.get("users", [])))
    accounts = set(common.split_list(o.get("accounts", [])))
    if "all" not in o and not users:
        users = {common.current_user()}
    keep = []
    for r in rows:
        if r["user"]:
            if "all" not in o and r["user"] not in users:
                continue
            if "all" in o and users and r["user"] not in users:
                continue
        if accounts and r["depth"] and r["account"] not in accounts:
            continue
        keep.append(r)
    parsable = "P" if "parsable2" in o else ("p" if "parsable" in o else None)
    out = lines(cols, keep, parsable=parsable, noheader="noheader" in o)
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0
