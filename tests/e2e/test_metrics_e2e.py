"""/metrics and the 413 limits on a real cluster: after a few jobs the metrics say what squeue and
sinfo say; sbatch with an oversized script prints Slurm's error, exits 1 and submits nothing."""

from __future__ import annotations

import pytest

from tests.conftest import Cluster, serve, wait_until
from tests.unit.controller.test_metrics import parse_exposition, values

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def mcluster(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("metrics"), nodes=2, cpus=4))


def _metrics(c: Cluster) -> dict:
    import httpx
    r = httpx.get(f"{c.url}/metrics", timeout=10)
    assert r.status_code == 200
    return parse_exposition(r.text)


def test_metrics_after_a_few_jobs(mcluster: Cluster) -> None:
    c = mcluster
    done = c.sbatch("--wrap", "true")
    c.wait_state(done, "COMPLETED")
    full = c.sbatch("-n4", "--wrap", "sleep 60")
    part = c.sbatch("-n1", "--wrap", "sleep 60")
    c.wait_state(full, "RUNNING")
    c.wait_state(part, "RUNNING")
    waiting = c.sbatch("-N2", "--wrap", "true")
    held = c.sbatch("-p", "short", "-H", "--wrap", "true")
    try:
        wait_until(lambda: c.job(waiting)["reason"] not in (None, "None"), 10, what="a reason for the waiting job")
        q = c.run(["squeue", "-r", "-t", "all", "-h", "-o", "%T %P"])
        assert q.returncode == 0, q.stderr
        want: dict[tuple[str, str], int] = {}
        for line in q.stdout.split("\n"):
            if line.strip():
                st, part_name = line.split()
                want[(st, part_name)] = want.get((st, part_name), 0) + 1
        s = c.run(["sinfo", "-N", "-h", "-o", "%N %T"])
        sinfo_states = sorted({ln.split()[0]: ln.split()[1] for ln in s.stdout.splitlines() if ln.strip()}.values())
        fams = _metrics(c)
        got = {(lab["state"], lab["partition"]): int(v) for _, lab, v in fams["slurmlet_jobs"]["samples"] if v}
        assert got == want == {("COMPLETED", "debug"): 1, ("RUNNING", "debug"): 2, ("PENDING", "debug"): 1,
                               ("PENDING", "short"): 1}
        assert fams["slurmlet_queue_depth"]["samples"][0][2] == 2
        nodes = values(fams, "slurmlet_nodes", "state")
        assert sorted(k for k, v in nodes.items() for _ in range(int(v))) == sinfo_states == ["allocated", "mixed"]
        assert fams["slurmlet_jobs_started_total"]["samples"][0][2] == 3
        assert values(fams, "slurmlet_sched_cycles_total", "pass")["main"] >= 3
        codes = {(lab["method"], lab["route"], lab["code"]): v
                 for _, lab, v in fams["slurmlet_http_requests_total"]["samples"]}
        assert codes[("POST", "/api/v1/jobs", "201")] == 5
        assert codes[("GET", "/api/v1/squeue", "200")] >= 1  # squeue's (its lines rendered by the controller)
        assert fams["process_resident_memory_bytes"]["samples"][0][2] > 10 * 2**20
    finally:
        c.run(["scancel", str(full), str(part), str(waiting), str(held)])


@pytest.mark.parametrize("size", [4 * 2**20 + 1, 40 * 2**20], ids=["over-max_script_size", "over-the-body-limit"])
def test_sbatch_oversized_script(mcluster: Cluster, size: int) -> None:
    """Over 4 MiB the controller refuses the script; over 32 MiB the whole body, before reading it.
    sbatch says what Slurm's says either way, and the queue is as it was."""
    c = mcluster
    def ids() -> list[int]:
        # Earlier tests' jobs may still be finishing: the refusal must add no job (their states may move).
        return [j["job_id"] for j in c.api("GET", "/api/v1/jobs?history=true")["jobs"]]
    before = ids()
    path = c.workdir / "big.sbatch"
    head = "#!/bin/sh\ntrue\n"
    path.write_text(head + "#" * (size - len(head) - 1) + "\n")
    assert path.stat().st_size == size
    r = c.run(["sbatch", str(path)])
    assert r.returncode == 1
    assert r.stderr == ("sbatch: error: Batch job submission failed: "
                        "Pathname of a file, directory or other parameter too long\n")
    assert r.stdout == ""
    assert ids() == before
    path.unlink()
