"""Job steps (`srun` inside an allocation): layout, the agents' orders, their reports, sacct rows.

A step runs its tasks on the first N nodes of its job, ranks laid out in blocks (Slurm's
default distribution). Each node's agent is told to start its ranks; the tasks' output goes
straight to the `srun` that asked (its address is part of the request), their exit codes come
back to the controller through the agents' syncs, and the step ends when every node reported.
"""

from __future__ import annotations

import json
from typing import Any

import hostlist
from sqlalchemy import bindparam, func, insert, select, update

from slurmlet.controller.errors import Conflict, InvalidRequest, NotFound

from . import het
from .actions import relinquish
from .tables import jobs as J
from .tables import nodes as N
from .tables import steps as S

#: pending actions under which a job's processes are going away: its steps go with them
_ENDING = ("cancel", "requeue", "requeue_hold", "preempt", "preempt_requeue")


def plan_layout(alloc: list[dict], nodes: int | None, ntasks: int | None, per_node: int | None,
                cpus_per_task: int, nodelist: list[str] | None = None, exact: bool = False,
                gpus_per_node: int | None = None) -> list[dict]:
    """Which ranks run on which of the job's nodes (block distribution); `nodelist` (srun -w)
    names nodes of the job the step must run on, first. A step has all of its job's CPUs on each of
    its nodes unless `exact` (srun -c, which implies --exact in 22.05): then its tasks' CPUs; and all
    of its job's GPUs there unless `gpus_per_node` (srun --gpus-per-node, --gres=gpu:N): the first N."""
    if nodelist:
        names = [a["node"] for a in alloc]
        if any(n not in names for n in nodelist):
            raise InvalidRequest("Requested node configuration is not available")
        alloc = [a for a in alloc if a["node"] in nodelist] + [a for a in alloc if a["node"] not in nodelist]
        nodes = max(nodes or 0, len(nodelist))
    if nodes is not None and nodes > len(alloc):
        raise InvalidRequest("Requested node configuration is not available")
    if ntasks is None:
        n = nodes or len(alloc)
        ntasks = n * per_node if per_node else n
    elif per_node and per_node * min(nodes or len(alloc), len(alloc)) < ntasks:
        per_node = None  # -n wins over a --ntasks-per-node it cannot fit (as srun under SLURM_NTASKS does)
    n = min(nodes or (len(alloc) if per_node is None else -(-ntasks // per_node)), ntasks, len(alloc))
    if per_node:
        counts = []
        left = ntasks
        for _ in range(n):
            counts.append(min(per_node, left))
            left -= counts[-1]
        if left > 0:
            raise InvalidRequest("More processors requested than permitted")
    else:  # Slurm's block layout: tasks dealt round the nodes while each has CPUs for one more
        caps = [a["cpus"] // max(1, cpus_per_task) for a in alloc[:n]]
        if sum(caps) < ntasks or 0 in caps:
            raise InvalidRequest("More processors requested than permitted")
        counts = [0] * n
        left, cycle = ntasks, 0
        while left > 0:
            room = [i for i in range(n) if cycle < caps[i]]
            for i in room[:left]:
                counts[i] += 1
            left -= len(room[:left])
            cycle += 1
    out, rank = [], 0
    for a, k in zip(alloc, counts):
        if k * cpus_per_task > a["cpus"]:
            raise InvalidRequest("More processors requested than permitted")
        out.append({"node": a["node"], "ranks": list(range(rank, rank + k)),
                    "cpus": k * cpus_per_task if exact else a["cpus"],
                    "gpu_ids": a["gpu_ids"][:gpus_per_node] if gpus_per_node else a["gpu_ids"]})
        rank += k
    return out


def het_layout(alloc: list[dict], req: dict) -> list[dict]:
    """A heterogeneous job's step: each of its components (srun `A : B`, --het-group; the first
    job component alone without them) laid out on its job component's nodes, ranks one after
    another across them (one rank space), each node's entry naming its component and, where the
    components run different commands, its command."""
    parts = req.get("components") or [{"het_group": 0, **{k: req.get(k) for k in _PART_KEYS}}]
    out: list[dict] = []
    for part in parts:
        mine = het.part_of(alloc, part["het_group"])
        if not mine or any(x["het"] == part["het_group"] for x in out):
            raise InvalidRequest("Requested node configuration is not available")
        ntasks = part.get("ntasks")
        if ntasks is None and part.get("nodes") is None and part.get("ntasks_per_node") is None:
            ntasks = sum(a["tasks"] for a in mine)  # the job component's tasks, as srun takes them
        lay = plan_layout(mine, part.get("nodes"), ntasks, part.get("ntasks_per_node"), part.get("cpus_per_task") or 1,
                          req.get("nodelist") if not req.get("components") else None,
                          part.get("cpus_per_task") is not None)
        first = sum(len(x["ranks"]) for x in out)
        for x in lay:
            x.update(ranks=[first + r for r in x["ranks"]], het=part["het_group"])
            if req.get("components"):
                x["argv"] = part["argv"]
        out.extend(lay)
    return out


#: a step request's keys that say where and how many tasks (also those of a component of it)
_PART_KEYS = ("argv", "nodes", "ntasks", "ntasks_per_node", "cpus_per_task")


def create(c: Any, job_id: int, req: dict, now: float) -> dict:
    job = c.execute(select(J.c.state, J.c.alloc, J.c.active, J.c.pending_action, J.c.het_job_id)
                    .where(J.c.id == job_id)).first()
    if job is None:
        raise NotFound()
    if job.state != "RUNNING" or not job.active or job.pending_action:
        raise Conflict("Job/step already completing or completed")
    alloc = json.loads(job.alloc)
    if job.het_job_id is not None:
        layout = het_layout(alloc, req)
    elif req.get("components"):
        raise InvalidRequest("Requested node configuration is not available")  # (not a heterogeneous job)
    else:
        layout = plan_layout(alloc, req.get("nodes"), req.get("ntasks"), req.get("ntasks_per_node"),
                             req.get("cpus_per_task") or 1, req.get("nodelist"),
                             req.get("cpus_per_task") is not None or bool(req.get("exact")), req.get("gpus_per_node"))
    addrs = dict(c.execute(select(N.c.name, N.c.addr).where(N.c.name.in_([x["node"] for x in layout]))).all())
    for x in layout:
        x["addr"] = addrs.get(x["node"], "127.0.0.1")
    last = c.execute(select(func.max(S.c.step_id)).where(S.c.job_id == job_id)).scalar()
    step_id = 0 if last is None else last + 1
    argv = (req.get("components") or [req])[0].get("argv") or req.get("argv") or []
    c.execute(insert(S).values(job_id=job_id, step_id=step_id, name=(argv[0].rsplit("/", 1)[-1] if argv else ""),
                               state="RUNNING", layout=json.dumps(layout), request=json.dumps(req), start_time=now,
                               results="{}", exit_code=0, exit_signal=0))
    return {"job_id": job_id, "step_id": step_id, "layout": layout,
            "nodelist": hostlist.collect_hostlist([x["node"] for x in layout])}


def cancel(c: Any, job_id: int, step_id: int, now: float, running_only: bool = False) -> list[str]:
    """srun interrupted, or scancel JOB.STEP: the step's tasks are killed. Returns the nodes to wake.
    `running_only`: a step that is not running is no step (scancel's error, as slurmctld's)."""
    row = c.execute(select(S.c.state, S.c.layout).where(S.c.job_id == job_id, S.c.step_id == step_id)).first()
    if row is None or (running_only and row.state != "RUNNING"):
        raise NotFound("Invalid job id specified")
    if row.state == "RUNNING":
        c.execute(update(S).where(S.c.job_id == job_id, S.c.step_id == step_id, S.c.state == "RUNNING")
                  .values(state="CANCELLED"))
        forget_environment(c, _STEP_ENV, {"_job_id": job_id, "_step_id": step_id})
    return [x["node"] for x in json.loads(row.layout)]


#: (made once: each job's end runs them)
_JOB_STEPS_RUNNING = (S.c.job_id == bindparam("_job_id")) & (S.c.state == "RUNNING")
_CANCEL_RUNNING = update(S).where(_JOB_STEPS_RUNNING).values(state="CANCELLED", end_time=bindparam("_now"))
_END_UNENDED = update(S).where(S.c.job_id == bindparam("_job_id"), S.c.end_time.is_(None)).values(
    end_time=bindparam("_now"))
_ONE_STEP = (S.c.job_id == bindparam("_job_id")) & (S.c.step_id == bindparam("_step_id"))
_JOB_STEPS_RUNNING_ENV = select(S.c.job_id, S.c.step_id, S.c.request).where(_JOB_STEPS_RUNNING)
_STEP_ENV = select(S.c.job_id, S.c.step_id, S.c.request).where(_ONE_STEP)
_SET_REQUEST = update(S).where(_ONE_STEP).values(request=bindparam("request"))


def end_job_steps(c: Any, job_id: int, now: float) -> None:
    """The job is over: steps still running are cancelled (their tasks are killed)."""
    forget_environment(c, _JOB_STEPS_RUNNING_ENV, {"_job_id": job_id})
    # ended now, whether or not their nodes report (a dead node never does: no End=Unknown forever)
    c.execute(_CANCEL_RUNNING, {"_job_id": job_id, "_now": now})
    c.execute(_END_UNENDED, {"_job_id": job_id, "_now": now})


def forget_environment(c: Any, steps: Any, params: dict) -> None:  # noqa: ANN401
    """Steps that end keep no environment: it held what the job's user keeps from others (their
    tokens, a run's secrets), and nothing reads it once the tasks have started. (`steps`: a query of
    the steps' job_id, step_id and request, `params` its bound parameters' values.)"""
    for r in c.execute(steps, params).all():
        request = _without_environment(r.request)
        if request is not None:
            c.execute(_SET_REQUEST, {"_job_id": r.job_id, "_step_id": r.step_id, "request": request})


def _without_environment(request: str) -> str | None:
    """A step's request (JSON) without its environment (nor its components'); None when it holds none."""
    req = json.loads(request)
    parts = req.get("components") or []
    if not req.get("environment") and not any(p.get("environment") for p in parts):
        return None
    return json.dumps(dict(req, environment={}, **({"components": [dict(p, environment=None) for p in parts]}
                                                    if parts else {})))


_STEP = select(S).where(S.c.job_id == bindparam("_job_id"), S.c.step_id == bindparam("_step_id"))


def record(c: Any, node: str, reports: list[dict], now: float) -> None:
    """A node's tasks of a step ended: keep their codes; the step ends once every node reported."""
    for rep in reports:
        row = c.execute(_STEP, {"_job_id": rep["job_id"], "_step_id": rep["step_id"]}).first()
        if row is None:
            continue
        results = json.loads(row.results)
        if node in results:
            continue  # a repeated report
        results[node] = {str(k): v for k, v in (rep.get("results") or {}).items()}
        vals: dict = {"results": json.dumps(results)}
        if rep.get("usage"):
            usage = json.loads(row.usage or "{}")
            usage[node] = rep["usage"]
            vals["usage"] = json.dumps(usage)
        layout = json.loads(row.layout)
        if all(x["node"] in results for x in layout):
            codes = [v for r in results.values() for v in r.values()]
            code = max((v[0] for v in codes), default=0)
            sig = max((v[1] for v in codes), default=0)
            # (a task killed by a signal: CANCELLED, as 22.05's slurmctld has such a step)
            state = row.state if row.state != "RUNNING" else "CANCELLED" if sig else "FAILED" if code else "COMPLETED"
            use = json.loads(vals.get("usage") or row.usage or "{}")
            if row.state == "RUNNING" and any((u or {}).get("oom") for u in use.values()):
                state, code, sig = "OUT_OF_MEMORY", 0, 125  # a task was OOM-killed (Slurm's 0:125)
            vals.update(state=state, exit_code=code, exit_signal=sig, end_time=rep.get("end_time") or now)
            request = _without_environment(row.request)
            if request is not None:
                vals["request"] = request
            if row.step_id == 0:
                _end_srun_allocation(c, row.job_id, state, code, sig, now)
        c.execute(update(S).where(S.c.job_id == row.job_id, S.c.step_id == row.step_id).values(**vals))


def _end_srun_allocation(c: Any, job_id: int, state: str, code: int, sig: int, now: float) -> None:
    """An srun outside any allocation made this job for its step 0 alone: the step's end is the
    job's, with the exit code that srun gives it (the highest task code, or the signal that killed a
    task: 0:9, as 22.05 has it; 1 for a task the kernel killed for memory), also when that srun is gone
    (killed) and cannot say so itself."""
    row = c.execute(select(J.c.spec, J.c.state, J.c.active).where(J.c.id == job_id)).first()
    if row is None or row.state != "RUNNING" or not row.active or not json.loads(row.spec or "{}").get("srun_step"):
        return
    if state == "OUT_OF_MEMORY":
        relinquish(c, job_id, "RUNNING", 1, now)
    else:
        relinquish(c, job_id, "RUNNING", 0 if sig else min(255, code), now, sig)


#: the running steps with their jobs' facts (made once: each node sync reads them)
_RUNNING_STEPS = select(S, J.c.active, J.c.pending_action, J.c.alloc, J.c.nodes.label("job_nodes"),
                        J.c.master_port, J.c.spec.label("job_spec"), J.c.uid, J.c.gid,
                        J.c.name.label("job_name"), J.c.partition, J.c.account, J.c.qos, J.c.user) \
    .join(J, J.c.id == S.c.job_id).where(S.c.state == "RUNNING")


def orders_for(c: Any, node: str, running: set[str], ending: set[str], done: set[str]) -> list[dict]:
    """What a node's agent must do about steps: start its ranks of new steps, kill dead ones (not
    those it is killing already: `ending`)."""
    orders = []
    rows = c.execute(_RUNNING_STEPS)
    live = set()
    for r in rows:
        key = f"{r.job_id}.{r.step_id}"
        mine = next((x for x in json.loads(r.layout) if x["node"] == node), None)
        if mine is None:
            continue
        if not r.active or r.pending_action in _ENDING:
            continue  # dies with its job (kill order below)
        live.add(key)
        if key in running or key in done or node in json.loads(r.results):
            continue
        layout = json.loads(r.layout)
        request, job_nodes, job_cpus = json.loads(r.request), r.job_nodes, [a["cpus"] for a in json.loads(r.alloc or "[]")]
        if "het" in mine:  # a heterogeneous job's step: its job is the components it runs in
            groups = {x["het"] for x in layout}
            held = [a for a in json.loads(r.alloc or "[]") if a.get("het", 0) in groups]
            job_nodes, job_cpus = hostlist.collect_hostlist([a["node"] for a in held]), [a["cpus"] for a in held]
            if "argv" in mine:
                request["argv"] = mine["argv"]
            # the component's own -o/-e and --export environment, where srun gave it them
            part: dict = next((p for p in request.get("components") or [] if p["het_group"] == mine["het"]), {})
            request.update({k: part[k] for k in ("stdout", "stderr", "environment") if part.get(k) is not None})
        spec = json.loads(r.job_spec)
        orders.append({"op": "step", "job_id": r.job_id, "step_id": r.step_id, "node": node,
                       "het_group": mine.get("het"),  # (its index among its component's nodes: srun -o's %n)
                       "het_node_index": [x["node"] for x in layout if x.get("het") == mine.get("het")].index(node),
                       "node_index": next(i for i, x in enumerate(layout) if x["node"] == node),
                       "ranks": mine["ranks"], "gpu_ids": mine["gpu_ids"], "cpus": mine["cpus"],
                       "job_memory": next((a.get("memory") for a in json.loads(r.alloc or "[]") if a["node"] == node),
                                          None),
                       "job_cpus": next((a.get("cpus") for a in json.loads(r.alloc or "[]") if a["node"] == node), None),
                       "tasks_per_node": [len(x["ranks"]) for x in layout],
                       "nodelist": hostlist.collect_hostlist([x["node"] for x in layout]),
                       "job_nodes": job_nodes, "request": request,
                       "master_addr": layout[0].get("addr"), "master_port": r.master_port,
                       "code": spec.get("code"),
                       "py_deps": spec.get("py_deps"), "uid": r.uid, "gid": r.gid,
                       # the job's own facts: a step of `srun --jobid` from outside has none in its environment
                       "job": {"name": r.job_name, "partition": r.partition, "account": r.account or r.user,
                               "qos": r.qos or "normal", "user": r.user,
                               # an srun's own allocation (no sbatch or salloc around its step)
                               "srun_step": bool(spec.get("srun_step")),
                               "cpus": job_cpus}})
    for key in sorted(running - live - ending):
        jid, sid = key.split(".")
        orders.append({"op": "kill_step", "job_id": int(jid), "step_id": int(sid)})
    return orders


def memory_stats(usage: dict[str, dict]) -> dict:
    """sacct's memory figures of a step from what each node reported ({node: usage}): MaxRSS and
    MaxVMSize are its largest task's, with that task's node and rank; AveRSS and AveVMSize the mean
    over its tasks of each one's largest (KB). Nodes whose report has no task figures count as one task."""
    tasks: list[tuple[str, int | None, int, int]] = [(node, int(rank), rss or 0, vms or 0) for node, u in sorted(usage.items())
             for rank, (rss, vms) in sorted((u.get("tasks") or {}).items(), key=lambda kv: int(kv[0]))]
    tasks += [(node, None, u.get("max_rss") or 0, u.get("max_vms") or 0)
              for node, u in sorted(usage.items()) if not u.get("tasks")]
    if not tasks:
        return {"max_rss": None}
    out: dict[str, Any] = {}
    for key, values in (("rss", [t[2] for t in tasks]), ("vmsize", [t[3] for t in tasks])):
        top = max(range(len(tasks)), key=values.__getitem__)  # (the first of the largest)
        out.update({f"max_{key}": values[top], f"max_{key}_node": tasks[top][0], f"max_{key}_task": tasks[top][1],
                    f"ave_{key}": sum(values) / len(values)})
    return out


#: public's read, made once (building it and its cache key cost more than running it)
_OF_JOBS = select(S).where(S.c.job_id.in_(bindparam("job_ids", expanding=True))).order_by(S.c.job_id, S.c.step_id)


def public(c: Any, job_ids: list[int], srun: bool = False) -> dict[int, list[dict]]:
    """sacct's rows of the steps of these jobs, by job; with `srun`, a running step's srun host and pid
    too (scontrol show step: its request, environment and all, is read only then, not for squeue)."""
    out: dict[int, list[dict]] = {}
    for r in c.execute(_OF_JOBS, {"job_ids": job_ids}):
        layout = json.loads(r.layout)
        req = json.loads(r.request) if srun and r.state == "RUNNING" else {}
        usage = json.loads(r.usage or "{}")
        user = sum(u.get("user_cpu") or 0 for u in usage.values())
        system = sum(u.get("system_cpu") or 0 for u in usage.values())
        out.setdefault(r.job_id, []).append({
                    **memory_stats(usage),
                    "user_cpu": user, "system_cpu": system, "total_cpu": user + system,
                    "step": r.step_id, "name": r.name, "state": r.state, "exit_code": r.exit_code,
                    "exit_signal": r.exit_signal, "start_time": r.start_time, "end_time": r.end_time,
                    "nodes": hostlist.collect_hostlist([x["node"] for x in layout]), "num_nodes": len(layout),
                    "num_cpus": sum(x["cpus"] for x in layout),
                    "num_tasks": sum(len(x["ranks"]) for x in layout),
                    "srun_host": req.get("srun_host"), "srun_pid": req.get("srun_pid"),
                    **_groups(layout)})
    return out


def _groups(layout: list[dict]) -> dict:
    """A heterogeneous job's step: what of it ran in each job component (sacct lists it under each)."""
    if not any("het" in x for x in layout):
        return {}
    parts: dict[str, list[dict]] = {}
    for x in layout:
        parts.setdefault(str(x.get("het", 0)), []).append(x)
    return {"groups": {g: {"nodes": hostlist.collect_hostlist([x["node"] for x in xs]), "num_nodes": len(xs),
                           "num_cpus": sum(x["cpus"] for x in xs), "num_tasks": sum(len(x["ranks"]) for x in xs)}
                       for g, xs in parts.items()}}
