"""The SLURM_* environment as a table: each option set of tests/data/envtable/cases.txt x every
variable a real Slurm 22.05 set for it in the batch script and in a step's tasks
(tests/data/envtable/slurm-2205-env.json, made by capture.sh there on the reference cluster), against
what slurmlet sets. Variables that name this run (job id, ports, hosts, the submitter) are compared by
presence only; node names are compared after renaming the nodes of each job in order."""

from __future__ import annotations

import json
from pathlib import Path

import hostlist
import pytest

from tests.conftest import ROOT, Cluster

pytestmark = pytest.mark.e2e

DATA = ROOT / "tests" / "data" / "envtable"
#: set by both, but naming this run or this site: compared by presence
PRESENCE_ONLY = {"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_TASK_PID", "SLURM_SRUN_COMM_HOST",
                 "SLURM_SRUN_COMM_PORT", "SLURM_LAUNCH_NODE_IPADDR", "SLURM_STEP_LAUNCHER_PORT", "SLURM_SUBMIT_DIR",
                 "SLURM_SUBMIT_HOST", "SLURM_CLUSTER_NAME", "SLURM_WORKING_CLUSTER", "SLURM_UMASK", "SLURM_JOB_UID",
                 "SLURM_JOB_GID", "SLURM_JOB_USER", "SLURM_JOB_ACCOUNT", "SLURM_PRIO_PROCESS",
                 "SLURM_ARRAY_JOB_ID"}
#: which GPUs of a node a job gets: the same on an idle node, but a matter of the allocator
PRESENCE_ONLY |= {"SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_CONF"}  # SLURM_CONF: where the node keeps it
NODE_VARS = ("SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_STEP_NODELIST", "SLURMD_NODENAME", "SLURM_TOPOLOGY_ADDR")
#: where slurmlet differs still, by (case, variable) ("*": every case), with why: the table's open rows
_WHOLE = "-B 1:8:1 and --reboot: 22.05 gives the job a whole node (its CPUs, a task each, its GPUs); slurmlet one CPU"
_INTERACTIVE = "srun --interactive: 22.05 runs an interactive step (id 4294967290, no MPI); slurmlet a plain one"
NOT_YET: dict[tuple[str, str], str] = {
    **{("extra_node_info", v): _WHOLE for v in ("SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE", "SLURM_NPROCS",
                                                "SLURM_NTASKS", "SLURM_TASKS_PER_NODE")},
    **{("reboot", v): _WHOLE for v in ("SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE", "SLURM_TASKS_PER_NODE",
                                       "SLURM_GPUS_ON_NODE", "SLURM_JOB_GPUS")},
    ("export_file", "SLURM_JOB_NAME"): "--export-file: 22.05's job has the file's environment, without the "
                                       "SLURM_JOB_NAME sbatch sets in its own; slurmlet ignores the option",
    **{("gpus_per_socket", v): "--gpus-per-socket: 22.05 allocates GPUs per socket; slurmlet allocates none"
       for v in ("SLURM_GPUS_ON_NODE", "SLURM_JOB_GPUS")},
    **{("step_interactive", v): _INTERACTIVE for v in ("SLURM_DISTRIBUTION", "SLURM_MPI_TYPE", "SLURM_STEPID",
                                                       "SLURM_STEP_ID", "SLURM_UMASK")},
    ("step_prolog", "SLURM_SCRIPT_CONTEXT"): "srun --prolog: accepted and ignored (22.05 runs it, its "
                                             "SLURM_SCRIPT_CONTEXT left in the step's environment)",
    ("step_task_prolog", "SLURM_SCRIPT_CONTEXT"): "srun --task-prolog: accepted and ignored (22.05 runs it "
                                                  "before each task)",
}


