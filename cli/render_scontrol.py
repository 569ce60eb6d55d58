"""`scontrol show job|node|partition`, Slurm 22.05 byte for byte (one per line with `-o`). Pure: the
API's records in, the complete text out."""


from __future__ import annotations

from slurmlet.cli import hosts
from slurmlet.common import fmt as F
from slurmlet.common.jobfacts import (
    alloc_node,
    free_mem,
    job_end_time,
    job_exit,
    job_gpus_total,
    job_min_cpus_node,
    job_min_memory,
    job_reason,
    job_time_used,
    job_tres_str,
    node_code,
    node_sct,
    now_or_clock,
)

TYPE_CHECKING = False  # keep typing (~7 ms) out of the CLI's import path
if TYPE_CHECKING:
    from typing import Any

    JobDict = dict[str, Any]
    NodeDict = dict[str, Any]
    PartDict = dict[str, Any]


def _finish(lines: list[str], one_liner: bool, trailing: bool) -> str:
    """Join scontrol lines with Slurm's ``line_end`` and end the record.

    ``trailing`` appends one more ``line_end`` before the end (job records do).
    """
    sep = " " if one_liner else "\n   "
    text = sep.join(lines)
    if trailing:
        text += sep
    return text + ("\n" if one_liner else "\n\n")


