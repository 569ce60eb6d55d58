"""sattach on a real 2-node local cluster: attached to a running step it gets what the tasks printed
before (replayed) and after, labelled with -l, then their exits; 22.05's messages otherwise
(tests/data/slurm-2205-sattach.md)."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import BIN, Cluster, wait_until

pytestmark = pytest.mark.e2e


def test_sattach_replays_and_follows_a_running_step(cluster: Cluster):
    c = cluster
    go = c.workdir / "sattach-go"
    task = (f"echo before $SLURM_PROCID; until [ -e {go} ]; do sleep 0.1; done; echo after $SLURM_PROCID; "
            "exit $((SLURM_PROCID + 2))")
    jid = c.sbatch("-N2", "-n2", "-o", "/dev/null", "--wrap", f"srun bash -c '{task}'")
    c.wait_state(jid, "RUNNING")
    wait_until(lambda: any(s.get("step") == 0 and s["state"] == "RUNNING" for s in c.job(jid).get("steps") or []),
               what="step 0 to run")
    p = subprocess.Popen([str(BIN / "sattach"), "-l", f"{jid}.0"], cwd=c.workdir, env=c.env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = {p.stdout.readline(), p.stdout.readline()}
    assert first == {"0: before 0\n", "1: before 1\n"}  # printed before sattach came: replayed
    go.touch()
    out, err = p.communicate(timeout=60)
    assert sorted(out.splitlines()) == ["0: after 0", "1: after 1"]
    assert err.splitlines() == ["sattach: error: task 0 exited with exit code 2",
                                "sattach: error: task 1 exited with exit code 3"]
    assert p.returncode == 3
    c.wait_state(jid, ("COMPLETED", "FAILED"), timeout=60)
    r = c.run([str(BIN / "sattach"), f"{jid}.0"])
    assert r.returncode == 0 and r.stderr.splitlines() == ["sattach: Node node2: no tasks running",
                                                           "sattach: Node node1: no tasks running"]


def test_sattach_refusals(cluster: Cluster):
    c = cluster
    r = c.run([str(BIN / "sattach"), "99999.0"])
    assert r.returncode == 1 and r.stderr == "sattach: error: Could not get job step info: Invalid job id specified\n"
    r = c.run([str(BIN / "sattach"), "12"])
    assert r.returncode == 1 and r.stderr == "sattach: error: Failed to parse stepid from command line options\n"
    assert r.stdout == "Usage: sattach [options] <jobid.stepid>\n"