def cases() -> list[tuple[str, str, str]]:
    out = []
    for line in (DATA / "cases.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, opts, step = (x.strip() for x in line.split("|"))
            out.append((name, opts, step))
    return out


def normalized(env: dict[str, str]) -> dict[str, str]:
    """Node names renamed node1, node2, ... in the job's order; the rest as it is."""
    names = hostlist.expand_hostlist(env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or "")
    rename = {n: f"node{i + 1}" for i, n in enumerate(names)}
    out = {}
    for k, v in env.items():
        if k in PRESENCE_ONLY:
            out[k] = "(set)"
        elif k in NODE_VARS and v:
            out[k] = hostlist.collect_hostlist([rename.get(n, n) for n in hostlist.expand_hostlist(v)])
        else:
            out[k] = v
    return out


def differences(case: str, want: dict[str, str], got: dict[str, str]) -> list[str]:
    w, g = normalized(want), normalized(got)
    out = []
    for k in sorted(set(w) | set(g)):
        if ("*", k) in NOT_YET or (case, k) in NOT_YET:
            continue
        if w.get(k) != g.get(k):
            out.append(f"{k}: Slurm {w.get(k, '(unset)')!r}, slurmlet {g.get(k, '(unset)')!r}")
    return out


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> dict:
    """Every case run once on one cluster shaped like the reference's nodes (8 CPUs, 8 GPUs, 32000 MB)."""
    from tests.conftest import serve
    root = tmp_path_factory.mktemp("envtable")
    gen = serve(Cluster(root, nodes=2, cpus=8, memory=32000, gpus=8, extra_conf="DefMemPerCPU=1000\n"
                        "PartitionName=high Nodes=ALL\n"))
    c = next(gen)
    out = root / "out"
    out.mkdir()
    out.chmod(0o777)
    for name, opts, step in cases():  # one at a time, on idle nodes, as capture.sh ran them
        stepcmd = f"bash -c 'env | grep ^SLURM_ | sort > {out}/{name}.step.$SLURM_PROCID'"
        body = f"env | grep '^SLURM_' | sort > {out}/{name}.batch"
        if step != "-":
            body += f"; srun {step} {stepcmd}"
        command, *args = opts.split() or [""]
        if command == "srun":  # outside any allocation: its tasks are the step
            r = c.run(f"env -u SLURM_JOB_ID srun {' '.join(args)} {stepcmd}", timeout=120)
            assert r.returncode == 0, r.stderr
        elif command == "salloc":  # its command stands for the batch script
            r = c.run(["env", "-u", "SLURM_JOB_ID", "salloc", *args, "bash", "-c", body], timeout=120,
                      env={"XDG_CACHE_HOME": str(root / "cache")})  # (where salloc keeps SLURM_CONF's copy)
            assert r.returncode == 0, r.stderr
        else:
            jid = c.sbatch("-o", "/dev/null", *opts.split(), "--wrap", body)
            c.wait_state(jid, ("COMPLETED", "FAILED", "CANCELLED"), timeout=120)
    got: dict = {}
    for f in sorted(out.iterdir()):
        name, kind, *rank = f.name.split(".")
        env = dict(line.split("=", 1) for line in f.read_text().splitlines() if "=" in line)
        case = got.setdefault(name, {"batch": {}, "step": {}})
        if kind == "batch":
            case["batch"] = env
        else:
            case["step"][rank[0]] = env
    yield got
    next(gen, None)


REFERENCE = json.loads((DATA / "slurm-2205-env.json").read_text())


@pytest.mark.parametrize("name", [n for n, o, _ in cases() if not o.startswith("srun")])
def test_batch_environment_is_slurms(table: dict, name: str):
    assert differences(name, REFERENCE[name]["batch"], table.get(name, {}).get("batch", {})) == []


@pytest.mark.parametrize("name", [n for n, o, s in cases() if s != "-" or o.startswith("srun")])
def test_step_environment_is_slurms(table: dict, name: str):
    want, got = REFERENCE[name]["step"], table.get(name, {}).get("step", {})
    assert sorted(got) == sorted(want)
    assert {rank: differences(name, want[rank], got[rank]) for rank in want} == {rank: [] for rank in want}


def test_slurm_conf_names_the_clusters_own_configuration(table: dict):
    """SLURM_CONF (a path, so compared by presence above) is the node's copy of the cluster's slurm.conf."""
    paths = {table["plain"]["batch"]["SLURM_CONF"], table["step_mem"]["step"]["0"]["SLURM_CONF"]}
    assert len(paths) == 1
    assert "DefMemPerCPU=1000" in Path(paths.pop()).read_text().splitlines()
    # salloc's command runs where salloc does: its SLURM_CONF is a copy of that configuration there
    assert "DefMemPerCPU=1000" in Path(table["salloc_plain"]["batch"]["SLURM_CONF"]).read_text().splitlines()
