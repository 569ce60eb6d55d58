"""Jobs in cgroups (nodeagent/cgroup.py) on real local clusters, in both layouts this machine can
write: v1 (freezer, memory, cpuacct, pids; cpuset and devices for a job confined to them) and v2 (the
unified hierarchy; here without controllers, as on a hybrid system: tracking and CPU counts, no
memory limit).

What a user checks: a process that left its job's session still dies with the job (scancel, the
job's end, the agent's exit); a job past its memory alone ends OUT_OF_MEMORY with slurmstepd's line
while its neighbour on the node runs on; sacct's CPU time is the kernel's count, exact for short jobs."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from slurmlet.common.cgroupconf import Policy, mount_type
from slurmlet.nodeagent import cgroup
from tests.conftest import ROOT, Cluster, wait_until

pytestmark = pytest.mark.e2e


def _layouts() -> list[str]:
    if os.geteuid() != 0:
        return []
    out = []
    if mount_type("/sys/fs/cgroup/freezer") == "cgroup" and os.access("/sys/fs/cgroup/freezer", os.W_OK):
        out.append("v1")
    for v2 in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if mount_type(v2) == "cgroup2" and os.access(v2, os.W_OK):
            out.append("v2")
            break
    return out


LAYOUTS = _layouts()
needs_cgroups = pytest.mark.skipif(not LAYOUTS, reason="no writable cgroup hierarchy (not root, or a container)")


def _memory_layout() -> str | None:
    """The layout whose cgroups can limit memory here (v1's memory controller, or v2's)."""
    if "v1" in LAYOUTS and mount_type("/sys/fs/cgroup/memory") == "cgroup":
        return "v1"
    if "v2" in LAYOUTS and mount_type("/sys/fs/cgroup") == "cgroup2" and \
            "memory" in Path("/sys/fs/cgroup/cgroup.controllers").read_text().split():
        return "v2"
    return None


@pytest.fixture(scope="module", params=LAYOUTS or ["none"])
def cg_cluster(request, tmp_path_factory):
    from tests.conftest import serve
    if request.param == "none":
        pytest.skip("no writable cgroup hierarchy (not root, or a container)")
    root = tmp_path_factory.mktemp(f"cgroups-{request.param}")
    gen = serve(Cluster(root, nodes=1, cpus=4, memory=8000, agent_env={"SLURMLET_CGROUP": request.param},
                        cgroup_conf="ConstrainRAMSpace=yes\nConstrainSwapSpace=yes\n"))
    c = next(gen)
    c.layout = request.param
    yield c
    next(gen, None)


def _pids_of(marker: str) -> list[int]:
    r = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split()]


#: a batch script whose children leave its session three ways: setsid (with an empty environment), a double fork into a new
#: session, a new process group; each sleeps with its own marker so the test can find it
ESCAPES = """#!/bin/bash
setsid env -i sleep {m}1 &
( setsid bash -c 'sleep {m}2 & exit 0' & )
( set -m; sleep {m}3 & ) &
sleep 1000{m}
"""


def _escapees_running(marker: int) -> None:
    wait_until(lambda: all(_pids_of(f"sleep {marker}{i}") for i in (1, 2, 3)), 60,
               what="the job's three escaped processes to run")
    assert any(os.getsid(p) != os.getsid(_pids_of(f"sleep 1000{marker}")[0]) for p in _pids_of(f"sleep {marker}1"))


def _all_gone(marker: int) -> None:
    wait_until(lambda: not any(_pids_of(f"sleep {marker}{i}") for i in (1, 2, 3)) and not _pids_of(f"sleep 1000{marker}"),
               60, what="every process of the job to be gone")


@needs_cgroups
def test_scancel_kills_processes_that_left_the_jobs_session(cg_cluster: Cluster):
    c = cg_cluster
    marker = 70 + LAYOUTS.index(c.layout)
    jid = c.sbatch("-o", "/dev/null", script=ESCAPES.format(m=marker))
    c.wait_state(jid, "RUNNING")
    _escapees_running(marker)
    assert c.run(f"scancel {jid}").returncode == 0
    c.wait_state(jid, "CANCELLED")
    _all_gone(marker)


@needs_cgroups
def test_processes_left_behind_die_when_the_batch_script_ends(cg_cluster: Cluster):
    c = cg_cluster
    marker = 80 + LAYOUTS.index(c.layout)
    script = ESCAPES.format(m=marker).replace(f"sleep 1000{marker}", f"while ! pgrep -f 'sleep {marker}3' >/dev/null; "
                                                                    f"do sleep 0.1; done; sleep 1")
    jid = c.sbatch("-o", "/dev/null", script=script)
    c.wait_state(jid, "COMPLETED", timeout=60)
    _all_gone(marker)


@needs_cgroups
def test_a_steps_escaped_process_dies_with_its_step(cg_cluster: Cluster):
    c = cg_cluster
    marker = 90 + LAYOUTS.index(c.layout)
    jid = c.sbatch("-o", "/dev/null", "--wrap", f"srun bash -c 'setsid sleep {marker}1 & sleep 1000{marker}'")
    c.wait_state(jid, "RUNNING")
    wait_until(lambda: _pids_of(f"sleep {marker}1"), 60, what="the step's escaped process to run")
    assert c.run(f"scancel {jid}").returncode == 0
    c.wait_state(jid, "CANCELLED")
    wait_until(lambda: not _pids_of(f"sleep {marker}1") and not _pids_of(f"sleep 1000{marker}"), 60,
               what="the step's processes to be gone")


@needs_cgroups
def test_sacct_cpu_time_of_a_busy_loop_is_the_kernels_count(cg_cluster: Cluster):
    c = cg_cluster
    # spins until the process has used 2 s of CPU (its own count), in the batch script and in a step
    spin = "python3 -c 'import time\nwhile time.process_time() < 2.0: pass'"
    jid = c.sbatch("-o", "/dev/null", "--wrap", f"{spin}; srun {spin}")
    c.wait_state(jid, "COMPLETED", timeout=120)
    rows = c.run(f"sacct -j {jid} -n -P -o JobID,TotalCPU,UserCPU").stdout.splitlines()
    got = {r.split("|")[0]: r.split("|")[1:] for r in rows}

    def secs(t: str) -> float:
        m, s = t.split(":")[-2:]
        return int(m) * 60 + float(s)
    # 2 s of the loop and the interpreter's start: never less (the sampled count was 1.3 s), never
    # much more (the kernel counts this job's processes only)
    assert 2.0 <= secs(got[f"{jid}.batch"][0]) < 3.0, got
    assert 2.0 <= secs(got[f"{jid}.0"][0]) < 3.0, got
    assert 4.0 <= secs(got[str(jid)][0]) < 6.0, got


@needs_cgroups
@pytest.mark.parametrize("how", ["exit", "killed", "restarted"])
def test_the_agents_end_kills_processes_that_left_the_jobs_session(tmp_path, how: str):
    """exit: the agent's clean exit (`slurmlet down`); killed: SIGKILL, and its fence when no agent
    comes back; restarted: SIGKILL and an agent started at once on its spool, which finds the job's
    cgroup left behind."""
    from tests.conftest import serve
    gen = serve(Cluster(tmp_path, nodes=1, agent_env={"SLURMLET_CGROUP": LAYOUTS[0]}))
    c = next(gen)
    marker = {"exit": 51, "killed": 52, "restarted": 53}[how]
    try:
        jid = c.sbatch("-o", "/dev/null", script=ESCAPES.format(m=marker))
        c.wait_state(jid, "RUNNING")
        _escapees_running(marker)
        c.stop_proc("agent-node1", signal.SIGTERM if how == "exit" else signal.SIGKILL)
        if how == "restarted":
            c.start_agent("node1")
        _all_gone(marker)
    finally:
        next(gen, None)


HOLD = "python3 -c 'import time\nx = bytearray(60 << 20); x[::4096] = b\"1\" * len(x[::4096]); time.sleep(8)'"
LEAK = "python3 -c 'x = bytearray(1 << 30)'"


@pytest.mark.skipif(_memory_layout() is None, reason="no cgroup memory controller to write here")
def test_of_jobs_on_a_node_the_ones_past_their_memory_alone_end_out_of_memory(tmp_path):
    """The reference's run (tests/data/slurm-2205-oom.md): beside a job within its 200 MB, one that
    takes 1 GiB in its batch script and one that does in a step, all on one node."""
    from tests.conftest import serve
    gen = serve(Cluster(tmp_path, nodes=1, cpus=4, memory=8000, agent_env={"SLURMLET_CGROUP": _memory_layout()},
                        cgroup_conf="ConstrainRAMSpace=yes\nConstrainSwapSpace=yes\n"))
    c = next(gen)
    try:
        ok = c.sbatch("--mem=200", "-o", str(c.workdir / "ok.out"), "--wrap", HOLD)
        c.wait_state(ok, "RUNNING")
        leak = c.sbatch("--mem=200", "-o", str(c.workdir / "leak.out"), "--wrap", LEAK)
        step = c.sbatch("--mem=200", "-o", str(c.workdir / "step.out"), "--wrap", f"srun {LEAK}")
        for j in (leak, step):
            c.wait_state(j, ("OUT_OF_MEMORY", "FAILED", "COMPLETED", "CANCELLED"), timeout=120)
        assert c.job(ok)["state"] == "RUNNING"  # its neighbours' ends did not touch it
        c.wait_state(ok, ("COMPLETED", "FAILED", "OUT_OF_MEMORY"), timeout=60)
        rows = c.run(f"sacct -j {ok},{leak},{step} -n -P -o JobID,State,ExitCode").stdout.splitlines()
        assert rows == [f"{ok}|COMPLETED|0:0", f"{ok}.batch|COMPLETED|0:0",
                        f"{leak}|OUT_OF_MEMORY|0:125", f"{leak}.batch|OUT_OF_MEMORY|0:125",
                        f"{step}|FAILED|1:0", f"{step}.batch|FAILED|1:0", f"{step}.0|OUT_OF_MEMORY|0:125"]
        derived = c.run(f"sacct -X -j {step} -n -P -o DerivedExitCode").stdout.split()
        assert derived == ["0:125"]
        line = ("slurmstepd-node1: error: Detected 1 oom-kill event(s) in StepId={}. Some of your processes "
                "may have been killed by the cgroup out-of-memory handler.")
        assert (c.workdir / "ok.out").read_text() == ""
        assert (c.workdir / "leak.out").read_text().splitlines()[-1] == line.format(f"{leak}.batch")
        assert sorted((c.workdir / "step.out").read_text().splitlines()) == sorted(
            ["srun: error: node1: task 0: Out Of Memory", line.format(f"{step}.0")])
    finally:
        next(gen, None)


@needs_cgroups
@pytest.mark.parametrize("layout", LAYOUTS)
def test_constraincores_gives_each_job_its_own_cpus(tmp_path, layout: str):
    """Two one-CPU jobs side by side on a 2-CPU node run on different CPUs, their steps on their
    job's; a job of both CPUs has both. (v1: a cpuset confines them; v2 here has no cpuset
    controller, and the tasks are bound instead, as task/affinity does.)"""
    from tests.conftest import serve
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("a node of two CPUs or more")
    gen = serve(Cluster(tmp_path, nodes=1, cpus=2, memory=8000, agent_env={"SLURMLET_CGROUP": layout},
                        cgroup_conf="ConstrainCores=yes\n"))
    c = next(gen)
    try:
        show = "grep Cpus_allowed_list /proc/self/status | cut -f2"
        gate = c.workdir / "go"
        jobs = [c.sbatch("-c1", "-o", str(c.workdir / f"cores{i}.out"), "--wrap",
                         f"{show}; srun {show}; while [ ! -e {gate} ]; do sleep 0.1; done") for i in (1, 2)]
        for j in jobs:
            c.wait_state(j, "RUNNING")
        outs = [c.workdir / f"cores{i}.out" for i in (1, 2)]
        wait_until(lambda: all(o.exists() and len(o.read_text().split()) == 2 for o in outs), 60,
                   what="both jobs to show their CPUs")
        got = [o.read_text().split() for o in outs]
        assert sorted(g[0] for g in got) == ["0", "1"], got  # one CPU each, not the same one
        assert all(g[0] == g[1] for g in got), got  # the step runs on its job's CPU
        gate.touch()
        for j in jobs:
            c.wait_state(j, "COMPLETED", timeout=60)
        both = c.sbatch("-c2", "-o", str(c.workdir / "both.out"), "--wrap", show)
        c.wait_state(both, "COMPLETED", timeout=60)
        assert (c.workdir / "both.out").read_text().split() == ["0-1"]
        # two one-CPU steps side by side in a job of both CPUs, as a workflow engine starts them
        hold = f"{show}; while [ ! -e {gate}2 ]; do sleep 0.1; done"
        side = c.sbatch("-c2", "-o", str(c.workdir / "side.out"), "--wrap",
                        f"srun -c1 bash -c '{hold}' & srun -c1 bash -c '{hold}' & "
                        f"while [ $(wc -l < {c.workdir / 'side.out'}) -lt 2 ]; do sleep 0.1; done; touch {gate}2; wait")
        c.wait_state(side, "COMPLETED", timeout=60)
        assert sorted((c.workdir / "side.out").read_text().split()) == ["0", "1"]
        if layout == "v1":  # confined: a task asking for both CPUs still has its own only
            one = c.sbatch("-c1", "-o", str(c.workdir / "one.out"), "--wrap", f"taskset -c 0,1 {show}")
            c.wait_state(one, "COMPLETED", timeout=60)
            assert (c.workdir / "one.out").read_text().split() in (["0"], ["1"])
    finally:
        next(gen, None)


@needs_cgroups
@pytest.mark.parametrize("layout", LAYOUTS)
def test_constraindevices_lets_a_job_open_only_its_own_gpus(tmp_path, layout: str):
    """Fake GPU device files (character devices 195:N, as the reference cluster fakes /dev/nvidia*):
    a job given one GPU opens its own (the driver is absent: ENXIO) and is refused the others (EPERM).
    v1: the devices controller; v2: a device program attached to the job's cgroup."""
    from tests.conftest import serve
    if layout == "v1" and mount_type("/sys/fs/cgroup/devices") != "cgroup":
        pytest.skip("no v1 devices controller")
    dev = tmp_path / "dev"
    dev.mkdir()
    for i in range(4):
        os.mknod(dev / f"nvidia{i}", 0o666 | 0o020000, os.makedev(195, i))
    gen = serve(Cluster(tmp_path / "c", nodes=1, cpus=4, memory=8000, gpus=4,
                        agent_env={"SLURMLET_CGROUP": layout, "SLURMLET_GPU_FILES": f"{dev}/nvidia[0-3]"},
                        cgroup_conf="ConstrainDevices=yes\n"))
    c = next(gen)
    try:
        probe = (f"python3 -c 'import os\nfor i in range(4):\n    try:\n        open(\"{dev}/nvidia%d\" % i, \"rb\")\n"
                 f"    except OSError as e:\n        print(i, os.strerror(e.errno))'")
        jid = c.sbatch("--gres=gpu:1", "-o", str(c.workdir / "dev.out"), "--wrap",
                       f"echo gpu $CUDA_VISIBLE_DEVICES $SLURM_JOB_GPUS; {probe}; srun {probe}")
        c.wait_state(jid, "COMPLETED", timeout=60)
        lines = (c.workdir / "dev.out").read_text().splitlines()
        mine = int(lines[0].split()[-1])  # the node's GPU index it was given
        want = [f"{i} {'No such device or address' if i == mine else 'Operation not permitted'}" for i in range(4)]
        assert lines[1:] == want + want  # the batch script and its step alike
        free = c.sbatch("-o", str(c.workdir / "none.out"), "--wrap", probe)  # no GPU: none of them
        c.wait_state(free, "COMPLETED", timeout=60)
        assert (c.workdir / "none.out").read_text().splitlines() == [f"{i} Operation not permitted" for i in range(4)]
    finally:
        next(gen, None)


