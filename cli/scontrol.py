"""scontrol: show, hold/release/requeue, update, ping, takeover, hostnames/hostlist."""

from __future__ import annotations

import os
import sys
import time

from slurmlet.cli import http

ENTITIES = ("job", "jobs", "node", "nodes", "partition", "partitions", "config", "hostnames", "hostlist",
            "hostlistsorted", "step", "steps")


def main(argv: list[str]) -> int:
    one_liner = details = False
    words: list[str] = []
    for a in argv:
        if a in ("-o", "--oneliner"):
            one_liner = True
        elif a in ("-d", "--details"):
            details = True
        elif a in ("-V", "--version"):
            print("slurm-wlm 22.05.8")
            return 0
        elif a in ("-h", "--help", "--usage"):
            from slurmlet.cli.helptext import text
            sys.stdout.write(text("scontrol", "usage" if a == "--usage" else "help"))
            return 0
        elif a.startswith("-") and len(words) == 0 and a not in ("-",):
            print(f"scontrol: unrecognized option '{a}'\nTry \"scontrol --help\" for more information",
                  file=sys.stderr)
            return 1
        else:
            words.append(a)
    if not words:
        print("scontrol: error: no command given (interactive mode is not supported)", file=sys.stderr)
        return 1
    cmd, args = words[0].lower(), words[1:]
    if cmd == "show":
        return show(args, one_liner=one_liner, details=details)
    if cmd == "ping":
        return ping()
    if cmd == "takeover":
        return takeover(args)
    if cmd in ("hold", "uhold", "release", "requeue", "requeuehold", "suspend", "resume"):
        return job_action(cmd, args)
    if cmd == "update":
        return update(args)
    if cmd == "token":
        return token(args)
    if cmd == "listpids":
        return listpids(args)
    if cmd in ("reconfigure", "reconfig"):
        try:
            http.request("POST", "/api/v1/reconfigure")
        except http.ControllerError as e:
            print(f"slurm_reconfigure error: {e.error}", file=sys.stderr)
            return 1
        return 0
    print(f"invalid keyword: {words[0]}", file=sys.stderr)
    return 1


def ping() -> int:
    """scontrol ping: each controller (SlurmctldHost, primary first) UP or DOWN as 22.05 prints them;
    exit 0 where one answers. A backup in standby answers too."""
    urls = http.controller_url().split(",")
    up: list[bool] = []
    names: list[str] = []
    for u in urls:
        try:  # (one controller: through this host's spool where there is one)
            doc = http.request("GET", "/api/v1/ping", url=u if len(urls) > 1 else None, timeout=5)
        except (http.Unreachable, http.ControllerError):
            up.append(False)
            continue
        up.append(True)
        if isinstance(doc, dict) and isinstance(doc.get("controllers"), list) and len(doc["controllers"]) == len(urls):
            names = [str(n) for n in doc["controllers"]]
    names = names or [http.host_port(u)[0] for u in urls]
    for i, (name, ok) in enumerate(zip(names, up)):
        mode = "primary" if i == 0 else "backup" if len(urls) == 2 else f"backup{i}"
        print(f"Slurmctld({mode}) at {name} is {'UP' if ok else 'DOWN'}")
    if not all(up) and os.getuid() == 0:
        print("*****************************************\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n"
              "*****************************************")
    return 0 if any(up) else 1


def takeover(args: list[str]) -> int:
    """scontrol takeover [INDEX]: backup controller INDEX (default 1, the first backup) takes control
    (the lease on the database, controller/failover.py); the controller that had it is in standby."""
    urls = http.controller_url().split(",")
    if len(args) > 1:
        print("takeover: too many arguments", file=sys.stderr)
        return 1
    index = 1
    if args:
        try:
            index = int(args[0])
        except ValueError:
            index = 0
        if index < 1 or index >= len(urls):
            print(f"takeover: invalid backup controller index ({index})", file=sys.stderr)
            return 1
    elif len(urls) < 2:
        print("takeover: no backup controller defined", file=sys.stderr)
        return 1
    try:
        http.request("POST", f"/api/v1/takeover?index={index}", url=urls[index], timeout=60)
    except http.ControllerError as e:
        print(f"slurm_takeover error: {e.error}", file=sys.stderr)
        return 1
    except http.Unreachable:
        print("slurm_takeover error: Unable to contact slurm controller (connect failure)", file=sys.stderr)
        return 1
    return 0


