"""sreport over a real local cluster's accounting: cluster utilization and user topusage in 22.05's
layout (tests/data/slurm-2205-sreport.md), the figures consistent with what sacct says the jobs used."""

from __future__ import annotations

import pytest

from tests.conftest import BIN, Cluster

pytestmark = pytest.mark.e2e

WINDOW = ("start=now-1hours", "end=now+1hours")


def sreport(c: Cluster, *args: str) -> list[str]:
    r = c.run([str(BIN / "sreport"), *args])
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_utilization_and_top_users_add_up(fresh_cluster):
    c: Cluster = fresh_cluster(nodes=2, cpus=4).start()
    jid = c.sbatch("-N2", "-c2", "--wrap", "sleep 2")
    c.wait_state(jid, "COMPLETED", timeout=60)
    out = sreport(c, "cluster", "utilization", *WINDOW)
    assert out[0] == "-" * 80 and out[1].startswith("Cluster Utilization ") and out[1].endswith(":59:59")
    assert out[2:6] == ["Usage reported in CPU Minutes", "-" * 80,
                        "  Cluster Allocate     Down PLND Dow     Idle  Planned Reported ",
                        "--------- -------- -------- -------- -------- -------- -------- "]
    assert out[6].split()[0] == "test"
    rows = sreport(c, "-P", "-n", "cluster", "utilization", *WINDOW, "-t", "seconds")
    cluster, alloc, down, pdown, idle, planned, reported = rows[0].split("|")
    elapsed = int(c.run(f"sacct -j {jid} -X -n -P -o ElapsedRaw").stdout.strip())
    assert cluster == "test" and int(alloc) >= 4 * elapsed - 4 and int(alloc) <= 4 * (elapsed + 1) + 1
    assert (down, pdown, planned) == ("0", "0", "0")
    assert abs(int(reported) - int(alloc) - int(idle)) <= 1 and int(reported) >= int(alloc)
    pct = sreport(c, "-P", "-n", "cluster", "utilization", *WINDOW, "-t", "percent")[0].split("|")
    assert all(x.endswith("%") for x in pct[1:])
    top = sreport(c, "-p", "user", "topusage", *WINDOW, "-t", "seconds")
    assert top[1].startswith("Top 10 Users ") and top[4] == "Cluster|Login|Proper Name|Account|Used|Energy|"
    assert top[5].split("|")[:2] == ["test", "root"] and top[5].split("|")[4] == alloc


def test_refusals(cluster: Cluster):
    r = cluster.run([str(BIN / "sreport"), "bogus"])
    assert r.returncode == 1 and r.stderr == "invalid keyword: bogus\n"
    r = cluster.run([str(BIN / "sreport"), "cluster", "utilization", "start=bad"])  # said, then yesterday's
    assert r.returncode == 0 and r.stderr == "Invalid time specification (pos=0): bad\n"
    title = r.stdout.splitlines()[1]
    assert title.startswith("Cluster Utilization ") and "T00:00:00 - " in title and title.endswith("T23:59:59")
