"""sstat: live usage of a running job's steps, sampled by each node's agent when asked. Fields,
defaults, messages and exit codes as Slurm 22.05's sstat (tests/data/slurm-2205-sstat.md)."""

from __future__ import annotations

import sys
from operator import itemgetter

from slurmlet.cli import common, http
from slurmlet.cli.argv import Opt

TABLE: list[Opt] = [
    ("a", "allsteps", 0, "allsteps"), ("e", "helpformat", 0, "helpformat"), ("h", "help", 0, "help"),
    ("i", "pidformat", 0, "pidformat"), ("j", "jobs", 1, "jobs"), ("M", "clusters", 1, "clusters"),
    ("n", "noheader", 0, "noheader"), ("o", "format", 1, "format"), ("", "fields", 1, "format"),
    ("p", "parsable", 0, "parsable"), ("P", "parsable2", 0, "parsable2"), ("", "usage", 0, "usage"),
    ("v", "verbose", 0, "verbose"), ("V", "version", 0, "version"),
]

USAGE = "Usage: sstat [options] -j <job(.stepid)>\n\tUse --help for help"

DEFAULT_FIELDS = (
    "JobID,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxPages,"
    "MaxPagesNode,MaxPagesTask,AvePages,MinCPU,MinCPUNode,MinCPUTask,AveCPU,NTasks,AveCPUFreq,ReqCPUFreqMin,"
    "ReqCPUFreqMax,ReqCPUFreqGov,ConsumedEnergy,MaxDiskRead,MaxDiskReadNode,MaxDiskReadTask,AveDiskRead,"
    "MaxDiskWrite,MaxDiskWriteNode,MaxDiskWriteTask,AveDiskWrite,TRESUsageInAve,TRESUsageInMax,"
    "TRESUsageInMaxNode,TRESUsageInMaxTask,TRESUsageInMin,TRESUsageInMinNode,TRESUsageInMinTask,TRESUsageInTot,"
    "TRESUsageOutAve,TRESUsageOutMax,TRESUsageOutMaxNode,TRESUsageOutMaxTask,TRESUsageOutMin,"
    "TRESUsageOutMinNode,TRESUsageOutMinTask,TRESUsageOutTot")

#: what `sstat -e` lists (22.05's order and columns)
HELP_FIELDS = (
    "AveCPU AveCPUFreq AveDiskRead AveDiskWrite AvePages AveRSS AveVMSize ConsumedEnergy ConsumedEnergyRaw JobID "
    "MaxDiskRead MaxDiskReadNode MaxDiskReadTask MaxDiskWrite MaxDiskWriteNode MaxDiskWriteTask MaxPages "
    "MaxPagesNode MaxPagesTask MaxRSS MaxRSSNode MaxRSSTask MaxVMSize MaxVMSizeNode MaxVMSizeTask MinCPU "
    "MinCPUNode MinCPUTask Nodelist NTasks Pids ReqCPUFreq ReqCPUFreqMin ReqCPUFreqMax ReqCPUFreqGov "
    "TRESUsageInAve TRESUsageInMax TRESUsageInMaxNode TRESUsageInMaxTask TRESUsageInMin TRESUsageInMinNode "
    "TRESUsageInMinTask TRESUsageInTot TRESUsageOutAve TRESUsageOutMax TRESUsageOutMaxNode TRESUsageOutMaxTask "
    "TRESUsageOutMin TRESUsageOutMinNode TRESUsageOutMinTask TRESUsageOutTot").split()


def _kb(v: int) -> str:
    return f"{int(v)}K"


