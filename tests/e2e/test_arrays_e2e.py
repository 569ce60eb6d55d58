"""Job arrays on a real local cluster: tasks, their environment and files, throttles, squeue, scancel."""

from __future__ import annotations

import pytest

from tests.conftest import Cluster, wait_until

pytestmark = pytest.mark.e2e


def test_array_tasks_run_with_their_environment_and_files(cluster: Cluster):
    c = cluster
    script = ("#!/bin/sh\necho task=$SLURM_ARRAY_TASK_ID of=$SLURM_ARRAY_JOB_ID job=$SLURM_JOB_ID "
              "count=$SLURM_ARRAY_TASK_COUNT min=$SLURM_ARRAY_TASK_MIN max=$SLURM_ARRAY_TASK_MAX "
              "step=$SLURM_ARRAY_TASK_STEP\n")
    arr = c.sbatch("--array=1-7:2", "-J", "arr", script=script)
    rows = wait_until(lambda: (js := [j for j in c.api("GET", f"/api/v1/jobs?ids={arr}")["jobs"]])
                      and all(j["state"] == "COMPLETED" for j in js) and js, what="every task to complete")
    assert sorted((j["array_job_id"], j["array_task_id"]) for j in rows) == [(arr, t) for t in (1, 3, 5, 7)]
    for j in rows:
        t = j["array_task_id"]
        out = (c.workdir / f"slurm-{arr}_{t}.out").read_text()
        assert out == f"task={t} of={arr} job={j['job_id']} count=4 min=1 max=7 step=2\n"
    r = c.run(f"sacct -X -n -P -o JobID,State -j {arr}")
    assert r.stdout.split() == [f"{arr}_{t}|COMPLETED" for t in (1, 3, 5, 7)]


def test_throttle_squeue_collapse_and_scancel_of_one_task_and_all(cluster: Cluster):
    c = cluster
    gate = c.workdir / "arr-gate"
    arr = c.sbatch("--array=0-5%2", "-J", "thr", "--wrap", f"while [ ! -e {gate} ]; do sleep 0.1; done")

    def states() -> dict[int, str]:
        return {j["array_task_id"]: j["state"] for j in c.api("GET", f"/api/v1/jobs?ids={arr}")["jobs"]}

    wait_until(lambda: sorted(t for t, s in states().items() if s == "RUNNING") == [0, 1], what="two tasks running")
    assert c.job(c.api("GET", f"/api/v1/jobs?ids={arr}")["jobs"][-1]["job_id"])["reason"] == "JobArrayTaskLimit"
    r = c.run(f"squeue -h -o '%i %T %r' -j {arr}")
    assert r.stdout.splitlines() == [f"{arr}_[2-5%2] PENDING JobArrayTaskLimit", f"{arr}_0 RUNNING None",
                                     f"{arr}_1 RUNNING None"]
    assert c.run(f"scancel {arr}_3").returncode == 0
    wait_until(lambda: states()[3] == "CANCELLED", what="task 3 cancelled")
    r = c.run(f"squeue -h -o '%i %T' -t PD -j {arr}")
    assert r.stdout.splitlines() == [f"{arr}_[2,4-5%2] PENDING"]
    gate.touch()
    done = wait_until(lambda: (js := c.api("GET", f"/api/v1/jobs?ids={arr}")["jobs"])
                      and all(j["state"] in ("COMPLETED", "CANCELLED") for j in js) and js, what="the array to end")
    assert {j["array_task_id"]: j["state"] for j in done} == {0: "COMPLETED", 1: "COMPLETED", 2: "COMPLETED",
                                                             3: "CANCELLED", 4: "COMPLETED", 5: "COMPLETED"}
    # the throttle held throughout: no instant saw more than two tasks running
    runs = [(j["start_time"], j["end_time"]) for j in done if j["state"] == "COMPLETED"]
    assert max(sum(s <= t < e for s, e in runs) for t, _ in runs) == 2


def test_held_array_is_one_squeue_line_and_scancel_of_its_id_cancels_every_task(cluster: Cluster):
    c = cluster
    arr = c.sbatch("-H", "--array=0-3", "-J", "held", "--wrap", "true")
    r = c.run(f"squeue -h -o '%i %T %r' -j {arr}")
    assert r.stdout.splitlines() == [f"{arr}_[0-3] PENDING JobHeldUser"]
    r = c.run(f"squeue -r -h -o '%i %T' -j {arr}")
    assert r.stdout.splitlines() == [f"{arr}_{t} PENDING" for t in range(4)]
    assert c.run(f"scancel {arr}").returncode == 0
    states = [j["state"] for j in c.api("GET", f"/api/v1/jobs?ids={arr}")["jobs"]]
    assert states == ["CANCELLED"] * 4


def test_bad_array_specifications_are_refused(cluster: Cluster):
    for spec in ("0-abc", "0-100000", "5-1"):
        r = cluster.run(["sbatch", f"--array={spec}", "--wrap", "true"])
        assert (r.returncode, r.stderr) == \
            (1, "sbatch: error: Batch job submission failed: Invalid job array specification\n"), spec


def test_dependency_on_an_array_waits_for_every_task(cluster: Cluster):
    c = cluster
    gate = c.workdir / "arr-dep-gate"
    arr = c.sbatch("--array=0-1", "-J", "parts", "--wrap",
                   f"[ $SLURM_ARRAY_TASK_ID = 0 ] || while [ ! -e {gate} ]; do sleep 0.1; done")
    after = c.sbatch(f"--dependency=afterok:{arr}", "-J", "merge", "--wrap", "true")
    one = c.sbatch(f"--dependency=afterok:{arr}_0", "-J", "first", "--wrap", "true")
    c.wait_state(one, "COMPLETED")
    assert c.job(after)["state"] == "PENDING" and c.job(after)["dependency"] == f"afterok:{arr}(unfulfilled)"
    gate.touch()
    c.wait_state(after, "COMPLETED")
