"""Load: 1,000 submissions from 8 concurrent REST clients while 100 simulated agents long-poll one
controller (bench/loadgen.py generates both). Nothing is lost or duplicated, every job is in the
accounting view, every node stays registered and idle, and the controller's memory stays bounded.
No timing is asserted: the figures are bench/bench.py's (`--only submit`, `--only agents`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psutil
import pytest

from bench import loadgen
from tests.conftest import Cluster, pg_available, pg_schema_url, serve, wait_until

pytestmark = pytest.mark.e2e

N_SIM = 100
WARMUP = 200
LOAD = 1000
RUN_EVERY = 10  #: every 10th job runs (`true` on the two real nodes); the others are held
#: the controller's RSS may grow at most this much from after the warm-up to after the load. What
#: legitimately grows: per pending job, its parsed request and last reason/priority/estimate kept
#: for the scheduling passes (well under 2 KB each: ~2 MB for 1,000 jobs); SQLite's page cache
#: (2 MB a connection, a few pooled connections) or psycopg's buffers; the allocator's arenas:
#: ~10 MB at most (measured: 3-4 MiB on SQLite and on PostgreSQL). 32 MiB is three times that, so
#: allocator noise does not fail the test, and it still catches a leak of some 30 KB a request over
#: these 1,000 submissions (a connection, a request body with its buffers, a response kept each
#: time); smaller leaks are below what RSS tells apart in a test this short.
RSS_GROWTH_MAX = 32 * 2**20

CONF = (f"ClusterName=test\nNodeName=node[1-2] CPUs=4 RealMemory=8000\n"
        f"NodeName=sim[1-{N_SIM}] CPUs=8 RealMemory=16000\n"
        f"PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=INFINITE\n"
        f"PartitionName=sim Nodes=sim[1-{N_SIM}] MaxTime=INFINITE\n"
        f"KillWait=2\nMinJobAge=300\nSlurmletRequeueDelay=0\n")


def _cluster(root: Path, db_url: str | None = None):
    # real agents for node1 and node2 only: the sim nodes are played by loadgen.SimAgents
    yield from serve(Cluster(root, nodes=2, conf=CONF, db_url=db_url))


@pytest.fixture
def load_cluster(tmp_path: Path):
    yield from _cluster(tmp_path / "c")


@pytest.fixture
def pg_load_cluster(tmp_path: Path):
    if not pg_available():
        pytest.skip("PostgreSQL is not running at 127.0.0.1:5432")
    yield from _cluster(tmp_path / "c", pg_schema_url("slurmlet_load"))


def _rss(c: Cluster) -> int:
    return psutil.Process(c.procs["controller"].pid).memory_info().rss


def _node_states(c: Cluster) -> dict[str, str]:
    return {n["name"]: n["state"] for n in c.api("GET", "/api/v1/nodes")["nodes"]}


def _load(c: Cluster) -> None:
    key = c.key_file.read_bytes().strip()
    sim_names = [f"sim{i}" for i in range(1, N_SIM + 1)]
    held = loadgen.job_body(str(c.workdir), name="load")
    runnable = loadgen.job_body(str(c.workdir), name="load-run", hold=False)
    rss: dict[str, int] = {}

    def all_idle() -> dict[str, str] | None:
        states = _node_states(c)
        return states if set(states.values()) == {"IDLE"} else None

    async def main() -> None:
        sim = loadgen.SimAgents(c.url, key, sim_names)
        await sim.start()
        try:
            await asyncio.wait_for(sim.all_registered.wait(), 60)
            warm = await loadgen.submit(c.url, key, held, WARMUP)
            assert not warm.errors, warm.errors[:3]
            await asyncio.to_thread(wait_until, all_idle, 30, 0.05, "all nodes idle after the warm-up")
            rss["warm"] = _rss(c)
            syncs0 = sim.syncs
            # the load: 8 clients, one job a request; every RUN_EVERY-th job runs, the rest are held
            r = await loadgen.submit(c.url, key, [runnable if i % RUN_EVERY == 0 else held for i in range(LOAD)],
                                     LOAD)
            assert not r.errors, r.errors[:3]
            rss["load"] = _rss(c)
            # checked while the agents go on syncing (in a thread: their loop keeps running)
            await asyncio.to_thread(_check, c, warm.ids, r.ids, sim_names, all_idle)
            assert sim.syncs > syncs0  # they synced through it all
            assert not sim.errors, sim.errors[:5]
        finally:
            await sim.stop()

    asyncio.run(main())
    # memory bounded (see RSS_GROWTH_MAX)
    growth = rss["load"] - rss["warm"]
    print(f"controller RSS: {rss['warm'] / 2**20:.1f} MiB after the warm-up, {rss['load'] / 2**20:.1f} MiB "
          f"after the load")
    assert growth < RSS_GROWTH_MAX, f"controller RSS grew {growth / 2**20:.1f} MiB ({rss})"


def _check(c: Cluster, warm_ids: list[int], acked: list[int], sim_names: list[str], all_idle) -> None:
    # no lost, no duplicate job: every acknowledged id is a distinct job
    assert len(acked) == LOAD and len(set(acked)) == LOAD
    assert len(warm_ids) == WARMUP and not set(acked) & set(warm_ids)
    # every job accounted for, once, in the sacct view; nothing else was made
    history = c.api("GET", "/api/v1/jobs?history=true")["jobs"]
    ids = [j["job_id"] for j in history]
    assert len(ids) == len(set(ids)) == WARMUP + LOAD
    assert set(ids) == set(acked) | set(warm_ids)
    by_id = {j["job_id"]: j for j in history}
    run_ids = [jid for jid in acked if by_id[jid]["name"] == "load-run"]
    held_ids = set(warm_ids) | (set(acked) - set(run_ids))
    assert len(run_ids) == LOAD // RUN_EVERY
    assert all(by_id[jid]["state"] == "PENDING" and by_id[jid]["reason"] == "JobHeldUser" for jid in held_ids)

    def all_ran() -> bool:
        jobs = c.api("GET", "/api/v1/jobs?history=true&ids=" + ",".join(map(str, run_ids)))["jobs"]
        return len(jobs) == len(run_ids) and all(j["state"] == "COMPLETED" and j["exit_code"] == 0 for j in jobs)
    wait_until(all_ran, 60, 0.1, "the runnable jobs to complete")
    assert {j["job_id"] for j in c.api("GET", "/api/v1/jobs?states=PENDING,RUNNING")["jobs"]} == held_ids
    # the nodes: all registered, and idle once the runnable jobs are done (they ran on node1-2 only)
    states = wait_until(all_idle, 30, 0.05, "all nodes idle after the load")
    assert set(states) == {"node1", "node2", *sim_names}


def test_load_sqlite(load_cluster: Cluster):
    _load(load_cluster)


@pytest.mark.pg
def test_load_postgres(pg_load_cluster: Cluster):
    _load(pg_load_cluster)