@pytest.mark.skipif(_memory_layout() is None, reason="no cgroup memory controller to write here")
def test_maxrss_of_a_short_peak_is_the_kernels(tmp_path):
    """300 MiB held for a tenth of a second, between two of the agent's samples: sacct's MaxRSS of
    the batch step and of a one-task step is the cgroup's peak all the same."""
    from tests.conftest import serve
    gen = serve(Cluster(tmp_path, nodes=1, agent_env={"SLURMLET_CGROUP": _memory_layout()}))
    c = next(gen)
    try:
        peak = ("python3 -c 'import time\ntime.sleep(1.3)\nx = bytearray(300 << 20); x[::4096] = b\"1\" * len(x[::4096])\n"
                "time.sleep(0.1)'")
        jid = c.sbatch("-o", "/dev/null", "--wrap", f"{peak}; srun {peak}")
        c.wait_state(jid, "COMPLETED", timeout=60)
        rows = dict(r.split("|") for r in c.run(f"sacct -j {jid} -n -P -o JobID,MaxRSS").stdout.splitlines())
        kb = {"K": 1, "M": 1024, "G": 1024 * 1024}
        for step in (f"{jid}.batch", f"{jid}.0"):  # (sacct scales a value that divides exactly: 304M)
            assert rows[step][-1] in kb and int(rows[step][:-1]) * kb[rows[step][-1]] >= 300 * 1024, rows
    finally:
        next(gen, None)


