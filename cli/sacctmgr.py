"""sacctmgr: clusters, accounts, users, associations and QOS in the accounting database.

    sacctmgr [-i] [-n] [-P|-p] [-Q] add|modify|delete|show|list ENTITY [NAMES] [where ...] [set ...]
             [format=F1,F2%W,...] [withassoc]

Without -i, sacctmgr shows what a change would do and asks before it commits it (a line
starting with y on standard input commits; anything else, or none, discards).
"""

from __future__ import annotations

import sys

from slurmlet.cli import http
from slurmlet.cli.printfields import lines, pick

TYPE_CHECKING = False  # keep typing out of sacctmgr's import path
if TYPE_CHECKING:
    from typing import Any

ACTIONS = {"add": "add", "create": "add", "modify": "modify", "update": "modify", "delete": "delete",
           "remove": "delete", "show": "show", "list": "show"}
ENTITIES = {"cluster": "cluster", "clusters": "cluster", "account": "account", "accounts": "account",
            "user": "user", "users": "user", "qos": "qos", "association": "assoc", "associations": "assoc",
            "assoc": "assoc", "assocs": "assoc", "tres": "tres"}
_API = {"cluster": "clusters", "account": "accounts", "user": "users", "qos": "qos", "assoc": "assocs"}


def _mins(m):  # noqa: ANN001, ANN202 - minutes -> Slurm's [D-]HH:MM:SS
    if m is None:
        return None
    d, rest = divmod(int(m), 1440)
    h, mm = divmod(rest, 60)
    return f"{d}-{h:02d}:{mm:02d}:00" if d else f"{h:02d}:{mm:02d}:00"


