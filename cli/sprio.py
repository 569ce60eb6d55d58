"""sprio: the multifactor priority components of pending jobs."""

from __future__ import annotations

import sys

from slurmlet.cli import common, http
from slurmlet.cli.argv import Opt

TABLE: list[Opt] = [
    ("h", "noheader", 0, "noheader"), ("j", "jobs", 2, "jobs"), ("l", "long", 0, "long"),
    ("n", "norm", 0, "norm"), ("o", "format", 1, "format"), ("p", "partition", 1, "partition"),
    ("u", "user", 1, "user"), ("w", "weights", 0, "weights"), ("v", "verbose", 0, "verbose"),
    ("V", "version", 0, "version"), ("", "help", 0, "help"), ("", "usage", 0, "usage"),
    ("M", "clusters", 1, "clusters"), ("S", "sort", 1, "sort"),
]
USAGE = "Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions] [--usage] [-hlnvVw]"
DEFAULT = "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q"
LONG = "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T"
WEIGHTS = "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q"


def _fields() -> dict:
    from slurmlet.common.fmt import Field
    g = lambda k: (lambda r: r.get(k, ""))  # noqa: E731
    return {
        "i": Field("JOBID", g("job_id")), "r": Field("PARTITION", g("partition")), "u": Field("USER", g("user")),
        "Y": Field("PRIORITY", g("priority")), "S": Field("SITE", g("site")), "A": Field("AGE", g("age")),
        "B": Field("ASSOC", g("assoc")), "F": Field("FAIRSHARE", g("fairshare")),
        "J": Field("JOBSIZE", g("jobsize")), "P": Field("PARTITION", g("partition_f")),
        "Q": Field("QOS", g("qos")), "N": Field("NICE", g("nice")), "T": Field("TRES", g("tres")),
    }


def _tres_name(name: str) -> str:
    """The TRES as PriorityWeightTRES is written: CPU, Mem, Node, GRES/gpu."""
    return {"cpu": "CPU", "mem": "Mem", "node": "Node", "billing": "Billing"}.get(name, name.upper() if "/" not in name
                                                                                else "GRES/" + name.split("/", 1)[1])


def main(argv: list[str]) -> int:
    res = common.command_options("sprio", argv, TABLE, USAGE)
    if isinstance(res, int):
        return res
    o, pos = res
    q = []
    if "jobs" in o:
        vals = common.split_list([v or (pos.pop(0) if pos else "") for v in o["jobs"]])
        if not all(v.isdigit() for v in vals):
            print(f"sprio: error: Invalid job id: {next(v for v in vals if not v.isdigit())}", file=sys.stderr)
            return 1
        q.append("ids=" + ",".join(vals))
    if "user" in o:
        q.append("users=" + ",".join(common.split_list(o["user"])))
    if "partition" in o:
        q.append("partitions=" + ",".join(common.split_list(o["partition"])))
    data = http.request("GET", "/api/v1/priorities" + ("?" + "&".join(q) if q else ""))
    from slurmlet.common.fmt import parse_format, render_specs
    table = _fields()
    tres_w = data["weights"].get("tres") or []
    if "weights" in o:
        specs = parse_format(WEIGHTS + (" %.20T" if tres_w else ""))
        w = dict(data["weights"], job_id="Weights", partition="", partition_f=data["weights"]["partition"],
                 tres=",".join(f"{_tres_name(k)}={v}" for k, v in tres_w))
        w["priority"] = ""
        lines = [render_specs(specs, table, None), render_specs(specs, table, w)]
        sys.stdout.write("".join(line.rstrip() + "\n" if i else line + "\n" for i, line in enumerate(lines)))
        return 0
    jobs = data["jobs"]
    if not jobs and ("jobs" in o or "user" in o):
        print("Unable to find jobs matching user/id(s) specified")
        return 0
    default = DEFAULT + (" %.20T" if tres_w else "")  # the TRES column once PriorityWeightTRES is set
    specs = parse_format(o["format"][-1] if "format" in o else (LONG if "long" in o else default))
    out = [] if "noheader" in o else [render_specs(specs, table, None)]
    for j in jobs:
        f = j["factors"]
        row = {"job_id": j["job_id"], "partition": j["partition"], "user": j["user"], "priority": j["priority"],
               "site": f["site"], "age": f["age"], "assoc": f["assoc"], "fairshare": f["fairshare"],
               "jobsize": f["jobsize"], "partition_f": f["partition"], "qos": f["qos"], "nice": f["nice"],
               "tres": ",".join(f"{k}={v:.0f}" for k, v in f.get("tres") or [])}
        out.append(render_specs(specs, table, row))
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0