CPUBIND = ROOT / "tests" / "data" / "slurm-2205-cpubind.md"
SHOW1 = """show='echo "$SLURM_PROCID $(grep Cpus_allowed_list /proc/self/status | cut -f2) $(env | grep ^SLURM_CPU_BIND | sort | tr "\\\\n" " ")"'"""
SHOW2 = """show='echo "$SLURM_PROCID $(grep Cpus_allowed_list /proc/self/status | cut -f2) $(env | grep ^SLURM_CPU_BIND= )"'"""


@pytest.mark.skipif("v1" not in LAYOUTS or len(os.sched_getaffinity(0)) < 2, reason="v1 cpusets, two CPUs")
def test_cpu_bind_binds_and_sets_the_variables_as_the_reference(tmp_path):
    """The reference's two scripts (tests/data/slurm-2205-cpubind.md), run on a node declared with
    more CPUs than the machine's two as the reference's was: every line the same, pids aside."""
    from tests.conftest import serve
    blocks = CPUBIND.read_text().split("```")[1::2]
    conf, script1, want1, script2, want2 = (b.strip("\n") for b in blocks)
    gen = serve(Cluster(tmp_path, nodes=1, cpus=4, memory=8000, agent_env={"SLURMLET_CGROUP": "v1"},
                        extra_conf="TaskPlugin=task/affinity,task/cgroup\n", cgroup_conf=conf + "\n"))
    c = next(gen)
    try:
        for ntasks, script, show, want in (("2", script1, SHOW1, want1), ("4", script2, SHOW2, want2)):
            lines = script.splitlines()
            body = "\n".join([lines[0], show, *lines[1:]]) + "\n"
            out = c.workdir / f"bind{ntasks}.out"
            jid = c.sbatch(f"-n{ntasks}", "-o", str(out), script=body)
            c.wait_state(jid, ("COMPLETED", "FAILED"), timeout=120)

            def norm(text: str) -> list[str]:
                return [re.sub(r"\[\d+\]", "[PID]", x) for x in text.splitlines()]
            assert norm(out.read_text()) == norm(want)
    finally:
        next(gen, None)


