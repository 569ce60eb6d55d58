"""The environment a batch script sees, as slurmd/slurmstepd build it (pure)."""

from __future__ import annotations

import os

from ..common.grammar import compress_counts
from ..common.jobfacts import working_cluster


def rendezvous(order: dict, node: str, node_addr: str) -> dict[str, str]:
    """torchrun's and the AI Runtime's variables: the first node's address and the job's port, the
    node count, this node's rank, and the local world size (GPUs here, else tasks here)."""
    alloc = order["alloc"]
    names = [a["node"] for a in alloc]
    rank = names.index(node) if node in names else 0
    mine = alloc[rank]
    addrs = order.get("node_addrs") or {}
    out = {"MASTER_ADDR": addrs.get(names[0]) or node_addr, "NUM_NODES": str(len(alloc)), "NODE_RANK": str(rank),
           "LOCAL_WORLD_SIZE": str(len(mine.get("gpu_ids") or []) or mine.get("tasks") or 1)}
    if order.get("master_port"):
        out["MASTER_PORT"] = str(order["master_port"])
    return out


def het_environment(het: list[dict]) -> dict[str, str]:
    """A heterogeneous job's variables: each component's facts under `*_HET_GROUP_<n>` and 22.05's
    older `*_PACK_GROUP_<n>` names, and the number of components (`het`: nodesync.het_facts)."""
    out = {"SLURM_HET_SIZE": str(len(het)), "SLURM_PACK_SIZE": str(len(het))}
    for n, comp in enumerate(het):
        cpus, tasks = comp["cpus"] or [1], comp["tasks"] or [1]
        facts = {"SLURM_JOB_ACCOUNT": comp["account"], "SLURM_JOB_CPUS_PER_NODE": compress_counts(cpus),
                 "SLURM_JOB_ID": str(comp["job_id"]), "SLURM_JOB_NAME": comp["name"],
                 "SLURM_JOB_NODELIST": comp["nodelist"], "SLURM_JOB_NUM_NODES": str(len(cpus)),
                 "SLURM_JOB_PARTITION": comp["partition"], "SLURM_JOB_QOS": comp["qos"],
                 "SLURM_NPROCS": str(sum(tasks)), "SLURM_NTASKS": str(sum(tasks)),
                 "SLURM_TASKS_PER_NODE": compress_counts(tasks)}
        if comp.get("cpus_per_task") and comp["cpus_per_task"] != 1:
            facts["SLURM_CPUS_PER_TASK"] = str(comp["cpus_per_task"])
        if comp.get("mem_per_cpu"):
            facts["SLURM_MEM_PER_CPU"] = str(comp["mem_per_cpu"])
        elif comp.get("mem_per_node") is not None:
            facts["SLURM_MEM_PER_NODE"] = str(comp["mem_per_node"])
        for name, value in facts.items():
            out[f"{name}_HET_GROUP_{n}"] = out[f"{name}_PACK_GROUP_{n}"] = value
    return out