def _secs(s):  # noqa: ANN001, ANN202
    if s is None:
        return None
    d, rest = divmod(int(s), 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:{sec:02d}" if d else f"{h:02d}:{m:02d}:{sec:02d}"


def _g(key: str):  # noqa: ANN202
    return lambda r: r.get(key)


ASSOC_FIELDS = {
    "cluster": ("Cluster", 10, _g("cluster")), "account": ("Account", 10, _g("account")),
    "user": ("User", 10, _g("user")), "partition": ("Partition", 10, _g("partition")),
    "share": ("Share", 9, _g("shares")), "fairshare": ("Share", 9, _g("shares")),
    "priority": ("Priority", 10, _g("priority")), "grpjobs": ("GrpJobs", 7, _g("GrpJobs")),
    "grptres": ("GrpTRES", 13, _g("GrpTRES")), "grpsubmit": ("GrpSubmit", 9, _g("GrpSubmitJobs")),
    "grpsubmitjobs": ("GrpSubmit", 9, _g("GrpSubmitJobs")), "grpwall": ("GrpWall", 11, lambda r: None),
    "grptresmins": ("GrpTRESMins", 13, lambda r: None), "maxjobs": ("MaxJobs", 7, _g("MaxJobs")),
    "maxtres": ("MaxTRES", 13, _g("MaxTRES")), "maxtrespernode": ("MaxTRESPerNode", 14, lambda r: None),
    "maxsubmit": ("MaxSubmit", 9, _g("MaxSubmitJobs")), "maxsubmitjobs": ("MaxSubmit", 9, _g("MaxSubmitJobs")),
    "maxwall": ("MaxWall", 11, lambda r: _mins(r.get("MaxWall"))),
    "maxtresmins": ("MaxTRESMins", 13, lambda r: None),
    "qos": ("QOS", 20, lambda r: ",".join(sorted(r.get("qos") or []))),
    "defaultqos": ("Def QOS", 9, _g("default_qos")), "grptresrunmins": ("GrpTRESRunMins", 13, lambda r: None),
    "parentname": ("ParentName", 10, _g("parent")), "id": ("ID", 6, _g("id")),
}
ASSOC_DEFAULT = ("Cluster,Account,User,Partition,Share,Priority,GrpJobs,GrpTRES,GrpSubmit,GrpWall,GrpTRESMins,"
                 "MaxJobs,MaxTRES,MaxTRESPerNode,MaxSubmit,MaxWall,MaxTRESMins,QOS,DefaultQOS,GrpTRESRunMins")
ACCOUNT_FIELDS = {"account": ("Account", 10, _g("account")), "description": ("Descr", 20, _g("description")),
                  "descr": ("Descr", 20, _g("description")), "organization": ("Org", 20, _g("organization")),
                  "org": ("Org", 20, _g("organization"))}
USER_FIELDS = {"user": ("User", 10, _g("user")), "defaultaccount": ("Def Acct", 10, _g("default_account")),
               "defaultacct": ("Def Acct", 10, _g("default_account")),
               "adminlevel": ("Admin", 9, _g("admin_level")), "admin": ("Admin", 9, _g("admin_level"))}
QOS_FIELDS = {
    "name": ("Name", 10, _g("name")), "id": ("ID", 6, _g("id")), "description": ("Descr", 11, _g("description")),
    "priority": ("Priority", 10, _g("priority")),
    "gracetime": ("GraceTime", 10, lambda r: _secs(r.get("grace_time") or 0)),
    "preempt": ("Preempt", 10, lambda r: ",".join(r.get("preempt") or [])),
    "preemptexempttime": ("PreemptExemptTime", 19, lambda r: _secs(r.get("preempt_exempt_time"))),
    "preemptmode": ("PreemptMode", 11, _g("preempt_mode")),
    "flags": ("Flags", 20, lambda r: ",".join(r.get("flags") or [])),  # 40 wide in the default list
    "usagethreshold": ("UsageThres", 10, lambda r: None),
    "usagefactor": ("UsageFactor", 11, lambda r: f"{r.get('usage_factor', 1.0):.6f}"),
    "grptres": ("GrpTRES", 13, _g("GrpTRES")), "grptresmins": ("GrpTRESMins", 13, lambda r: None),
    "grptresrunmins": ("GrpTRESRunMins", 13, lambda r: None), "grpjobs": ("GrpJobs", 7, _g("GrpJobs")),
    "grpsubmit": ("GrpSubmit", 9, _g("GrpSubmitJobs")), "grpsubmitjobs": ("GrpSubmit", 9, _g("GrpSubmitJobs")),
    "grpwall": ("GrpWall", 11, lambda r: None), "maxtres": ("MaxTRES", 13, _g("MaxTRESPerJob")),
    "maxtresperjob": ("MaxTRES", 13, _g("MaxTRESPerJob")), "maxtrespernode": ("MaxTRESPerNode", 14, lambda r: None),
    "maxtresmins": ("MaxTRESMins", 13, lambda r: None),
    "maxwall": ("MaxWall", 11, lambda r: _mins(r.get("MaxWall"))),
    "maxtrespu": ("MaxTRESPU", 13, _g("MaxTRESPerUser")), "maxtresperuser": ("MaxTRESPU", 13, _g("MaxTRESPerUser")),
    "maxjobspu": ("MaxJobsPU", 9, _g("MaxJobsPerUser")), "maxjobsperuser": ("MaxJobsPU", 9, _g("MaxJobsPerUser")),
    "maxsubmitpu": ("MaxSubmitPU", 11, _g("MaxSubmitJobsPerUser")),
    "maxsubmitjobsperuser": ("MaxSubmitPU", 11, _g("MaxSubmitJobsPerUser")),
    "maxtrespa": ("MaxTRESPA", 13, lambda r: None), "maxjobspa": ("MaxJobsPA", 9, lambda r: None),
    "maxsubmitpa": ("MaxSubmitPA", 11, lambda r: None), "mintres": ("MinTRES", 13, lambda r: None),
}
QOS_DEFAULT = ("Name,Priority,GraceTime,Preempt,PreemptExemptTime,PreemptMode,Flags%40,UsageThreshold,UsageFactor,"
               "GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,GrpSubmit,GrpWall,MaxTRES,MaxTRESPerNode,MaxTRESMins,"
               "MaxWall,MaxTRESPU,MaxJobsPU,MaxSubmitPU,MaxTRESPA,MaxJobsPA,MaxSubmitPA,MinTRES")
CLUSTER_FIELDS = {"cluster": ("Cluster", 10, _g("cluster")), "controlhost": ("ControlHost", 15, _g("host")),
                  "controlport": ("ControlPort", 12, _g("port")), "rpc": ("RPC", 5, _g("rpc")),
                  "share": ("Share", 9, _g("shares")), "fairshare": ("Share", 9, _g("shares")),
                  "grpjobs": ("GrpJobs", 7, _g("GrpJobs")), "grptres": ("GrpTRES", 13, _g("GrpTRES")),
                  "grpsubmit": ("GrpSubmit", 9, _g("GrpSubmitJobs")), "maxjobs": ("MaxJobs", 7, _g("MaxJobs")),
                  "maxtres": ("MaxTRES", 13, _g("MaxTRES")), "maxsubmit": ("MaxSubmit", 9, _g("MaxSubmitJobs")),
                  "maxwall": ("MaxWall", 11, lambda r: _mins(r.get("MaxWall"))),
                  "qos": ("QOS", 20, lambda r: ",".join(r.get("qos") or [])),
                  "defaultqos": ("Def QOS", 9, _g("default_qos"))}
CLUSTER_DEFAULT = ("Cluster,ControlHost,ControlPort,RPC,Share,GrpJobs,GrpTRES,GrpSubmit,MaxJobs,MaxTRES,MaxSubmit,"
                   "MaxWall,QOS,DefaultQOS")
#: the older per-resource limit columns `withassoc` listings still show (empty here)
_OLD_LIMITS = {k.lower(): (k, w, lambda r: None) for k, w in (
    ("MaxNodes", 8), ("MaxCPUs", 8), ("MaxCPUMins", 11), ("GrpNodes", 8), ("GrpCPUs", 8), ("GrpMem", 7),
    ("GrpCPUMins", 11))}
TABLES = {"assoc": (ASSOC_FIELDS, ASSOC_DEFAULT), "account": (ACCOUNT_FIELDS, "Account,Description,Organization"),
          "user": (USER_FIELDS, "User,DefaultAccount,AdminLevel"), "qos": (QOS_FIELDS, QOS_DEFAULT),
          "cluster": (CLUSTER_FIELDS, CLUSTER_DEFAULT)}

USAGE = """sacctmgr [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -h or --help: equivalent to "help" command
     -i or --immediate: commit changes immediately
     -n or --noheader: no header will be added to the beginning of output
     -p or --parsable: output will be '|' delimited with a '|' at the end
     -P or --parsable2: output will be '|' delimited without a '|' at the end
     -Q or --quiet: equivalent to "quiet" command
     -s or --associations: equivalent to "associations" command
     -V or --version: equivalent to "version" command

  <keyword> may be omitted from the execute line and sacctmgr will execute
  in interactive mode. It will process commands as entered until explicitly
  terminated.

    Valid <COMMAND> values are:
     add <ENTITY> <SPECS>     add entity
     delete <ENTITY> where <SPECS>  delete the specified entity(s)
     list <ENTITY> [<SPECS>]  display info of identified entity, default is display all.
     modify <ENTITY> where <SPECS> set <SPECS>  modify entity
     show                     same as list

  <ENTITY> may be "account", "association", "cluster", "qos" or "user".
"""


def _err(msg: str) -> int:
    for line in msg.splitlines() or [msg]:
        print(line, file=sys.stderr)
    return 1


def _no_entity(verb: str) -> int:
    word = {"show": "list"}.get(verb.lower(), verb.lower())
    return _err(f"No valid entity in {word} command\n"
                "Input line must include \"Account\", \"Association\", \"Cluster\", \"Configuration\",\n"
                "\"Event\", \"Federation\", \"Problem\", \"QOS\", \"Resource\", \"Reservation\",\n"
                "\"RunAwayJobs\", \"Stats\", \"Transaction\", \"TRES\", \"User\", or \"WCKey\"")


def parse(words: list[str]) -> tuple[list[str], dict[str, str], dict[str, str], dict[str, str]]:
    """NAMES, where-conditions, set-values and options (format, withassoc) of a command line."""
    names: list[str] = []
    where: dict[str, str] = {}
    sets: dict[str, str] = {}
    opts: dict[str, str] = {}
    mode = None
    for w in words:
        lw = w.lower()
        if lw == "where":
            mode = "where"
            continue
        if lw == "set":
            mode = "set"
            continue
        if lw in ("withassoc", "withassocs", "withdeleted", "withcoordinators", "withsubaccounts", "tree"):
            opts[lw] = "1"
            continue
        if "=" not in w:
            names.extend(x for x in w.split(",") if x)
            continue
        key, _, value = w.partition("=")
        value = value.strip().strip('"').strip("'")
        k = key.strip().lower()
        if k in ("format", "formats"):
            opts["format"] = value
            continue
        if k in ("name", "names", "users", "accounts", "clusters") and mode != "set":
            k = "name" if k in ("name", "names") or mode is None else k
            if k == "name" and mode is None:
                names.extend(x for x in value.split(",") if x)
                continue
        (sets if mode == "set" else where)[k] = value
    return names, where, sets, opts


def main(argv: list[str]) -> int:
    flags: set[str] = set()
    rest: list[str] = []
    long = {"--immediate": "i", "--noheader": "n", "--parsable": "p", "--parsable2": "P", "--quiet": "Q",
            "--associations": "s", "--version": "V", "--help": "h", "--usage": "h", "--verbose": "v",
            "--readonly": "r"}
    for a in argv:  # options may come anywhere, as getopt permutes them
        if not a.startswith("-") or a == "-" or "=" in a:
            rest.append(a)
        elif a in long:
            flags.add(long[a])
        elif a.startswith("--"):
            return _err(f"sacctmgr: unrecognized option '{a}'\nTry \"sacctmgr --help\" for more information")
        else:
            for ch in a[1:]:
                if ch not in "inpPQsVhvr":
                    return _err(f"sacctmgr: invalid option -- '{ch}'\nTry \"sacctmgr --help\" for more information")
                flags.add(ch)
    if "V" in flags:
        print("slurm 22.05.8")
        return 0
    if "h" in flags:  # 22.05's text (cli/help/)
        from slurmlet.cli.helptext import text
        sys.stdout.write(text("sacctmgr", "help"))
        return 0
    if not rest:
        sys.stdout.write(USAGE)
        return 1
    action = ACTIONS.get(rest[0].lower())
    if action is None:
        return _err(f"invalid keyword: {rest[0]}")
    if len(rest) < 2:
        return _no_entity(rest[0])
    entity = ENTITIES.get(rest[1].lower())
    if entity is None:
        return _no_entity(rest[0])
    names, where, sets, opts = parse(rest[2:])
    if action == "show":
        return _show(entity, names, where, opts, flags)
    if entity in ("assoc", "tres"):
        return _err(f"sacctmgr {action} {rest[1]} is not supported: use 'user' or 'account'")
    if action == "add":
        sets = {**where, **sets}
        if not names:
            return _err(f" Need name of {entity} to add.")
        return _change(entity, "add", {"names": names, "set": sets}, flags)
    if not names and not where:
        return _err(" No conditions given to remove, not executing." if action == "delete"
                    else f" No conditions given to {action}, not executing.")
    body = {"names": names, "where": where}
    if action == "modify":
        if not sets:
            return _err(" You didn't give me anything to set")
        body["set"] = sets
    return _change(entity, action, body, flags)


_NOTHING = {"add": " Nothing new added.", "modify": " Nothing modified", "delete": " Nothing deleted"}
#: refusals sacctmgr prints on standard output (the rest go to standard error)
_STDOUT_ERRORS = (" Unknown option", " Can't modify")


#: how sacctmgr names what it could not add
_ADDED = {"account": "accounts", "user": "users", "qos": "QOS", "cluster": "clusters", "association": "associations"}


def _refused(entity: str, action: str, path: str, body: dict, flags: set[str], error: str) -> int:
    """A user who is no administrator: an add still shows what it would have added (sacctmgr
    prints that before it asks the database), then the refusal; a modify or delete only the refusal."""
    if action == "add":
        try:
            report = http.request("POST", path, dict(body, commit=False))["done"]
        except http.ControllerError:
            report = []
        if "Q" not in flags:
            sys.stdout.write("".join(line + "\n" for line in report))
        print(f" Problem adding {_ADDED.get(entity, entity)}: {error}", file=sys.stderr)
    else:
        print(f" Error with request: {error}", file=sys.stderr)
    return 1


def _change(entity: str, action: str, body: dict, flags: set[str]) -> int:
    path = f"/api/v1/accounting/{entity}/{action}"
    immediate = "i" in flags
    try:
        report = http.request("POST", path, dict(body, commit=immediate))["done"]
    except http.ControllerError as e:
        if e.status == 403:
            return _refused(entity, action, path, body, flags, e.error)
        text = e.error
        lines_ = text.splitlines()
        # "You gave a bad qos" comes on stderr before an "Unknown option" on stdout
        err = [ln for ln in lines_ if ln.startswith("sacctmgr: error:")]
        rest = [ln for ln in lines_ if not ln.startswith("sacctmgr: error:")]
        for ln in err:
            print(ln, file=sys.stderr)
        if rest:
            print("\n".join(rest), file=sys.stdout if rest[0].startswith(_STDOUT_ERRORS) else sys.stderr)
        return 1
    if not report:
        print(_NOTHING[action])
        return 1
    if "Q" not in flags:
        sys.stdout.write("".join(line + "\n" for line in report))
    if immediate:
        return 0
    sys.stdout.write("Would you like to commit changes? (You have 30 seconds to decide)\n(N/y): ")
    sys.stdout.flush()
    answer = sys.stdin.readline()
    if not answer.strip().lower().startswith("y"):
        print("\n Changes Discarded")
        return 0
    print()
    http.request("POST", path, dict(body, commit=True))
    return 0


def _show(entity: str, names: list[str], where: dict[str, str], opts: dict[str, str], flags: set[str]) -> int:
    if entity == "tres":
        rows: list[dict[str, Any]] = [
            {"type": t.split("/")[0], "name": t.split("/")[1] if "/" in t else "", "id": i}
            for t, i in (("cpu", 1), ("mem", 2), ("energy", 3), ("node", 4), ("billing", 5), ("fs/disk", 6),
                         ("vmem", 7), ("pages", 8), ("gres/gpu", 1001))]
        cols = [("Type", 8, _g("type")), ("Name", 15, _g("name")), ("ID", 6, _g("id"))]
        parsable = "P" if "P" in flags else ("p" if "p" in flags else None)
        sys.stdout.write("".join(line + "\n" for line in lines(cols, rows, parsable=parsable, noheader="n" in flags)))
        return 0
    fields, default = TABLES[entity]
    with_assoc = ("withassoc" in opts or "s" in flags) and entity in ("user", "account")
    if with_assoc:
        if entity == "user":
            default = ("User,DefaultAccount,AdminLevel,Cluster,Account,Partition,Share,Priority,MaxJobs,MaxNodes,"
                       "MaxCPUs,MaxSubmit,MaxWall,MaxCPUMins,QOS,DefaultQOS")
        else:
            default = ("Account,Description,Organization,Cluster,ParentName,User,Share,Priority,GrpJobs,GrpNodes,"
                       "GrpCPUs,GrpMem,GrpSubmit,GrpWall,GrpCPUMins,MaxJobs,MaxNodes,MaxCPUs,MaxSubmit,MaxWall,"
                       "MaxCPUMins,QOS,DefaultQOS")
        fields = {**ASSOC_FIELDS, **fields, **_OLD_LIMITS}
        if entity == "user":
            fields["account"] = ASSOC_FIELDS["account"]
    elif entity == "assoc" and "tree" in opts:  # accounts indented by their depth, left-justified
        fields = dict(fields, account=("Account", -20, lambda r: " " * r.get("depth", 0) + r["account"]))
    try:
        cols = pick(fields, opts.get("format"), default, "sacctmgr")
    except ValueError as e:
        return _err(f" {e}")
    rows = http.request("GET", f"/api/v1/accounting/{_API[entity]}")[_API[entity]]
    key = {"assoc": "account", "account": "account", "user": "user", "qos": "name", "cluster": "cluster"}[entity]
    want = set(names) | set(x for x in where.pop("name", "").split(",") if x)
    if want:
        rows = [r for r in rows if r.get(key) in want]
    for cond, field in (("user", "user"), ("users", "user"), ("account", "account"), ("accounts", "account"),
                        ("partition", "partition"), ("cluster", "cluster"), ("parent", "parent")):
        if cond in where:
            vals = set(where.pop(cond).split(","))
            rows = [r for r in rows if (r.get(field) or "") in vals]
    if with_assoc:
        assocs = http.request("GET", "/api/v1/accounting/assocs")["assocs"]
        joined: list[dict[str, Any]] = []
        for r in rows:
            mine = [a for a in assocs if (a["user"] == r["user"] if entity == "user"
                                          else a["account"] == r["account"])]
            if entity == "account":  # the account's own association, then its users'
                mine.sort(key=lambda a: (bool(a["user"]), a["user"]))
            joined.extend({**a, **r, "account": a["account"], "user": a["user"], "parent": a["parent"]}
                          for a in mine) if mine else joined.append(r)
        rows = joined
    if entity == "assoc" and "tree" in opts:
        parent: dict[str, str] = {r["account"]: r["parent"] for r in rows if not r["user"]}

        def depth(acct: str) -> int:
            d = 0
            while parent.get(acct):
                acct, d = parent[acct], d + 1
            return d
        rows = [dict(r, depth=depth(r["account"]) + (1 if r["user"] else 0)) for r in rows]
    parsable = "P" if "P" in flags else ("p" if "p" in flags else None)
    out = lines(cols, rows, parsable=parsable, noheader="n" in flags)
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0