@pytest.mark.skipif(_memory_layout() is None, reason="no cgroup memory controller to write here")
def test_a_steps_own_mem_is_its_limit(tmp_path):
    """srun --mem=100 inside a job of 1000 MB: the step is held to its 100 MB (it alone ends
    OUT_OF_MEMORY), and the batch script goes on within the job's."""
    from tests.conftest import serve
    gen = serve(Cluster(tmp_path, nodes=1, agent_env={"SLURMLET_CGROUP": _memory_layout()},
                        cgroup_conf="ConstrainRAMSpace=yes\nConstrainSwapSpace=yes\n"))
    c = next(gen)
    try:
        take = "python3 -c 'x = bytearray(300 << 20); x[::4096] = b\"1\" * len(x[::4096])'"
        jid = c.sbatch("--mem=1000", "-o", "/dev/null", "--wrap", f"srun --mem=100 {take}; srun {take}; true")
        c.wait_state(jid, ("COMPLETED", "FAILED", "OUT_OF_MEMORY"), timeout=60)
        rows = c.run(f"sacct -j {jid} -n -P -o JobID,State,ExitCode").stdout.splitlines()
        assert rows == [f"{jid}|COMPLETED|0:0", f"{jid}.batch|COMPLETED|0:0", f"{jid}.0|OUT_OF_MEMORY|0:125",
                        f"{jid}.1|COMPLETED|0:0"]
    finally:
        next(gen, None)


