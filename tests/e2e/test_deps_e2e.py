"""sbatch --dependency on a real local cluster, as the reference cluster shows it (squeue %r %E)."""

from __future__ import annotations

import pytest

from tests.conftest import Cluster, wait_until

pytestmark = pytest.mark.e2e


def queue(c: Cluster, ids: list[int], all_states: bool = False) -> list[str]:
    t = "-t all " if all_states else ""
    r = c.run(f"squeue {t}-h -o '%i %j %T %r %E' -j {','.join(map(str, ids))}")
    assert r.returncode == 0, r.stderr
    return sorted(r.stdout.splitlines())


def test_dependency_types_reasons_and_kill_on_invalid_dep(cluster: Cluster):
    c = cluster
    gate = c.workdir / "deps-gate"
    d0 = c.sbatch("-J", "d0", "--wrap", f"while [ ! -e {gate} ]; do sleep 0.1; done")
    d1 = c.sbatch("-J", "d1", f"--dependency=afterok:{d0}", "--wrap", "true")
    d2 = c.sbatch("-J", "d2", f"--dependency=afternotok:{d0}", "--wrap", "true")
    d3 = c.sbatch("-J", "d3", f"--dependency=afterany:{d0}:{d1}", "--wrap", "true")
    d5 = c.sbatch("-J", "d5", f"--dependency=afternotok:{d0}", "--kill-on-invalid-dep=yes", "--wrap", "true")
    c.wait_state(d0, "RUNNING")
    wait_until(lambda: all(c.job(j)["reason"] == "Dependency" for j in (d1, d2, d3, d5)), what="Dependency reasons")
    assert queue(c, [d0, d1, d2, d3, d5]) == sorted([
        f"{d0} d0 RUNNING None (null)",
        f"{d1} d1 PENDING Dependency afterok:{d0}(unfulfilled)",
        f"{d2} d2 PENDING Dependency afternotok:{d0}(unfulfilled)",
        f"{d3} d3 PENDING Dependency afterany:{d0}(unfulfilled),afterany:{d1}(unfulfilled)",
        f"{d5} d5 PENDING Dependency afternotok:{d0}(unfulfilled)",
    ])
    r = c.run(f"scontrol show job {d3}")
    assert f"JobState=PENDING Reason=Dependency Dependency=afterany:{d0}(unfulfilled),afterany:{d1}(unfulfilled)" \
        in r.stdout
    gate.touch()
    for j in (d0, d1, d3):
        c.wait_state(j, "COMPLETED")
    c.wait_state(d5, "CANCELLED")
    wait_until(lambda: c.job(d2)["reason"] == "DependencyNeverSatisfied", what="d2 never satisfied")
    assert queue(c, [d0, d1, d2, d3, d5], all_states=True) == sorted([
        f"{d0} d0 COMPLETED None (null)",
        f"{d1} d1 COMPLETED None (null)",
        f"{d2} d2 PENDING DependencyNeverSatisfied afternotok:{d0}(failed)",
        f"{d3} d3 COMPLETED None (null)",
        f"{d5} d5 CANCELLED DependencyNeverSatisfied afternotok:{d0}(failed)",
    ])
    c.run(f"scancel {d2}")


def test_singleton_and_bad_dependencies(cluster: Cluster):
    c = cluster
    gate = c.workdir / "single-gate"
    first = c.sbatch("-J", "solo", "--wrap", f"while [ ! -e {gate} ]; do sleep 0.1; done")
    second = c.sbatch("-J", "solo", "--dependency=singleton", "--wrap", "true")
    c.wait_state(first, "RUNNING")
    wait_until(lambda: c.job(second)["reason"] == "Dependency", what="singleton to wait")
    gate.touch()
    c.wait_state(second, "COMPLETED")
    for spec in ("afterok:99999999", "afterok:", "sometime:1"):  # (the first past MaxJobId)
        r = c.run(["sbatch", f"--dependency={spec}", "--wrap", "true"])
        assert (r.returncode, r.stderr) == (1, "sbatch: error: Batch job submission failed: Job dependency problem\n")
    # a job that never existed is taken as one that ended long ago: 22.05 submits and runs it
    c.wait_state(c.sbatch("--dependency=afterok:999999", "--wrap", "true"), "COMPLETED")