def listpids(args: list[str]) -> int:
    """scontrol listpids [JOB[.STEP]] [NODE]: the processes of jobs on a node (this one: $SLURMD_NODENAME,
    else this host's name), as 22.05 lists them: each task's own process with its local and global
    ids, the rest of its processes with `-`."""
    import os
    import socket
    spec = args[0] if args else None
    node = args[1] if len(args) > 1 else os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    print(f"{'PID':<8} {'JOBID':<8} {'STEPID':<8} {'LOCALID':<7} GLOBALID")
    if spec is not None:
        jid_s, _, step = spec.partition(".")
        if not jid_s.isdigit():
            print("Invalid job id specified", file=sys.stderr)
            return 1
        ids = [int(jid_s)]
    else:
        jobs = http.request("GET", "/api/v1/jobs?states=RUNNING,SUSPENDED")["jobs"]
        ids = [j["job_id"] for j in jobs if node in (j.get("node_list") or [])]
        step = ""
        if not ids and node not in {n["name"] for n in http.request("GET", "/api/v1/nodes")["nodes"]}:
            print("scontrol: error: stepd_available: Couldn't find nodename", file=sys.stderr)
            print("No job steps exist on this node.", file=sys.stderr)
            return 1
    found = False
    for jid in ids:
        try:
            got = http.request("POST", f"/api/v1/jobs/{jid}/stat", {"steps": [step] if step else [], "node": node},
                               timeout=60)
        except http.ControllerError:
            got = {"steps": []}
        for s in got["steps"]:
            for t in s["tasks"]:
                found = True
                print(f"{t['pid']:<8} {jid:<8} {s['step']!s:<8} {t['local_id']:<7} {t['rank']:<8}")
                for pid in t["pids"]:
                    if pid != t["pid"]:
                        print(f"{pid:<8} {jid:<8} {s['step']!s:<8} {'-':<7} {'-':<8}")
    if spec is not None and not found:  # ("(null)": 22.05 names no node there)
        if step:
            print(f"StepId={ids[0]}.{step} does not exist on node (null).", file=sys.stderr)
        else:
            print(f"There are no steps for job {ids[0]} on node (null).", file=sys.stderr)
        return 1
    return 0


def token(args: list[str]) -> int:
    """scontrol token [lifespan=SECONDS] [username=NAME]: a JWT for REST clients, printed as Slurm does
    (`SLURM_JWT=...`), to send as X-SLURM-USER-TOKEN."""
    q = []
    for a in args:
        k, _, v = a.partition("=")
        if k.lower() == "lifespan" and v.isdigit():
            q.append(f"lifespan={v}")
        elif k.lower() == "username" and v:
            q.append(f"username={v}")
        else:
            print(f"scontrol: error: Invalid parameter: {a}", file=sys.stderr)
            return 1
    try:
        got = http.request("POST", "/api/v1/token" + ("?" + "&".join(q) if q else ""))
    except http.ControllerError as e:
        print(f"scontrol: error: {e.error}", file=sys.stderr)
        return 1
    print(f"SLURM_JWT={got['token']}")
    return 0


def _job_ids(args: list[str]) -> list[int] | None:
    out = []
    for a in args:
        for part in a.replace("jobid=", "").replace("JobId=", "").split(","):
            if not part:
                continue
            try:
                out.append(int(part.split("_")[0]))
            except ValueError:
                return None
    return out