@pytest.mark.skipif("v1" not in LAYOUTS, reason="the v1 hierarchies")
def test_v1_groups_are_made_only_where_the_job_needs_them(tmp_path):
    """A job's and its step's v1 groups: freezer, memory, cpuacct and pids always (tracking, limits,
    OOM, the CPU count, out of the agent's task limit), cpuset only for a job given CPUs, devices
    only for one kept from devices. Cleaning up takes every hierarchy, whichever the groups were
    made in."""
    h = cgroup.Hierarchy.detect(f"test-only-{os.getpid()}", str(tmp_path), prefer="v1")
    assert h is not None and h.kind == "v1"
    try:
        plain = cgroup.job_groups(h, Policy(), 1, "batch", None)
        cores = cgroup.job_groups(h, Policy(cores=True), 2, "batch", None, cpus=[0])
        assert plain is not None and cores is not None
        made = lambda jid: {c for c, b in h.base.items() if os.path.isdir(os.path.join(b, f"job_{jid}", "step_batch"))}  # noqa: E731
        always = {"freezer", "memory", "cpuacct", "pids"} & set(h.base)
        assert made(1) == always
        assert made(2) == always | ({"cpuset"} & set(h.base))
        if "cpuset" in h.base:
            assert Path(h.base["cpuset"], "job_2", "cpuset.cpus").read_text().strip() == "0"
        import asyncio
        for jid in (1, 2):
            assert asyncio.run(h.group(jid).remove(5))
        assert h.stale_jobs() == []
    finally:
        h.close()
    assert not any(os.path.exists(b) for b in h.base.values())