def _job_detail_lines(job: JobDict) -> list[str]:
    """``-d`` lines of a job with an allocation: ``JOB_GRES=`` and per-node CPU/Mem/GRES."""
    from slurmlet.common.grammar import fmt_ranges
    names = job.get("node_list") or hosts.expand_hostlist(job.get("nodes") or "")
    if not names:
        return []
    gpus = job_gpus_total(job)
    lines = [f"JOB_GRES={f'gpu:{gpus}' if gpus else '(null)'}"]
    per_cpus = job.get("cpus_per_node") or {}
    cpu_ids = job.get("cpu_ids") or {}
    gpu_ids = job.get("gpu_ids") or {}
    n = len(names)
    groups: list[tuple[list[str], tuple]] = []
    for name in names:
        cpus = int(per_cpus.get(name) or max(int(job.get("num_cpus") or 1) // n, 1))
        ids = cpu_ids.get(name)
        if isinstance(ids, (list, tuple)):
            ids = fmt_ranges(ids)
        ids = ids or ("0" if cpus == 1 else f"0-{cpus - 1}")
        if job.get("mem_per_cpu"):
            mem = int(job["mem_per_cpu"]) * cpus
        else:
            mem = int(job.get("mem_per_node") or 0)
        g = gpu_ids.get(name) or []
        gres = f"gpu:{len(g)}(IDX:{fmt_ranges(g)})" if g else ""
        desc = (ids, mem, gres)
        if groups and groups[-1][1] == desc:
            groups[-1][0].append(name)
        else:
            groups.append(([name], desc))
    for members, (ids, mem, gres) in groups:
        lines.append(f"  Nodes={hosts.compress_hostlist(members)} CPU_IDs={ids} Mem={mem} GRES={gres}")
    return lines


def scontrol_show_job(job: JobDict, *, one_liner: bool = False, details: bool = False,
                      now: float | None = None) -> str:
    """Render one job as ``scontrol show job`` (``-o``: ``one_liner``, ``-d``: ``details``).

    Returns the full record text including its trailing newline(s).
    """
    from slurmlet.common.slurmtime import fmt_mins_long, fmt_secs_long
    t = now_or_clock(now)
    j = job
    state = j.get("state") or "PENDING"
    head = f"JobId={j['job_id']} "
    if j.get("array_job_id") is not None and (j.get("array_task_id") is not None or j.get("array_task_str")):
        head += f"ArrayJobId={j['array_job_id']} ArrayTaskId={j.get('array_task_str') or j['array_task_id']} "
        if j.get("array_max_tasks"):
            head += f"ArrayTaskThrottle={j['array_max_tasks']} "
    if j.get("het_job_id") is not None:
        head += f"HetJobId={j['het_job_id']} HetJobOffset={j.get('het_job_offset') or 0} "
    head += f"JobName={j.get('name')}"
    lines = [head]
    if j.get("het_job_id_set"):
        lines.append(f"HetJobIdSet={j['het_job_id_set']}")
    lines += [
        f"UserId={j.get('user')}({j.get('uid', 0)}) GroupId={j.get('group')}({j.get('gid', 0)}) "
        "MCS_label=N/A",
        f"Priority={j.get('priority', 0)} Nice={j.get('nice') or 0} Account={j.get('account')} "
        f"QOS={j.get('qos')}",
        f"JobState={state} Reason={job_reason(j).replace(' ', '_')} "
        f"Dependency={j.get('dependency') or '(null)'}",
        f"Requeue={1 if j.get('requeue', True) else 0} Restarts={j.get('restarts') or 0} "
        f"BatchFlag={1 if j.get('batch', True) else 0} Reboot=0 ExitCode={job_exit(j, ctld=True)}",
    ]
    if details:
        lines.append(f"DerivedExitCode={job_exit(j, derived=True)}")
    limit = j.get("time_limit")
    lines.append(f"RunTime={fmt_secs_long(job_time_used(j, t))} "
                 f"TimeLimit={fmt_mins_long(limit)} TimeMin=N/A")
    lines.append(f"SubmitTime={F.fmt_time(j.get('submit_time'))} "
                 f"EligibleTime={F.fmt_time(j.get('eligible_time'))}")
    lines.append(f"AccrueTime={F.fmt_time(j.get('accrue_time', j.get('eligible_time')))}")
    end = job_end_time(j)
    end_s = "Unknown" if (limit is None and (end is None or end > t)) else F.fmt_time(end)
    start = j.get("start_time") or j.get("expected_start")
    if start and state == "PENDING" and limit is not None:
        end_s = F.fmt_time(start + limit * 60)
    lines.append(f"StartTime={F.fmt_time(start)} EndTime={end_s} Deadline=N/A")
    preempt = j.get("preemptable_time", j.get("start_time") if state != "PENDING" else None)
    if preempt:
        lines.append(f"PreemptEligibleTime={F.fmt_time(preempt)} "
                     f"PreemptTime={F.fmt_time(j.get('preempt_time'), 'None')}")
    sched = j.get("last_sched_eval") or j.get("start_time") or j.get("submit_time")
    lines.append(f"SuspendTime={F.fmt_time(j.get('suspend_time'), 'None')} "
                 f"SecsPreSuspend={int(j.get('pre_sus_time') or 0)} LastSchedEval={F.fmt_time(sched)} "
                 f"Scheduler={j.get('scheduler') or 'Main'}")
    host, sid = alloc_node(j)
    lines.append(f"Partition={j.get('partition')} AllocNode:Sid={host}:{sid}")
    lines.append(f"ReqNodeList={j.get('req_nodes') or '(null)'} ExcNodeList={j.get('exc_nodes') or '(null)'}")
    lines.append(f"NodeList={j.get('nodes') or ''}")
    if j.get("batch_host"):
        lines.append(f"BatchHost={j['batch_host']}")
    nn = str(j.get("num_nodes") or 0)
    if state == "PENDING" and j.get("nodes_max") and int(j["nodes_max"]) > int(nn):
        nn = f"{nn}-{j['nodes_max']}"
    lines.append(f"NumNodes={nn} NumCPUs={j.get('num_cpus') or 0} NumTasks={j.get('num_tasks') or 0} "
                 f"CPUs/Task={j.get('cpus_per_task') or 1} ReqB:S:C:T=0:0:*:*")
    lines.append(f"TRES={job_tres_str(j)}")
    lines.append(f"Socks/Node=* NtasksPerN:B:S:C={j.get('ntasks_per_node') or 0}:0:*:* CoreSpec=*")
    if details and j.get("nodes") and state not in ("PENDING",):
        lines.extend(_job_detail_lines(j))
    kind, mem = job_min_memory(j)
    lines.append(f"MinCPUsNode={job_min_cpus_node(j)} MinMemory{kind}={mem} MinTmpDiskNode=0")
    lines.append("Features=(null) DelayBoot=00:00:00")
    lines.append(f"OverSubscribe={'NO' if j.get('exclusive') else 'OK'} Contiguous=0 "
                 f"Licenses=(null) Network=(null)")
    lines.append(f"Command={j.get('command') or '(null)'}")
    lines.append(f"WorkDir={j.get('workdir')}")
    if j.get("comment"):
        lines.append(f"Comment={j['comment']} ")
    if j.get("batch", True):
        lines.append(f"StdErr={j.get('stderr') or ''}")
        lines.append(f"StdIn={j.get('stdin') or '/dev/null'}")
        lines.append(f"StdOut={j.get('stdout') or ''}")
    lines.append("Power=")
    if j.get("tres_per_node"):
        lines.append(f"TresPerNode={j['tres_per_node']}")
    return _finish(lines, one_liner, trailing=True)


def _node_cfg_tres(node: NodeDict) -> str:
    """``CfgTRES=cpu=8,mem=32000M,billing=8,gres/gpu=8``."""
    cpus = int(node.get("cpus") or 0)
    return F.tres_string([("cpu", cpus), ("mem", F.convert_num(node.get("real_memory") or 0)),
                          ("billing", cpus), ("gres/gpu", node.get("gpus") or None)])


def _node_alloc_tres(node: NodeDict) -> str:
    """``AllocTRES=cpu=1,mem=1000M[,gres/gpu=8]`` (empty when idle)."""
    return F.tres_string([("cpu", node.get("cpus_alloc") or None),
                          ("mem", F.convert_num(node["alloc_memory"]) if node.get("alloc_memory") else None),
                          ("gres/gpu", node.get("gpus_alloc") or None)])


def scontrol_show_node(node: NodeDict, *, one_liner: bool = False, now: float | None = None) -> str:
    """Render one node as ``scontrol show node``. Returns the record text with its newlines."""
    n = node
    sockets, cores, threads = node_sct(n)
    cpus = int(n.get("cpus") or 0)
    head = f"NodeName={n['name']} "
    if n.get("arch"):
        head += f"Arch={n['arch']} "
    head += f"CoresPerSocket={cores} "
    load = n.get("cpu_load")
    lines = [
        head,
        f"CPUAlloc={n.get('cpus_alloc') or 0} CPUEfctv={cpus} CPUTot={cpus} "
        f"CPULoad={'N/A' if load is None else f'{float(load):.2f}'}",
        f"AvailableFeatures={n.get('features') or '(null)'}",
        f"ActiveFeatures={n.get('features_act') or n.get('features') or '(null)'}",
        f"Gres={n.get('gres') or '(null)'}",
        f"NodeAddr={n.get('addr') or n['name']} NodeHostName={n.get('hostname') or n['name']} "
        f"Version={n.get('version') or '(null)'}",
    ]
    if n.get("os"):
        lines.append(f"OS={n['os']} ")
    free = free_mem(n)
    lines.append(f"RealMemory={n.get('real_memory') or 0} AllocMem={n.get('alloc_memory') or 0} "
                 f"FreeMem={'N/A' if free is None else free} Sockets={sockets} Boards=1")
    lines.append(f"State={F.node_state_complete(node_code(n))} ThreadsPerCore={threads} "
                 f"TmpDisk={n.get('tmp_disk') or 0} Weight={n.get('weight') or 1} Owner=N/A MCS_label=N/A")
    if n.get("partitions"):
        lines.append(f"Partitions={','.join(n['partitions'])} ")
    lines.append(f"BootTime={F.fmt_time(n.get('boot_time'), 'None')} "
                 f"SlurmdStartTime={F.fmt_time(n.get('slurmd_start_time'), 'None')}")
    lines.append(f"LastBusyTime={F.fmt_time(n.get('last_busy'))}")
    lines.append(f"CfgTRES={_node_cfg_tres(n)}")
    lines.append(f"AllocTRES={_node_alloc_tres(n)}")
    lines.append("CapWatts=n/a")
    lines.append("CurrentWatts=0 AveWatts=0")
    lines.append("ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s")
    if n.get("reason"):
        reason = f"Reason={n['reason']}"
        if n.get("reason_time"):
            reason += f" [{n.get('reason_user') or 'root'}@{F.fmt_time(n['reason_time'])}]"
        lines.append(reason)
    return _finish(lines, one_liner, trailing=False)


def _part_tres(p: PartDict) -> str:
    """``TRES=cpu=32,mem=125G,node=4,billing=32,gres/gpu=32``."""
    if p.get("tres"):
        return p["tres"]
    cpus = int(p.get("total_cpus") or 0)
    mem = p.get("total_memory")
    return F.tres_string([("cpu", cpus), ("mem", F.convert_num(mem) if mem else None),
                          ("node", int(p.get("total_nodes") or 0)), ("billing", cpus),
                          ("gres/gpu", p.get("total_gpus") or None)])


def scontrol_show_step(job: JobDict, step: dict, *, one_liner: bool = False) -> str:
    """One running step as ``scontrol show step`` (22.05): the batch step with no TRES and no srun,
    an srun step with its CPUs, memory (its nodes' share of the job's) and srun's host and pid."""
    batch = step["step"] == "batch"
    nodes = step.get("num_nodes") or 1
    lines = [f"StepId={job['job_id']}.{step['step']} UserId={job.get('uid', 0)} "
             f"StartTime={F.fmt_time(step.get('start_time'))} TimeLimit=UNLIMITED",
             f"State={step['state']} Partition={job.get('partition')} NodeList={step.get('nodes')}",
             f"Nodes={nodes} CPUs={0 if batch else step.get('num_cpus', 0)} Tasks={step.get('num_tasks', 1)} "
             f"Name={step.get('name')} Network=(null)"]
    if batch:
        lines += ["TRES=(null)", "ResvPorts=(null)", "CPUFreqReq=Default", "SrunHost:Pid=(null):0"]
    else:
        per_node = (job.get("alloc_memory") or 0) // max(1, job.get("num_nodes") or 1)
        mem = f",mem={per_node * nodes}M" if per_node else ""
        tasks = step.get("num_tasks", 1)
        dist = "Cyclic" if tasks <= nodes else "Block"  # srun's default: tasks over nodes in turn, then blocks
        lines += [f"TRES=cpu={step.get('num_cpus', 0)}{mem},node={nodes}", "ResvPorts=(null)",
                  f"CPUFreqReq=Default Dist={dist}",
                  f"SrunHost:Pid={step.get('srun_host') or '(null)'}:{step.get('srun_pid') or 0}"]
    return _finish(lines, one_liner, trailing=False)


def scontrol_show_partition(part: PartDict, *, one_liner: bool = False) -> str:
    """Render one partition as ``scontrol show partition``, trailing newlines included."""
    from slurmlet.common.slurmtime import fmt_mins_long
    p = part
    max_time = p.get("max_time")
    default_time = p.get("default_time")
    max_nodes = p.get("max_nodes")
    lines = [
        f"PartitionName={p['name']}",
        "AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL",
        f"AllocNodes=ALL Default={'YES' if p.get('default') else 'NO'} QoS=N/A",
        f"DefaultTime={'NONE' if default_time is None else fmt_mins_long(default_time)} "
        f"DisableRootJobs=NO ExclusiveUser=NO GraceTime={p.get('grace_time') or 0} Hidden=NO",
        f"MaxNodes={'UNLIMITED' if max_nodes is None else max_nodes} "
        f"MaxTime={fmt_mins_long(max_time)} MinNodes={p.get('min_nodes') or 0} LLN=NO "
        f"MaxCPUsPerNode=UNLIMITED",
    ]
    if p.get("nodes"):
        lines.append(f"Nodes={p['nodes']}")
    lines.append(f"PriorityJobFactor={p.get('priority_job_factor', 1)} "
                 f"PriorityTier={p.get('priority_tier', 1)} "
                 f"RootOnly=NO ReqResv=NO OverSubscribe=NO")
    lines.append(f"OverTimeLimit=NONE PreemptMode={p.get('preempt_mode') or 'OFF'}")
    lines.append(f"State={str(p.get('state') or 'UP').upper()} TotalCPUs={p.get('total_cpus') or 0} "
                 f"TotalNodes={p.get('total_nodes') or 0} SelectTypeParameters=NONE")
    lines.append("JobDefaults=(null)")
    lines.append("DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED")
    lines.append(f"TRES={_part_tres(p)}")
    return _finish(lines, one_liner, trailing=False)
