"""Which SLURM_* variables each sbatch and srun option sets on a Slurm cluster (the reference), as JSON
on stdout: {"sbatch": {OPTION: {"added": {VAR: VALUE}, "changed": {VAR: VALUE}, "removed": [VAR]}
or {"error": TEXT}}, "srun": {...}}. sbatch options: a batch job with the option against one
without; srun options: a step with the option against one without, inside one allocation. Run as
root in a directory the nodes share: python3 probe_options.py > slurm-2205-option-vars.json.
The options are those of slurmlet's option tables (cli/getopt.py), with SAMPLE's arguments."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
#: the arguments each option is probed with (beside the option; none: the option alone, no value)
SAMPLE: dict[str, list[str]] = {
    "account": ["--account=root"], "acctg-freq": ["--acctg-freq=30"], "array": ["--array=0"],
    "batch": ["--batch=x86_64"], "begin": ["--begin=now"], "bb": ["--bb=x"], "bbf": ["--bbf=/dev/null"],
    "cluster-constraint": ["--cluster-constraint=x"], "chdir": ["--chdir=/tmp"], "clusters": ["--clusters=anchor"],
    "comment": ["--comment=probe"], "container": ["--container=/tmp"], "context": ["--context=x"],
    "constraint": ["--constraint=x"], "core-spec": ["--core-spec=1"], "cores-per-socket": ["--cores-per-socket=8"],
    "cpu-freq": ["--cpu-freq=high"], "cpus-per-gpu": ["--gpus=1", "--cpus-per-gpu=2"],
    "cpus-per-task": ["--cpus-per-task=2"], "deadline": ["--deadline=now+1hour"], "delay-boot": ["--delay-boot=1"],
    "dependency": ["--dependency=afterany:1"], "distribution": ["--distribution=cyclic"], "error": ["--error=/dev/null"],
    "exclude": ["--exclude=node4"], "exclusive": ["--exclusive"], "export": ["--export=ALL"],
    "export-file": ["--export-file=/dev/null"], "extra-node-info": ["--extra-node-info=1:8:1"],
    "get-user-env": ["--get-user-env"], "gid": ["--gid=0"], "gpu-bind": ["--gpus=1", "--gpu-bind=closest"],
    "gpu-freq": ["--gpu-freq=high"], "gpus": ["--gpus=1"], "gpus-per-node": ["--gpus-per-node=1"],
    "gpus-per-socket": ["--sockets-per-node=1", "--gpus-per-socket=1"], "gpus-per-task": ["--gpus-per-task=1"],
    "gres": ["--gres=gpu:1"], "gres-flags": ["--gres-flags=enforce-binding"], "hint": ["--hint=nomultithread"],
    "input": ["--input=/dev/null"], "job-name": ["--job-name=probe"], "kill-on-invalid-dep": ["--kill-on-invalid-dep=yes"],
    "licenses": ["--licenses=x"], "mail-type": ["--mail-type=END"], "mail-user": ["--mail-user=root"],
    "mcs-label": ["--mcs-label=x"], "mem": ["--mem=500"], "mem-bind": ["--mem-bind=local"],
    "mem-per-cpu": ["--mem-per-cpu=500"], "mem-per-gpu": ["--gpus=1", "--mem-per-gpu=500"], "mincpus": ["--mincpus=2"],
    "network": ["--network=x"], "nice": ["--nice=10"], "no-kill": ["--no-kill"], "nodefile": ["--nodefile=NODEFILE"],
    "nodelist": ["--nodelist=node1"], "nodes": ["--nodes=1"], "ntasks": ["--ntasks=1"],
    "ntasks-per-core": ["--ntasks-per-core=1"], "ntasks-per-gpu": ["--gpus=1", "--ntasks-per-gpu=1"],
    "ntasks-per-node": ["--ntasks-per-node=1"], "ntasks-per-socket": ["--ntasks-per-socket=1"],
    "ntasks-per-tres": ["--gpus=1", "--ntasks-per-tres=1"], "open-mode": ["--open-mode=append"],
    "output": ["--output=/dev/null"], "partition": ["--partition=high"], "power": ["--power=level"],
    "prefer": ["--prefer=x"], "priority": ["--priority=10"], "profile": ["--profile=task"], "propagate": ["--propagate"],
    "qos": ["--qos=normal"], "reservation": ["--reservation=x"], "signal": ["--signal=USR1@60"],
    "sockets-per-node": ["--sockets-per-node=1"], "switches": ["--switches=1"], "thread-spec": ["--thread-spec=1"],
    "threads-per-core": ["--threads-per-core=1"], "time": ["--time=10"], "time-min": ["--time-min=5"],
    "tmp": ["--tmp=10"], "uid": ["--uid=0"], "wait-all-nodes": ["--wait-all-nodes=1"], "wckey": ["--wckey=x"],
    "wrap": [],  # every probe job is a --wrap
    # srun's own
    "accel-bind": ["--accel-bind=g"], "bcast": ["--bcast=/tmp/probe-bcast"], "bcast-exclude": ["--bcast-exclude=NONE"],
    "compress": ["--compress"], "cpu-bind": ["--cpu-bind=none"], "epilog": ["--epilog=/bin/true"],
    "het-group": ["--het-group=0"], "immediate": ["--immediate"], "jobid": ["--jobid=JOBID"],
    "kill-on-bad-exit": ["--kill-on-bad-exit"], "mpi": ["--mpi=none"], "msg-timeout": ["--msg-timeout=10"],
    "multi-prog": [], "overlap": ["--overlap"], "prolog": ["--prolog=/bin/true"], "relative": ["--relative=0"],
    "resv-ports": ["--resv-ports"], "send-libs": ["--send-libs=no"], "slurmd-debug": ["--slurmd-debug=1"],
    "task-epilog": ["--task-epilog=/bin/true"], "task-prolog": ["--task-prolog=/bin/true"], "threads": ["--threads=2"],
    "wait": ["--wait=10"], "x11": ["--x11"],
}
#: run-specific values: compared by presence only
RUN = re.compile(r"SLURM_(JOB_?ID|TASK_PID|SRUN_COMM_PORT|STEP_LAUNCHER_PORT|.*NODELIST|TOPOLOGY_ADDR|"
                 r"SRUN_COMM_HOST|LAUNCH_NODE_IPADDR|JOB_GPUS|STEP_GPUS|STEP_ID|STEPID)$")


def options(kind: str) -> list[str]:
    text = open(os.path.join(ROOT, "cli", "getopt.py")).read()
    longs = re.search(rf"_{kind.upper()}_LONG = \"\"\"(.*?)\"\"\"", text, re.S).group(1)
    return [x.split(":")[0] for x in longs.split() if "=" not in x]


def args(opt: str, kind: str) -> list[str]:
    if kind == "sbatch" and opt == "wait":
        return ["--wait"]  # (sbatch's takes no value: it waits for the job's end)
    return SAMPLE.get(opt, [f"--{opt}"]) if opt != "multi-prog" else []


def env_of(path: str) -> dict[str, str]:
    try:
        return dict(line.rstrip("\n").split("=", 1) for line in open(path) if "=" in line)
    except OSError:
        return {}


def compare(base: dict, got: dict) -> dict:
    return {"added": {k: v for k, v in sorted(got.items()) if k not in base},
            "changed": {k: v for k, v in sorted(got.items()) if k in base and base[k] != v and not RUN.match(k)},
            "removed": sorted(k for k in base if k not in got)}


def probe_sbatch(out: str) -> dict:
    dump = "env | grep ^SLURM_ | sort > {}"
    nodefile = os.path.join(out, "nodefile")
    jobs = {}
    for opt in ["_none_"] + options("sbatch"):
        extra = [] if opt == "_none_" else [a.replace("NODEFILE", nodefile) for a in args(opt, "sbatch")]
        if opt in ("help", "usage", "version", "test-only"):
            continue
        r = subprocess.run(["/usr/bin/sbatch", "--parsable", "-o", "/dev/null", *extra, "--wrap",
                            dump.format(os.path.join(out, f"sbatch.{opt}"))], capture_output=True, text=True,
                           timeout=60, stdin=subprocess.DEVNULL)
        jobs[opt] = r.stdout.strip().split(";")[0] if r.returncode == 0 else "error: " + r.stderr.strip()
        if opt == "hold" and r.returncode == 0:
            subprocess.run(["/usr/bin/scontrol", "release", jobs[opt]], check=False)
    deadline = time.time() + 300
    for jid in jobs.values():
        while not jid.startswith("error") and time.time() < deadline and subprocess.run(
                ["/usr/bin/squeue", "-h", "-j", jid], capture_output=True, text=True).stdout.strip():
            time.sleep(1)
        if not jid.startswith("error"):
            subprocess.run(["/usr/bin/scancel", jid], check=False)
    base = env_of(os.path.join(out, "sbatch._none_"))
    res = {}
    for opt, jid in jobs.items():
        if opt == "_none_":
            continue
        got = env_of(os.path.join(out, f"sbatch.{opt}"))
        res[opt] = {"error": jid} if jid.startswith("error") else compare(base, got) if got else {"error": "no batch"}
    return res


def probe_srun(out: str) -> dict:
    dump = "bash -c 'env | grep ^SLURM_ | sort > {}.$SLURM_PROCID'"
    lines = [f"srun -n1 {dump.format(os.path.join(out, 'srun._none_'))}"]
    mp = os.path.join(out, "multiprog.conf")
    with open(mp, "w") as f:
        f.write(f"0 {dump.format(os.path.join(out, 'srun.multi-prog'))}\n")
    for opt in options("srun"):
        if opt in ("help", "usage", "version", "test-only", "pty", "x11"):
            continue
        extra = " ".join(a.replace("JOBID", "$SLURM_JOB_ID").replace("NODEFILE", os.path.join(out, "nodefile"))
                         for a in args(opt, "srun"))
        cmd = (f"--multi-prog {mp}" if opt == "multi-prog" else dump.format(os.path.join(out, f"srun.{opt}")))
        lines.append(f"timeout 30 srun -n1 {extra} {cmd} </dev/null >/dev/null 2>{out}/srun.{opt}.err")
    r = subprocess.run(["/usr/bin/sbatch", "--parsable", "-N1", "-n2", "-c2", "--gpus-per-node=2", "--mem=4000",
                        "-o", os.path.join(out, "srun.out"), "--wrap", "\n".join(lines)],
                       capture_output=True, text=True, check=True)
    jid = r.stdout.strip()
    deadline = time.time() + 600
    while time.time() < deadline and subprocess.run(["/usr/bin/squeue", "-h", "-j", jid], capture_output=True,
                                                    text=True).stdout.strip():
        time.sleep(1)
    base = env_of(os.path.join(out, "srun._none_.0"))
    res = {}
    for opt in options("srun"):
        got = env_of(os.path.join(out, f"srun.{opt}.0"))
        err = ""
        if os.path.exists(os.path.join(out, f"srun.{opt}.err")):
            err = open(os.path.join(out, f"srun.{opt}.err")).read().strip()
        res[opt] = compare(base, got) if got else {"error": err or "not probed"}
    return res


def main() -> None:
    out = tempfile.mkdtemp(prefix="envprobe.", dir="/tmp")
    os.chmod(out, 0o777)
    with open(os.path.join(out, "nodefile"), "w") as f:
        f.write("node1\n")
    kinds = sys.argv[1:] or ["sbatch", "srun"]
    doc = {k: (probe_sbatch if k == "sbatch" else probe_srun)(out) for k in kinds}
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    print()
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
