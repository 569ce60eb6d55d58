"""The agents' side: node sync (registration, heartbeats, reports, orders), job ends, prologs and
epilogs, lost and silent nodes, and node state changes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, insert, select, update

from slurmlet.common.scripts import exit_code_env
from slurmlet.controller.errors import InvalidRequest, NotFound

from . import het, scripts, steps
from .actions import archive_run
from .base import KILL_WHY, Part, Shared, compress
from .blobs import resolve_secrets
from .prepared import set_job, set_node
from .queries import Queries
from .tables import jobs as J
from .tables import nodes as N
from .tables import steps as S

#: what each node sync reads (made once: see prepared.py)
NODE_SEEN = select(N.c.last_seen).where(N.c.name == bindparam("_node_name"))
ACTIVE_ON = select(J).where(J.c.batch_host == bindparam("_node_name"), J.c.active.is_(True))
ACTIVE_JOB_ON = select(J).where(J.c.id == bindparam("_job_id"), J.c.batch_host == bindparam("_node_name"),
                                J.c.active.is_(True))
NODE_ADDRS = select(N.c.name, N.c.addr).where(N.c.name.in_(bindparam("_names", expanding=True)))


def het_facts(rows: list[Any], alloc: list[dict], def_mem_per_cpu: int | None) -> list[dict]:
    """Each component's facts, in order, from its row and its part of the leader's `alloc`: what
    the *_HET_GROUP_* variables say of it (nodeagent/env.py, het_environment)."""
    out = []
    for comp in rows:
        spec = json.loads(comp.spec)
        mine = het.part_of(alloc, comp.het_job_offset or 0)
        mem_per_cpu = spec.get("mem_per_cpu") or (def_mem_per_cpu if spec.get("mem_per_node") is None else None)
        out.append({"job_id": comp.id, "name": comp.name, "partition": comp.partition,
                    "account": comp.account or comp.user, "qos": comp.qos or "normal",
                    "nodelist": compress([a["node"] for a in mine]), "cpus": [a["cpus"] for a in mine],
                    "tasks": [a["tasks"] for a in mine], "ntasks": sum(a["tasks"] for a in mine),
                    "cpus_per_task": spec.get("cpus_per_task") or 1, "mem_per_cpu": mem_per_cpu,
                    "mem_per_node": spec.get("mem_per_node")})
    return out


@dataclass
class Reaped:
    """What `reap` did: the others nodes of the jobs it ended (their agents must stop what is left),
    the silent nodes they lost, and each job's fate (`requeued`, or the state it ended in)."""

    others: set[str]
    silent: set[str]
    jobs: dict[int, str]

    def __str__(self) -> str:
        fates = ", ".join(f"{jid} {fate}" for jid, fate in sorted(self.jobs.items()))
        return f"{', '.join(sorted(self.silent))} not responding: jobs {fates}"