def job_action(cmd: str, args: list[str]) -> int:
    ids = _job_ids(args)
    if not ids:
        print("Invalid job id specified", file=sys.stderr)
        return 1
    if cmd == "release" and len(ids) > 1:
        try:
            http.request("POST", "/api/v1/jobs/release", {"ids": ids})
            return 0
        except http.ControllerError:
            pass  # one of them cannot be released: job by job, to say which and why
    rc = 0
    for jid in ids:
        try:
            if cmd in ("hold", "uhold"):
                http.request("POST", f"/api/v1/jobs/{jid}/hold?who={'admin' if cmd == 'hold' else 'user'}")
            elif cmd == "release":
                http.request("POST", f"/api/v1/jobs/{jid}/release")
            elif cmd in ("suspend", "resume"):
                http.request("POST", f"/api/v1/jobs/{jid}/suspend?resume={'true' if cmd == 'resume' else 'false'}")
            else:
                http.request("POST", f"/api/v1/jobs/{jid}/requeue?hold={'true' if cmd == 'requeuehold' else 'false'}")
        except http.ControllerError as e:
            print(f"{e.error} for job {jid}", file=sys.stderr)
            if cmd in ("hold", "uhold", "release"):  # scontrol's hold and release go through slurm_suspend
                print(f"slurm_suspend error: {e.error}", file=sys.stderr)
            rc = 1
    return rc


#: node states `scontrol update nodename=... state=` takes here
_NODE_STATES = ("RESUME", "IDLE", "UP", "DRAIN", "DOWN")


def update(args: list[str]) -> int:
    kv: dict[str, str] = {}
    given: dict[str, str] = {}  #: each key as written, for the messages that quote it
    for a in args:
        if "=" not in a:
            print(f"Invalid input: {a}\nRequest aborted", file=sys.stderr)
            return 1
        k, v = a.split("=", 1)
        kv[k.lower()] = v
        given[k.lower()] = a
    if "nodename" in kv:
        if kv.get("state", "").upper() not in _NODE_STATES:
            print(f"Invalid input: state={kv.get('state', '')}\nRequest aborted\nValid states are: NoResp DRAIN "
                  "FAIL FUTURE RESUME POWER_DOWN POWER_UP UNDRAIN\nNot all states are valid given a node's prior "
                  "state", file=sys.stderr)
            return 1
        change = {"state": kv.get("state", ""), "reason": kv.get("reason")}
        rc = 0
        from slurmlet.cli.hosts import expand_hostlist
        for name in expand_hostlist(kv["nodename"]):
            try:
                http.request("POST", f"/api/v1/nodes/{name}/update", change)
            except http.ControllerError as e:
                # what scontrol checks itself it says plainly; the controller's refusals with slurm_update's prefix
                print(e.error if e.error.startswith("You must specify a reason") else f"slurm_update error: {e.error}",
                      file=sys.stderr)
                rc = 1
        return rc
    jid_s = kv.pop("jobid", None) or kv.pop("job", None)
    if jid_s is None:
        print("No valid entity in update command\nInput line must include \"NodeName\", "
              "\"PartitionName\", \"Reservation/ReservationName\", or \"JobId\"", file=sys.stderr)
        return 1
    body: dict[str, object] = {}
    for k, v in kv.items():
        if len(k) >= 2 and "starttime".startswith(k):
            # parse_time's forms for a date to come; a refused one is said and the rest still applies
            from slurmlet.common.grammar import OptError
            from slurmlet.common.slurmtime import parse_date
            try:
                when = parse_date(v)
            except OptError as e:
                print(*e.lines, sep="\n", file=sys.stderr)
                continue
            if when:
                body["begin_time"] = float(when)
        elif k == "timelimit":
            from slurmlet.common.grammar import OptError
            from slurmlet.common.slurmtime import parse_time
            try:
                body["time_limit"] = parse_time(v)
            except OptError:
                print(f"Invalid TimeLimit value: {v}", file=sys.stderr)
                return 1
        elif k == "partition":
            body["partition"] = v
        elif k in ("name", "jobname"):
            body["name"] = v
        elif k == "comment":
            body["comment"] = v
        elif k in ("nice", "sitefactor"):
            name = "Nice" if k == "nice" else "SiteFactor"
            try:
                body["nice" if k == "nice" else "site_factor"] = int(v)
            except ValueError:
                print(f"Invalid {name} value: {v}", file=sys.stderr)
                return 1
        else:
            print(f"Update of this parameter is not supported: {given[k]}\nRequest aborted", file=sys.stderr)
            return 1
    if not body:
        print("No changes specified", file=sys.stderr)
        return 1
    try:
        http.request("PATCH", f"/api/v1/jobs/{int(jid_s)}", body)
    except ValueError:
        print(f"Invalid job id specified for job {jid_s}", file=sys.stderr)
        return 1
    except http.ControllerError as e:
        print(f"{e.error} for job {jid_s}", file=sys.stderr)
        return 1
    return 0