def batch_environment(order: dict, *, node: str, cluster: str, controller_url: str, bin_dir: str,
                      node_addr: str, submit_host: str | None = None) -> dict[str, str]:
    """Job environment for the batch script on the first node of the allocation."""
    alloc = order["alloc"]
    mine = next((a for a in alloc if a["node"] == node), alloc[0])
    env = dict(order.get("environment") or {})
    job_id = str(order["job_id"])
    tasks = [a["tasks"] for a in alloc]
    cpus = [a["cpus"] for a in alloc]
    ntasks = sum(tasks)
    if not order.get("ntasks") and not order.get("ntasks_per_node"):  # no task count: a task per -c CPUs
        tasks = [c // (order.get("cpus_per_task") or 1) or 1 for c in cpus]  # (a whole node under --exclusive)
    s = {
        "ENVIRONMENT": "BATCH",
        "HOSTNAME": node,
        "SLURMD_NODENAME": node,
        "SLURM_CLUSTER_NAME": cluster,
        "SLURM_CPUS_ON_NODE": str(mine["cpus"]),
        "SLURM_GTIDS": "0",
        "SLURM_JOBID": job_id,
        "SLURM_JOB_ID": job_id,
        "SLURM_JOB_ACCOUNT": order.get("account") or order["user"],
        "SLURM_JOB_CPUS_PER_NODE": compress_counts(cpus),
        "SLURM_JOB_GID": str(order.get("gid", 0)),
        "SLURM_JOB_NAME": order["name"],
        "SLURM_JOB_NODELIST": order["nodes"],
        "SLURM_JOB_NUM_NODES": str(len(alloc)),
        "SLURM_JOB_PARTITION": order["partition"],
        "SLURM_JOB_QOS": order.get("qos") or "normal",
        "SLURM_JOB_UID": str(order.get("uid", 0)),
        "SLURM_JOB_USER": order["user"],
        "SLURM_LOCALID": "0",
        "SLURM_NNODES": str(len(alloc)),
        "SLURM_NODEID": "0",
        "SLURM_NODELIST": order["nodes"],
        "SLURM_NODE_ALIASES": "(null)",
        "SLURM_PRIO_PROCESS": str(order.get("nice") or 0),
        "SLURM_PROCID": "0",
        "SLURM_SUBMIT_DIR": order.get("submit_dir") or order.get("workdir") or "/",
        "SLURM_SUBMIT_HOST": submit_host or order.get("submit_host") or "localhost",
        "SLURM_TASKS_PER_NODE": compress_counts(tasks),
        "SLURM_TOPOLOGY_ADDR": node,
        "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
        "SLURM_WORKING_CLUSTER": working_cluster(cluster, controller_url),
        "TMPDIR": env.get("TMPDIR") or "/tmp",
        "SLURMLET_CONTROLLER": controller_url,
        # the cluster key the job's srun and scontrol sign with (the agent's; a job's own wins)
        **({"SLURMLET_KEY_FILE": os.environ["SLURMLET_KEY_FILE"]}
           if os.environ.get("SLURMLET_KEY_FILE") and "SLURMLET_KEY_FILE" not in env else {}),
        # and the credential service for a job whose user may not read that key (slurmlet credd)
        **({"SLURMLET_CRED_SOCKET": os.environ["SLURMLET_CRED_SOCKET"]}
           if os.environ.get("SLURMLET_CRED_SOCKET") and "SLURMLET_CRED_SOCKET" not in env else {}),
        "SLURMLET_NODE_ADDR": node_addr,
    }
    if order.get("ntasks") or order.get("ntasks_per_node"):  # only when asked for, as sbatch sets them
        s["SLURM_NTASKS"] = s["SLURM_NPROCS"] = str(ntasks)
    if order.get("ntasks_per_node"):
        s["SLURM_NTASKS_PER_NODE"] = str(order["ntasks_per_node"])
    if order.get("cpus_per_task") and order["cpus_per_task"] != 1:
        s["SLURM_CPUS_PER_TASK"] = str(order["cpus_per_task"])
    if order.get("mem_per_cpu"):
        s["SLURM_MEM_PER_CPU"] = str(order["mem_per_cpu"])
    if order.get("mem_per_node") is not None:
        s["SLURM_MEM_PER_NODE"] = str(order["mem_per_node"] or mine["memory"])
    if order.get("restarts"):
        s["SLURM_RESTART_COUNT"] = str(order["restarts"])
    if order.get("gpus"):
        s["SLURM_GPUS"] = str(order["gpus"])
    if order.get("gpus_per_node") and not order.get("gres"):  # (--gres=gpu:N sets none)
        s["SLURM_GPUS_PER_NODE"] = str(order["gpus_per_node"])
    if order.get("gpus_per_task"):
        s["SLURM_GPUS_PER_TASK"] = str(order["gpus_per_task"])
    if order.get("cpus_per_gpu"):
        s["SLURM_CPUS_PER_GPU"] = str(order["cpus_per_gpu"])
    if order.get("mem_per_gpu") is not None:
        s["SLURM_MEM_PER_GPU"] = str(order["mem_per_gpu"])
    if order.get("overcommit"):
        s["SLURM_OVERCOMMIT"] = "1"
    gpus = mine.get("gpu_ids") or []
    if gpus:
        ids = ",".join(str(g) for g in gpus)
        s.update({"CUDA_VISIBLE_DEVICES": ids, "GPU_DEVICE_ORDINAL": ids, "ROCR_VISIBLE_DEVICES": ids,
                  "ZE_AFFINITY_MASK": ids, "SLURM_JOB_GPUS": ids, "SLURM_GPUS_ON_NODE": str(len(gpus))})
    s.update(rendezvous(order, node, node_addr))
    if order.get("array_task_id") is not None:
        s["SLURM_ARRAY_JOB_ID"] = str(order["array_job_id"])
        s["SLURM_ARRAY_TASK_ID"] = str(order["array_task_id"])
        for key, var in (("array_count", "COUNT"), ("array_max", "MAX"), ("array_min", "MIN"), ("array_step", "STEP")):
            if order.get(key) is not None:
                s[f"SLURM_ARRAY_TASK_{var}"] = str(order[key])
    if order.get("het"):
        s.update(het_environment(order["het"]))
    env.update(s)
    # the slurmlet commands (srun, scontrol, ...) must be found inside the job: after the
    # submitter's own PATH, or first when the job brings none (an air run), so that a host with
    # another Slurm installed still runs slurmlet's srun. (A login shell starts over with the PATH of
    # /etc/profile: there the commands are those `slurmlet install-commands` linked, if any.)
    path = env.get("PATH")
    if bin_dir:
        if path is None:
            env["PATH"] = bin_dir + os.pathsep + os.defpath
        elif bin_dir not in path.split(os.pathsep):
            env["PATH"] = path + os.pathsep + bin_dir
    return env


#: Prolog's and Epilog's search path: fixed, never the job's (the scripts run as root)
SCRIPT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def script_environment(order: dict, *, node: str, cluster: str, context: str) -> dict[str, str]:
    """A node's Prolog or Epilog environment, as slurmd builds it: facts about the job (its ids,
    user, account, partition, nodes, this node's GPUs) and a fixed PATH, nothing of the job's own
    environment, which its user controls (BASH_ENV, PATH, LD_PRELOAD, ...) while these scripts run
    as root."""
    alloc = order["alloc"]
    mine = next((a for a in alloc if a["node"] == node), alloc[0])
    jid = str(order["job_id"])
    env = {"PATH": SCRIPT_PATH, "SLURM_SCRIPT_CONTEXT": context, "SLURMD_NODENAME": node, "SLURM_CLUSTER_NAME": cluster,
           "SLURM_JOB_ID": jid, "SLURM_JOBID": jid, "SLURM_JOB_NAME": str(order.get("name") or ""),
           "SLURM_JOB_USER": str(order.get("user") or ""), "SLURM_JOB_UID": str(order.get("uid", 0)),
           "SLURM_JOB_GID": str(order.get("gid", 0)),
           "SLURM_JOB_ACCOUNT": str(order.get("account") or order.get("user") or ""),
           "SLURM_JOB_PARTITION": str(order.get("partition") or ""), "SLURM_JOB_QOS": str(order.get("qos") or "normal"),
           "SLURM_JOB_NODELIST": str(order.get("nodes") or node)}
    if order.get("restarts"):
        env["SLURM_JOB_RESTART_COUNT"] = str(order["restarts"])
    gpus = mine.get("gpu_ids") or []
    if gpus:
        env["SLURM_JOB_GPUS"] = env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)
    if order.get("array_task_id") is not None:
        env["SLURM_ARRAY_JOB_ID"] = str(order["array_job_id"])
        env["SLURM_ARRAY_TASK_ID"] = str(order["array_task_id"])
    return env
