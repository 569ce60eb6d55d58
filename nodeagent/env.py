"""The environment a batch script sees, as slurmd/slurmstepd build it (pure)."""

from __future__ import annotations

import contextlib
import os

from ..common.grammar import compress_counts


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
    if order.get("exclusive") and not order.get("ntasks") and not order.get("ntasks_per_node"):
        tasks = [c // (order.get("cpus_per_task") or 1) or 1 for c in cpus]  # a whole node: a task per CPU
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
        "SLURM_WORKING_CLUSTER": f"{cluster}:{controller_url.split('//')[-1].split(':')[0]}:"
                                 f"{controller_url.rsplit(':', 1)[-1].rstrip('/')}:9728:109",
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
    if order.get("gpus_per_node"):
        s["SLURM_GPUS_PER_NODE"] = str(order["gpus_per_node"])
    if order.get("gpus_per_task"):
        s["SLURM_GPUS_PER_TASK"] = str(order["gpus_per_task"])
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
    # another Slurm installed still runs slurmlet's srun
    path = env.get("PATH")
    if bin_dir:
        if path is None:
            env["PATH"] = bin_dir + os.pathsep + os.defpath
        elif bin_dir not in path.split(os.pathsep):
            env["PATH"] = path + os.pathsep + bin_dir
    if bin_dir:  # a login shell's /etc/profile resets PATH: PROFILE_HOOK puts this back
        env["SLURMLET_BIN"] = bin_dir
    return env


#: where the agent (as root) writes PROFILE_HOOK: login shells source /etc/profile.d/*.sh
PROFILE_D = "/etc/profile.d"
#: a job whose script starts a login shell (`#!/bin/bash -l`, common where `module` is loaded that
#: way) has its PATH reset by /etc/profile; this finds the slurmlet commands again. Only shells that
#: carry SLURMLET_BIN (jobs: batch_environment sets it) are touched.
PROFILE_HOOK = """\
# Written by slurmlet's node agent: a job's login shell (#!/bin/bash -l) keeps the Slurm commands.
# Only jobs carry SLURMLET_BIN (the directory of slurmlet's commands); other shells are left alone.
if [ -n "${SLURMLET_BIN:-}" ] && [ -d "$SLURMLET_BIN" ]; then
  case ":$PATH:" in
    *":$SLURMLET_BIN:"*) ;;
    *) PATH="$SLURMLET_BIN:$PATH"; export PATH ;;
  esac
fi
"""


def install_profile_hook(directory: str = PROFILE_D) -> str | None:
    """Write PROFILE_HOOK into `directory` (once; the same text for every agent and cluster on the
    host, so none of them removes it). Returns the path, or None where it cannot be written (the agent
    is not root, the directory is missing): then login shells in jobs lose the commands."""
    path = os.path.join(directory, "slurmlet.sh")
    return path if _place(path, PROFILE_HOOK, 0o644, replace=True) else None


def _place(path: str, text: str, mode: int, *, replace: bool) -> bool:
    """`path` holds `text` (with `mode`): already, or written now through a temporary file. A file
    there with other contents is replaced when `replace`, else left alone (False); False too where
    the directory is missing or cannot be written."""
    try:
        with open(path) as f:
            if f.read(len(text) + 1) == text:
                return True
        if not replace:
            return False  # another program of that name: not ours
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError):
        if not replace:
            return False  # a binary, or unreadable
    directory = os.path.dirname(path)
    if not os.path.isdir(directory) or not os.access(directory, os.W_OK):
        return False
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.chmod(tmp, mode)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # never over a file that appeared meanwhile
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.remove(tmp)


#: where the agent (as root) writes COMMAND_SHIM under each command's name: on the search path that
#: a shell with an empty environment gets (`env -i bash`: /usr/local/bin first)
SHIM_DIR = "/usr/local/bin"
#: the commands a job may call by name (those of them that the agent's own bin directory has)
JOB_COMMANDS = ("sbatch", "srun", "squeue", "scancel", "sacct", "scontrol", "sinfo", "sprio", "sdiag", "sacctmgr",
                "sshare", "salloc", "sattach", "sstat", "sreport", "air", "slurmlet")
#: a job's shell that dropped the whole environment (`env -i bash`) keeps nothing of SLURMLET_BIN or
#: PATH. The shim finds the job's SLURMLET_BIN in the nearest process above it that has one, trusting
#: only a directory and a command that root or the caller owns and no one else may write (a root
#: shell below a user's process must not run that user's program), else runs the next command of its
#: name on PATH (a Slurm of the host's own), else says why it cannot.
COMMAND_SHIM = """\\
#!/bin/sh
# slurmlet command shim (written by slurmlet's node agent; the same for every command and cluster)
name=${0##*/}
if [ -n "${PATH+set}" ]; then caller_path=$PATH; else caller_path=; unset_path=1; fi
PATH=/usr/bin:/bin  # this script's own tools
run() {
  if [ -n "${unset_path:-}" ]; then unset PATH; else PATH=$caller_path; export PATH; fi
  exec "$@"
}
me=$(id -u)
trusted() {
  set -- $(stat -L -c '%u %a' "$1" 2>/dev/null) && { [ "$1" = 0 ] || [ "$1" = "$me" ]; } &&
    case $2 in *[2367]? | *[2367]) false ;; *) true ;; esac
}
pid=$$
depth=0
while [ "${pid:-0}" -gt 1 ] && [ $depth -lt 64 ]; do
  bin=$( (tr '\\0' '\\n' <"/proc/$pid/environ") 2>/dev/null | sed -n 's/^SLURMLET_BIN=//p' | head -n 1)
  if [ -n "$bin" ] && [ -x "$bin/$name" ] && trusted "$bin" && trusted "$bin/$name"; then
    run "$bin/$name" "$@"
  fi
  pid=$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null)
  depth=$((depth + 1))
done
self=$(readlink -f "$0")
IFS=:
for dir in $caller_path; do
  if [ -n "$dir" ] && [ -x "$dir/$name" ] && [ "$(readlink -f "$dir/$name")" != "$self" ]; then
    unset IFS
    run "$dir/$name" "$@"
  fi
done
echo "$name: no slurmlet job above this process and no other $name on PATH" >&2
exit 127
"""


def install_command_shims(bin_dir: str, directory: str = SHIM_DIR) -> list[str]:
    """Write COMMAND_SHIM as `directory`/NAME for each of JOB_COMMANDS that `bin_dir` has, where no
    other file of that name is (a Slurm or a slurmlet installed there is left alone). Returns the
    names written or already there; none where the directory cannot be written."""
    return [name for name in JOB_COMMANDS if os.access(os.path.join(bin_dir, name), os.X_OK)
            and _place(os.path.join(directory, name), COMMAND_SHIM, 0o755, replace=False)]


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