def _show_steps(target: str | None, one_liner: bool, now: float) -> int:
    """scontrol show step [JOB[.STEP]]: the running steps (a batch job's batch step among them), as
    slurmctld lists them; 22.05's messages for a job or step it does not know."""
    from slurmlet.cli import render_scontrol as render
    jid, _, sid = (target or "").partition(".")
    if target:
        try:
            jobs = http.request("GET", f"/api/v1/jobs?ids={int(jid.split('_')[0])}")["jobs"]
        except (ValueError, http.ControllerError):
            jobs = []
        if not jobs:
            print("slurm_get_job_steps error: Invalid job id specified", file=sys.stderr)
            return 1
    else:
        jobs = http.request("GET", "/api/v1/jobs")["jobs"]
    steps = [(j, s) for j in jobs if j["state"] in ("RUNNING", "SUSPENDED")
             for s in j.get("steps") or [] if s.get("state") in ("RUNNING", "SUSPENDED")]
    if sid:
        steps = [(j, s) for j, s in steps if str(s["step"]) == sid]
    if not steps:
        if target:
            print(f"Job step {jid}.{sid} not found")
            return 1
        print("No job steps in the system")
        return 0
    sys.stdout.write("".join(render.scontrol_show_step(j, _with_srun(j, s), one_liner=one_liner) for j, s in steps))
    return 0


def _with_srun(job: dict, step: dict) -> dict:
    """An srun step with its srun's host and pid, which the job listing leaves out (asked step by step;
    as listed when it has ended meanwhile)."""
    if step["step"] == "batch":
        return step
    try:
        return http.request("GET", f"/api/v1/jobs/{job['job_id']}/steps/{step['step']}")
    except http.ControllerError:
        return step


#: slurm.conf keys `scontrol show config` lists as written, with Slurm's defaults when unset
_SHOWN = (("PriorityType", "priority/basic"), ("PriorityWeightAge", "0"), ("PriorityWeightAssoc", "0"),
          ("PriorityWeightFairShare", "0"), ("PriorityWeightJobSize", "0"), ("PriorityWeightPartition", "0"),
          ("PriorityWeightQOS", "0"), ("PriorityWeightTRES", "(null)"), ("PreemptType", "preempt/none"),
          ("PreemptMode", "OFF"), ("PreemptExemptTime", "00:00:00"), ("Prolog", "(null)"), ("Epilog", "(null)"),
          ("PrologSlurmctld", "(null)"), ("EpilogSlurmctld", "(null)"), ("AccountingStorageEnforce", "none"))