class NodeSync(Part):
    """The agents' side of the store."""

    def __init__(self, shared: Shared, queries: Queries):
        super().__init__(shared)
        self.queries = queries  #: (whose node rows for submissions a registration makes stale)

    # ---------------------------------------------------------------- nodes
    def node_sync(self, name: str, body: dict, now: float) -> list[dict]:
        """One agent round trip: register/heartbeat, apply its reports, return its orders."""
        with self.engine.begin() as c:
            seen = c.execute(NODE_SEEN, {"_node_name": name}).first()
            heard = None if seen is None else seen.last_seen  # (before this sync)
            self._upsert_node(c, name, body, now, seen is not None)
            # steps first: a job's end cancels its steps still running, not those that just ended
            steps.record(c, name, body.get("steps_finished") or [], now)
            for fin in body.get("finished") or []:
                self._finish(c, name, fin, now)
            self._scripts_done(c, name, body.get("scripts_done") or [], now)
            for lost in body.get("lost") or []:
                self._lost(c, name, lost, now)
            # (the jobs these reports ended: an srun's own allocation ends with its step 0)
            het.follow(c, [r["job_id"] for key in ("finished", "lost", "steps_finished") for r in body.get(key) or []])
            running = set(body.get("running") or [])
            ending, notified = set(body.get("ending") or []), set(body.get("notified") or [])
            stopped = set(body.get("suspended") or [])
            done = {f["job_id"] for f in body.get("finished") or []}
            step_orders = steps.orders_for(c, name, set(body.get("steps_running") or []),
                                           set(body.get("steps_ending") or []),
                                           {f"{f['job_id']}.{f['step_id']}" for f in body.get("steps_finished") or []})
            rows = list(c.execute(ACTIVE_ON, {"_node_name": name}))
            if body.get("resources"):
                # a (re)starting agent runs nothing we do not hear about: the jobs its predecessor could
                # have started were lost with it. A job that started after the node was last heard from
                # was never ordered to any agent (orders go out in syncs): it is launched now, not failed
                # (a cluster restarted, its nodes still up in the database, has jobs placed on them
                # before their new agents register)
                lost = [r for r in rows if r.id not in running and r.id not in done and
                        (heard is None or r.start_time is None or r.start_time <= heard)]
                for r in lost:
                    self._node_failed(c, r, now)
                rows = [r for r in rows if r not in lost]
            orders: list[dict] = []
            active_ids = set()
            for r in rows:
                active_ids.add(r.id)
                if r.id in done:
                    continue
                if r.id in running:
                    if r.pending_action:
                        order = {"op": "kill", "job_id": r.id, "why": KILL_WHY.get(r.pending_action, "cancel")}
                        if r.pending_action.startswith("preempt") and r.preempt_grace:
                            order["grace"] = r.preempt_grace
                        # (not again to an agent that is ending it, or running out the grace it gave)
                        if r.id not in ending and not (order.get("grace") and r.id in notified):
                            orders.append(order)
                    elif r.state == "SUSPENDED" and r.id not in stopped:
                        orders.append({"op": "suspend", "job_id": r.id})
                    elif r.state == "RUNNING" and r.id in stopped:
                        orders.append({"op": "resume", "job_id": r.id})
                    elif r.pending_signal is not None:
                        orders.append({"op": "signal", "job_id": r.id, "signal": r.pending_signal})
                        set_job(c, r.id, {"pending_signal": None})
                elif r.pending_action:
                    # its processes are gone (or never started): finish the transition now
                    self._finish(c, name, {"job_id": r.id, "exit_code": 0, "signal": 15}, now)
                elif not scripts.prologs_pending(c, r.id, r.restarts):  # else: wait for every prolog to succeed
                    order = self._launch_order(r, name)
                    refs = json.loads(r.spec).get("secrets")
                    if refs:  # resolved at launch only: they are stored nowhere else
                        owners = [f"user:{r.user}"] + ([f"account:{r.account}"] if r.account else [])
                        order["environment"] = {**order["environment"], **resolve_secrets(c, refs, owners)}
                    alloc_nodes = [a["node"] for a in order["alloc"]]
                    order["node_addrs"] = dict(c.execute(NODE_ADDRS, {"_names": alloc_nodes}).tuples().all())
                    orders.append(order)
            for jid in sorted(running - active_ids - done - ending):
                orders.append({"op": "kill", "job_id": jid, "why": "orphan"})
            running_scripts = set(body.get("scripts_running") or [])
            orders += [o for o in scripts.orders_for(c, name)
                       if f"{o['job_id']}.{o['run']}.{o['op']}" not in running_scripts]
        return orders + step_orders

    def _upsert_node(self, c: Any, name: str, body: dict, now: float, exists: bool) -> None:
        res = body.get("resources")
        if exists and not res:
            vals: dict[str, Any] = {"last_seen": now}
            if body.get("cpu_load") is not None:
                vals["cpu_load"] = body["cpu_load"]
            if body.get("free_mem") is not None:
                vals["free_mem"] = body["free_mem"]
            set_node(c, name, vals)
            return
        if not res:
            raise NotFound(f"Node {name} is not registered")
        nc = self.config.node(name)
        if nc is None and not self.config.dynamic_nodes:
            raise InvalidRequest(f"Node {name} is not in the cluster configuration")
        vals = dict(
            addr=(nc.addr if nc and nc.addr else None) or res.get("addr") or "127.0.0.1",
            hostname=res.get("hostname") or name,
            cpus=(nc.cpus if nc and nc.cpus else None) or res["cpus"],
            memory=(nc.real_memory if nc and nc.real_memory else None) or res["memory"],
            gpus=nc.gpus if nc and nc.gpus is not None else res.get("gpus", 0),
            # a node configured with its GPUs (Gres=gpu:8) has the type configured with them, none
            # without one: an agent's fake GPUs' default model is for nodes the configuration leaves out
            gpu_type=nc.gpu_type if nc and nc.gpus is not None else res.get("gpu_type"),
            last_seen=now, boot_time=res.get("boot_time"), arch=res.get("arch"), os=res.get("os"),
            version=res.get("version"), cpu_load=body.get("cpu_load"), free_mem=body.get("free_mem"),
            pool=res.get("pool"),
        )
        self.queries.capacity = None  # a node (re)registers: its capacity may change
        if exists:
            c.execute(update(N).where(N.c.name == name).values(registered_at=now, **vals))
        else:
            c.execute(insert(N).values(name=name, admin_state="UP", registered_at=now, **vals))

    def _launch_order(self, r: Any, node: str) -> dict:
        spec = json.loads(r.spec)
        return {
            "op": "launch", "job_id": r.id, "name": r.name, "user": r.user, "uid": r.uid, "gid": r.gid,
            "script": r.script, "environment": json.loads(r.environment), "workdir": spec.get("workdir"),
            "stdout": r.stdout, "stderr": r.stderr, "stdin": spec.get("stdin"),
            # a requeued job's new run appends to its files, as slurmctld sets it up
            "open_mode": "append" if r.restarts else spec.get("open_mode") or "truncate", "time_limit": r.time_limit,
            "start_time": r.start_time, "alloc": json.loads(r.alloc), "nodes": r.nodes,
            "partition": r.partition, "account": r.account, "qos": r.qos, "argv": spec.get("argv") or [],
            "submit_dir": spec.get("submit_dir"), "submit_host": spec.get("submit_host"),
            "ntasks": spec.get("ntasks"), "ntasks_per_node": spec.get("ntasks_per_node"),
            "cpus_per_task": spec.get("cpus_per_task") or 1, "mem_per_node": spec.get("mem_per_node"),
            # DefMemPerCPU stands for a request without --mem or --mem-per-cpu (SLURM_MEM_PER_CPU)
            "mem_per_cpu": spec.get("mem_per_cpu") or (self.config.def_mem_per_cpu
                                                       if spec.get("mem_per_node") is None
                                                       and spec.get("mem_per_gpu") is None else None),
            "exclusive": bool(spec.get("exclusive")), "gpus": spec.get("gpus"),
            "gpus_per_node": spec.get("gpus_per_node"), "gpus_per_task": spec.get("gpus_per_task"),
            "cpus_per_gpu": spec.get("cpus_per_gpu"), "mem_per_gpu": spec.get("mem_per_gpu"),
            "overcommit": bool(spec.get("overcommit")), "gres": bool(spec.get("gres")),
            "restarts": r.restarts, "signal": spec.get("signal"), "comment": r.comment,
            "suspended_secs": r.suspended_secs or 0.0, "master_port": r.master_port, "code": spec.get("code"),
            "py_deps": spec.get("py_deps"),
            "epilog": self.config.script_list("epilog"),
            "home": os.path.join(self.config.home_storage, r.user) if self.config.home_storage else None,
            "array_count": spec.get("array_count"), "array_min": spec.get("array_min"),
            "array_max": spec.get("array_max"), "array_step": spec.get("array_step"),
            "array_job_id": r.array_job_id, "array_task_id": r.array_task_id, "nice": r.nice,
            **self._het_facts(r),
        }

    def _het_facts(self, r: Any) -> dict:
        """A heterogeneous job's launch: the batch script sees its first component's allocation, and
        each component's facts (`het`, for the *_HET_GROUP_* variables)."""
        if r.het_job_id is None:
            return {}
        alloc = json.loads(r.alloc or "[]")
        with self.engine.connect() as c:
            rows = het.components(c, r.id)
        return {"alloc": het.part_of(alloc, 0), "het": het_facts(rows, alloc, self.config.def_mem_per_cpu)}

    def _finish(self, c: Any, node: str, fin: dict, now: float) -> None:
        """The batch script of a job ended on `node` (or its processes are gone)."""
        r = c.execute(ACTIVE_JOB_ON, {"_job_id": fin["job_id"], "_node_name": node}).first()
        if r is None or (fin.get("restarts") is not None and fin["restarts"] != r.restarts):
            return  # already applied, or about an earlier incarnation: reports are idempotent
        steps.end_job_steps(c, r.id, now)  # the batch script is done: so are its steps
        if fin.get("epilog_failed") or fin.get("prolog_failed"):
            what = "Prolog" if fin.get("prolog_failed") else "Epilog"
            c.execute(update(N).where(N.c.name == node).values(admin_state="DRAIN", reason=f"{what} error",
                                                             reason_time=now))
        if fin.get("prolog_failed"):  # the job never ran: back to the queue, held, as slurmctld does
            c.execute(update(J).where(J.c.id == r.id, J.c.active.is_(True)).values(**self.shared.requeued_values(now, True)))
            return
        code, sig = int(fin.get("exit_code") or 0), int(fin.get("signal") or 0)
        self._end_scripts(c, r, code, sig, now)
        end = fin.get("end_time") or now
        action = r.pending_action
        if action in ("requeue", "requeue_hold", "preempt_requeue"):
            archive_run(c, r, "PREEMPTED" if action == "preempt_requeue" else "REQUEUED", now,
                              int(fin.get("exit_code") or 0), int(fin.get("signal") or 0))
            c.execute(update(J).where(J.c.id == r.id, J.c.active.is_(True)).values(
                **self.shared.requeued_values(now, action == "requeue_hold")))
            return
        vals: dict = dict(active=False, pending_action=None, pending_signal=None,
                          batch_exit_code=code, batch_exit_signal=sig, batch_max_rss=fin.get("max_rss"),
                          batch_max_vms=fin.get("max_vms"),
                          batch_user_cpu=fin.get("user_cpu"), batch_system_cpu=fin.get("system_cpu"))
        if action == "cancel":
            vals.update(batch_state="CANCELLED")
        elif action == "preempt":
            vals.update(state="PREEMPTED", reason="None", end_time=end, batch_state="CANCELLED",
                        exit_code=0, exit_signal=0)
        elif (fin.get("timeout") or fin.get("oom") or sig or code or fin.get("launch_failed")) and \
                r.restarts < (json.loads(r.spec).get("max_retries") or 0):
            # an air run's failed attempt: run it again under the same id (the attempt counter is restarts)
            archive_run(c, r, "TIMEOUT" if fin.get("timeout") else "FAILED", now, code, sig)
            retry = self.shared.requeued_values(now, False)
            retry.update(begin_time=now, eligible_time=now, reason="None")
            c.execute(update(J).where(J.c.id == r.id, J.c.active.is_(True)).values(**retry))
            return
        elif fin.get("timeout"):
            vals.update(state="TIMEOUT", reason="TimeLimit", end_time=end, batch_state="CANCELLED",
                        exit_code=0, exit_signal=0)
        elif fin.get("oom"):  # the kernel killed some of it for its cgroup's memory limit: Slurm's 0:125
            vals.update(state="OUT_OF_MEMORY", reason="OutOfMemory", end_time=end, batch_state="OUT_OF_MEMORY",
                        exit_code=0, exit_signal=125, batch_exit_code=0, batch_exit_signal=125)
        elif fin.get("launch_failed"):  # (with a signal: its input could not be opened, Slurm's 0:53)
            vals.update(state="FAILED", reason="JobLaunchFailure", end_time=end,
                        batch_state="CANCELLED" if sig else "FAILED", exit_code=0 if sig else code or 1, exit_signal=sig)
        elif sig:
            vals.update(state="FAILED", reason="JobLaunchFailure", end_time=end, batch_state="CANCELLED",
                        exit_code=0, exit_signal=sig)
        elif code:
            vals.update(state="FAILED", reason="NonZeroExitCode", end_time=end, batch_state="FAILED",
                        exit_code=code, exit_signal=0)
        else:
            vals.update(state="COMPLETED", reason="None", end_time=end, batch_state="COMPLETED",
                        exit_code=0, exit_signal=0)
        set_node(c, node, {"last_busy": now})
        set_job(c, r.id, vals, active=True)

    def start_prologs(self, c: Any, job_id: int, now: float) -> list[str]:
        """A job just started: Prolog rows for each of its nodes, PrologSlurmctld's for the controller.
        Returns the nodes to wake (their agents have a prolog to run)."""
        prolog, ctld = self.config.script_list("prolog"), self.config.script_list("prologslurmctld")
        if not prolog and not ctld:
            return []
        r = c.execute(select(J).where(J.c.id == job_id)).first()
        nodes = [a["node"] for a in json.loads(r.alloc)]
        if prolog:
            scripts.add(c, r.id, r.restarts, nodes, "prolog", dict(self._launch_order(r, ""), script="", prolog=prolog),
                        now)
        if ctld:
            env = scripts.controller_environment(r, "prolog_slurmctld", self.config.cluster_name)
            scripts.add(c, r.id, r.restarts, [scripts.CONTROLLER], "prolog_slurmctld", {"env": env, "script": ctld}, now)
            self.shared.controller_scripts = True
        return nodes if prolog else []

    def _end_scripts(self, c: Any, r: Any, code: int, sig: int, now: float) -> None:
        """A job's run ended: Epilog on its nodes other than the batch host (which ran its own before
        reporting), EpilogSlurmctld on the controller."""
        scripts.forget_prologs(c, r.id)
        epilog, ctld = self.config.script_list("epilog"), self.config.script_list("epilogslurmctld")
        others = [a["node"] for a in json.loads(r.alloc or "[]") if a["node"] != r.batch_host]
        if epilog and others:
            order = dict(self._launch_order(r, ""), script="", exit_code=code, signal=sig)
            scripts.add(c, r.id, r.restarts, others, "epilog", order, now)
            self.shared.notify_hosts.update(others)
        if ctld:
            env = dict(scripts.controller_environment(r, "epilog_slurmctld", self.config.cluster_name),
                       **exit_code_env(code, sig))
            scripts.add(c, r.id, r.restarts, [scripts.CONTROLLER], "epilog_slurmctld", {"env": env, "script": ctld}, now)
            self.shared.controller_scripts = True

    def _scripts_done(self, c: Any, node: str, reports: list[dict], now: float) -> None:
        """Prologs and epilogs that ended on `node` (or the controller): a failing one drains its
        node; a failing prolog requeues the job held; the last prolog to succeed lets it launch."""
        for rep in scripts.record(c, node, reports):
            failed = bool(rep.get("exit_code"))
            if failed and node != scripts.CONTROLLER:
                what = "Prolog" if rep["kind"] == "prolog" else "Epilog"
                c.execute(update(N).where(N.c.name == node).values(admin_state="DRAIN", reason=f"{what} error",
                                                                 reason_time=now))
            if rep["kind"] not in scripts.PROLOGS:
                continue
            r = c.execute(select(J.c.id, J.c.batch_host).where(
                J.c.id == rep["job_id"], J.c.restarts == rep["run"], J.c.active.is_(True), J.c.state == "RUNNING",
                J.c.pending_action.is_(None))).first()
            if r is None:
                continue
            if failed:
                # the job never ran: back to the queue. A node's prolog holds it (the node is
                # drained); PrologSlurmctld's requeues it as it is, after the requeue delay, and
                # sacct -D keeps the run as REQUEUED (as a real slurmctld 22.05 does)
                ctld = rep["kind"] == "prolog_slurmctld"
                if ctld:
                    row = c.execute(select(J).where(J.c.id == r.id)).first()
                    archive_run(c, row, "REQUEUED", now)
                c.execute(update(J).where(J.c.id == r.id, J.c.active.is_(True)).values(
                    **self.shared.requeued_values(now, not ctld)))
            elif not scripts.prologs_pending(c, r.id, rep["run"]):
                self.shared.notify_hosts.add(r.batch_host)

    def claim_controller_scripts(self) -> list[Any]:
        """PrologSlurmctld/EpilogSlurmctld runs waiting for the controller (marked running)."""
        if not self.shared.controller_scripts:
            return []
        self.shared.controller_scripts = False
        with self.engine.begin() as c:
            return scripts.claim_controller(c)

    def forget_unconfigured_nodes(self) -> list[str]:
        """At the controller's start: nodes slurm.conf no longer names (and no pool brought) are gone,
        as in Slurm, unless a job still holds them. Returns their names."""
        names = {n.name for n in self.config.nodes}
        if not names:
            return []
        with self.engine.begin() as c:
            held = {a["node"] for (alloc,) in c.execute(select(J.c.alloc).where(J.c.active.is_(True)))
                    for a in json.loads(alloc or "[]")}
            gone = [r.name for r in c.execute(select(N.c.name, N.c.pool))
                    if r.pool is None and r.name not in names and r.name not in held]
            if gone:
                c.execute(N.delete().where(N.c.name.in_(gone)))
        self.queries.capacity = None
        return gone

    def reset_controller_scripts(self) -> None:
        with self.engine.begin() as c:
            scripts.reset_controller(c)
        self.shared.controller_scripts = True

    def controller_script_done(self, report: dict, now: float) -> None:
        with self.engine.begin() as c:
            self._scripts_done(c, scripts.CONTROLLER, [report], now)

    def take_notify(self) -> set[str]:
        out = set(self.shared.notify_hosts)
        self.shared.notify_hosts.clear()
        return out

    def _node_failed(self, c: Any, r: Any, now: float) -> str:
        """The job's node lost it: requeue when allowed (JobRequeue / --requeue), else NODE_FAIL.
        Returns what became of it: `requeued`, or the state it ended in."""
        steps.end_job_steps(c, r.id, now)
        self._end_scripts(c, r, 0, 9, now)
        if r.pending_action == "cancel":
            c.execute(update(J).where(J.c.id == r.id).values(active=False, pending_action=None,
                                                              batch_state="CANCELLED", batch_exit_signal=9))
            return r.state
        if r.pending_action == "preempt":
            c.execute(update(J).where(J.c.id == r.id).values(
                state="PREEMPTED", active=False, end_time=now, pending_action=None, batch_state="CANCELLED",
                batch_exit_signal=9))
            return "PREEMPTED"
        if r.requeue and r.pending_action != "requeue_hold" or r.pending_action in ("requeue",
                                                                                  "preempt_requeue"):
            archive_run(c, r, "NODE_FAIL", now, 0, 9)
            c.execute(update(J).where(J.c.id == r.id).values(**self.shared.requeued_values(now, False)))
            return "requeued"
        c.execute(update(J).where(J.c.id == r.id).values(
            state="NODE_FAIL", reason="NodeDown", active=False, end_time=now, pending_action=None,
            batch_state="CANCELLED", batch_exit_code=0, batch_exit_signal=9, exit_code=0, exit_signal=0))
        return "NODE_FAIL"

    def _lost(self, c: Any, node: str, rep: dict, now: float) -> None:
        """The restarted agent of `node` found the job's batch script (or its tasks of a step) left
        running by its crashed predecessor, and killed them: the job lost the node, as in `reap`
        (NODE_FAIL, or requeued when allowed). Reports about an earlier run or an ended step are
        stale and change nothing."""
        r = c.execute(select(J).where(J.c.id == rep["job_id"], J.c.active.is_(True)).with_for_update()).first()
        if r is None:
            return
        nodes = {a["node"] for a in json.loads(r.alloc or "[]")}
        if node not in nodes:
            return
        if rep.get("step_id") is not None:
            st = c.execute(select(S.c.state).where(S.c.job_id == r.id, S.c.step_id == rep["step_id"])).first()
            if st is None or st.state != "RUNNING":
                return
        elif r.batch_host != node or (rep.get("restarts") is not None and rep["restarts"] != r.restarts):
            return
        self._node_failed(c, r, now)
        self.shared.notify_hosts.update(nodes - {node})  # their agents stop what is left of it

    def reap(self, now: float) -> Reaped | None:
        """Jobs on a node whose agent has been silent for SlurmdTimeout lose it: requeued when allowed,
        else NODE_FAIL (see `_node_failed`). Returns None when no job changed, else which nodes were
        silent, what became of each job, and the job's other nodes (their agents must stop what is
        left of it)."""
        limit = now - self.config.slurmd_timeout
        with self.engine.begin() as c:
            silent = set(c.execute(select(N.c.name).where(N.c.last_seen < limit)).scalars())
            if not silent:
                return None
            out = Reaped(set(), set(), {})
            for r in c.execute(select(J).where(J.c.active.is_(True)).with_for_update()).all():
                nodes = {a["node"] for a in json.loads(r.alloc or "[]")}
                if nodes & silent:
                    out.jobs[r.id] = self._node_failed(c, r, now)
                    out.silent |= nodes & silent
                    out.others |= nodes - silent
            het.follow(c, out.jobs)
        return out if out.jobs else None


    def set_node_state(self, name: str, state: str, reason: str | None, now: float) -> None:
        with self.engine.begin() as c:
            res = c.execute(update(N).where(N.c.name == name).values(
                admin_state=state, reason=reason, reason_time=now if reason else None))
            if res.rowcount == 0:
                raise NotFound("Invalid node name specified")