def _cpu(secs: float) -> str:
    whole = int(secs)
    d, rest = divmod(whole, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def step_figures(step: dict) -> dict:
    """A step's sstat row (the keys sacct's fields read) from its tasks' samples: peaks with the node
    and task that reached them, averages over the tasks, the least CPU time and who had it (pure)."""
    tasks = step.get("tasks") or []
    out: dict = {"step": step["step"], "num_tasks": len(tasks), "ave_cpu_freq": "0", "nodes": step.get("nodes"),
                 "pids": ",".join(str(p) for t in tasks for p in t.get("pids") or [])}
    if not tasks:
        return out
    n = len(tasks)
    top_rss = max(tasks, key=lambda t: t["max_rss"])
    top_vms = max(tasks, key=lambda t: t["max_vms"])
    least = min(tasks, key=lambda t: t["cpu"])
    zero = "0"
    out.update(_tres_usage(tasks))
    out.update({
        "max_rss": top_rss["max_rss"], "max_rss_node": top_rss["node"], "max_rss_task": top_rss["rank"],
        "ave_rss": sum(t["max_rss"] for t in tasks) / n,
        "max_vmsize": top_vms["max_vms"], "max_vmsize_node": top_vms["node"],
        "max_vmsize_task": top_vms["rank"], "ave_vmsize": sum(t["max_vms"] for t in tasks) / n,
        "min_cpu": _cpu(least["cpu"]), "min_cpu_node": least["node"], "min_cpu_task": least["rank"],
        "ave_cpu": _cpu(sum(t["cpu"] for t in tasks) / n),
        "max_pages": zero, "max_pages_node": top_rss["node"], "max_pages_task": top_rss["rank"], "ave_pages": zero,
        "max_disk_read": zero, "max_disk_read_node": top_rss["node"], "max_disk_read_task": top_rss["rank"],
        "ave_disk_read": zero, "max_disk_write": zero, "max_disk_write_node": top_rss["node"],
        "max_disk_write_task": top_rss["rank"], "ave_disk_write": zero,
    })
    return out


def _tres_usage(tasks: list[dict]) -> dict:
    """TRESUsageIn*/Out* as sstat prints them: cpu, energy, fs/disk, mem, pages, vmem per statistic."""
    keys = (("cpu", "cpu", _cpu), ("mem", "max_rss", _kb), ("vmem", "max_vms", _kb))
    n = len(tasks)

    def line(pairs: list[tuple[str, str]]) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(pairs))
    out = {}
    for stat, pick in (("max", max), ("min", min)):
        best = {name: pick(tasks, key=itemgetter(field)) for name, field, _ in keys}
        out[f"tres_in_{stat}"] = line([("energy", "0"), ("fs/disk", "0"), ("pages", "0")] +
                                      [(name, fmt(best[name][field])) for name, field, fmt in keys])
        out[f"tres_in_{stat}_node"] = line([(k, best["mem"]["node"]) for k in ("energy", "fs/disk", "pages")] +
                                           [(name, best[name]["node"]) for name, _, _ in keys])
        out[f"tres_in_{stat}_task"] = line([("fs/disk", "0"), ("pages", str(best["mem"]["rank"]))] +
                                           [(name, str(best[name]["rank"])) for name, _, _ in keys])
    for stat, div in (("ave", n), ("tot", 1)):
        out[f"tres_in_{stat}"] = line([("energy", "0"), ("fs/disk", "0"), ("pages", "0")] +
                                      [(name, fmt(sum(t[field] for t in tasks) / div)) for name, field, fmt in keys])
    node = tasks[0]["node"]
    out.update({"tres_out_ave": "energy=0,fs/disk=0", "tres_out_tot": "energy=0,fs/disk=0",
                "tres_out_max": "energy=0,fs/disk=0", "tres_out_min": "energy=0,fs/disk=0",
                "tres_out_max_node": f"energy={node},fs/disk={node}",
                "tres_out_min_node": f"energy={node},fs/disk={node}",
                "tres_out_max_task": "fs/disk=0", "tres_out_min_task": "fs/disk=0"})
    return out


def main(argv: list[str]) -> int:
    res = common.command_options("sstat", argv, TABLE, USAGE, help_hint=False)
    if isinstance(res, int):
        return res
    o, pos = res
    if "helpformat" in o:
        for i in range(0, len(HELP_FIELDS), 4):
            print(" ".join(f"{f:<19}" for f in HELP_FIELDS[i:i + 4]))
        return 0
    specs = common.split_list(o.get("jobs", [])) + [p for p in pos if p]
    if not specs:
        print("sstat: error: You didn't give me any jobs to stat.", file=sys.stderr)
        return 1
    from slurmlet.cli import render_sacct as render
    fields = ",".join(common.split_list(o["format"])) if "format" in o else \
        ("JobID,Nodelist,Pids" if "pidformat" in o else DEFAULT_FIELDS)
    parsable = "P" if "parsable2" in o else ("p" if "parsable" in o else None)
    try:
        cols = render.parse_sacct_fields(fields, table=STAT_ONLY_FIELDS + render.SACCT_FIELDS)
    except ValueError as e:
        print(f"sstat: error: {e}", file=sys.stderr)
        return 1
    rows: list = []
    for spec in specs:
        jid, _, step = spec.partition(".")
        if not jid.split("_")[0].isdigit():
            print(f"sstat: fatal: Bad job/step specified: {spec}", file=sys.stderr)
            return 1
        body = {"steps": [step] if step else ([] if "allsteps" in o else ["0"])}
        try:
            got = http.request("POST", f"/api/v1/jobs/{int(jid.split('_')[0])}/stat", body, timeout=60)
        except http.ControllerError:
            got = None
        if got is None or got["state"] != "RUNNING" and not got["steps"]:
            print(f"sstat: error: couldn't get steps for job {jid}", file=sys.stderr)
            continue
        if step and not got["steps"]:
            print(f"sstat: error: StepId={jid}.{step} not found running.", file=sys.stderr)
            continue
        job = {"job_id": got["job_id"]}
        for s in got["steps"]:
            if "pidformat" in o:  # one line per node
                for node in sorted({t["node"] for t in s["tasks"]}):
                    mine = dict(s, tasks=[t for t in s["tasks"] if t["node"] == node], nodes=node)
                    rows.append(render.ARow(job, step_figures(mine), 0.0))
            else:
                rows.append(render.ARow(job, step_figures(s), 0.0))
    lines = render.field_lines(cols, rows, parsable=parsable, noheader="noheader" in o)
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def _get(key: str):  # noqa: ANN202 - a field's getter
    return lambda r: r.s.get(key) if r.s else None


#: sstat's own fields and widths, looked up before sacct's: the step's nodes and its tasks' processes,
#: the TRES usage from the samples
STAT_ONLY_FIELDS = [
    ("Nodelist", 20, _get("nodes")), ("Pids", 20, _get("pids")),
    ("AveDiskRead", 12, _get("ave_disk_read")), ("AveDiskWrite", 12, _get("ave_disk_write")),
] + [(f"TRESUsage{d}{stat}{part}", len(f"TRESUsage{d}{stat}{part}") + (0 if d == "In" else 0),
      _get(f"tres_{d.lower()}_{stat.lower()}{'_' + part.lower() if part else ''}"))
     for d in ("In", "Out") for stat in ("Ave", "Max", "Min", "Tot") for part in ("", "Node", "Task")
     if not (part and stat in ("Ave", "Tot"))]