def show(args: list[str], *, one_liner: bool, details: bool) -> int:
    if not args:
        print("invalid entity: for keyword:show ", file=sys.stderr)
        return 1
    ent = args[0].lower()
    target = args[1] if len(args) > 1 else None
    if ent not in ENTITIES:
        print(f"invalid entity:{args[0]} for keyword:show ", file=sys.stderr)
        return 1
    if ent in ("hostnames", "hostlist", "hostlistsorted"):
        from slurmlet.cli.hosts import compress_hostlist, expand_hostlist
        expr = target or os.environ.get("SLURM_JOB_NODELIST")
        if not expr:
            print("Usage: scontrol show hostnames <hostlist>", file=sys.stderr)
            return 1
        if ent == "hostnames":
            sys.stdout.write("".join(h + "\n" for h in expand_hostlist(expr)))
        else:
            names = expand_hostlist(expr.replace("\n", ","))
            print(compress_hostlist(sorted(names) if ent == "hostlistsorted" else names))
        return 0
    from slurmlet.cli import render_scontrol as render
    now = time.time()
    if ent in ("job", "jobs"):
        if target:
            try:
                jid = int(target.split("_")[0].split(".")[0])
            except ValueError:
                print("Invalid job id specified", file=sys.stderr)
                return 1
            try:
                jobs = http.request("GET", f"/api/v1/jobs?ids={jid}")["jobs"]
            except http.ControllerError:
                jobs = []
            if "_" in target:
                task = target.split("_", 1)[1]
                jobs = [j for j in jobs if str(j.get("array_task_id")) == task]
            if not jobs:
                print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
                return 1
        else:
            jobs = http.request("GET", "/api/v1/jobs")["jobs"]
            if not jobs:
                print("No jobs in the system")
                return 0
        out = [render.scontrol_show_job(j, one_liner=one_liner, details=details, now=now) for j in jobs]
        sys.stdout.write("".join(out))
        return 0
    if ent in ("step", "steps"):
        return _show_steps(target, one_liner, now)
    if ent in ("node", "nodes"):
        nodes = http.request("GET", "/api/v1/nodes")["nodes"]
        if target:
            from slurmlet.cli.hosts import expand_hostlist
            want = set(expand_hostlist(target))
            nodes = [n for n in nodes if n["name"] in want]
            if not nodes:
                print(f"Node {target} not found")
                return 1
        sys.stdout.write("".join(render.scontrol_show_node(n, one_liner=one_liner, now=now) for n in nodes))
        return 0
    if ent in ("partition", "partitions"):
        parts = http.request("GET", "/api/v1/partitions")["partitions"]
        if target:
            parts = [p for p in parts if p["name"] == target]
            if not parts:
                print(f"Partition {target} not found")
                return 1
        sys.stdout.write("".join(render.scontrol_show_partition(p, one_liner=one_liner) for p in parts))
        return 0
    cfg = http.request("GET", "/api/v1/config")
    print(f"Configuration data as of {time.strftime('%Y-%m-%dT%H:%M:%S')}")
    rows = [("ClusterName", cfg["cluster_name"]), ("KillWait", f"{cfg['kill_wait']} sec"),
            ("MinJobAge", f"{cfg['min_job_age']} sec"), ("SLURM_VERSION", cfg["version"]),
            ("SchedulerType", cfg["scheduler_type"]), ("SlurmctldAddr", cfg["listen"]),
            ("SlurmdTimeout", f"{cfg['slurmd_timeout']} sec"), ("MaxArraySize", cfg["max_array_size"]),
            ("DefMemPerCPU", cfg["def_mem_per_cpu"] or "UNLIMITED"), ("JobRequeue", int(cfg["job_requeue"])),
            ("EnforcePartLimits", cfg.get("enforce_part_limits") or "NO"),
            ("SlurmctldTimeout", f"{cfg.get('slurmctld_timeout', 120)} sec")]
    rows += [(f"SlurmctldHost[{i}]", host) for i, host in enumerate(cfg.get("controllers") or ())]
    raw = {k.lower(): v for k, v in cfg.get("raw", {}).items()}
    rows += [(k, raw.get(k.lower(), default)) for k, default in _SHOWN]
    for k, v in sorted(rows):
        print(f"{k:<23}= {v}")
    return 0
