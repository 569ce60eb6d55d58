"""squeue's lines rendered by the controller (GET /api/v1/squeue, common/render_squeue.py's Kept):
the CLI prints what it would have rendered itself from the jobs, for the views the controller
renders, and renders the others (local times, -l, --start, -j) itself."""

from __future__ import annotations

import time

import pytest

from slurmlet.common import render_squeue
from tests.conftest import BIN, Cluster

pytestmark = pytest.mark.e2e

VIEWS = [
    ([], {}),
    (["-h"], {"noheader": True}),
    (["-r"], {"array_collapse": False}),
    (["-o", "%i %j %T %r %D %C %P %Q %M %L %N"], {"fmt": "%i %j %T %r %D %C %P %Q %M %L %N"}),
    (["-O", "jobid:10,name,state,reason:.30,timeused"], {"long_fmt": "jobid:10,name,state,reason:.30,timeused"}),
    (["-S", "-i,M", "-o", "%.18i %.8j %.2t %.10M"], {"sort": "-i,M", "fmt": "%.18i %.8j %.2t %.10M"}),
    (["-o", "%i %V %S %e"], {"fmt": "%i %V %S %e"}),  # local times: rendered by the CLI
    (["-l"], {"long": True}),
    (["--start"], {"start": True}),
]


def _squeue(cluster: Cluster, argv: list[str], jobs_query: str, **view) -> None:
    """The CLI's output is squeue_lines over the jobs the API lists, at a time within the command."""
    t0 = time.time()
    r = cluster.run([str(BIN / "squeue"), *argv])
    t1 = time.time()
    assert r.returncode == 0, (argv, r.stderr)
    jobs = cluster.api("GET", "/api/v1/jobs" + jobs_query)["jobs"]
    collapse = view.pop("array_collapse", True)
    want = {"".join(x + "\n" for x in render_squeue.squeue_lines(jobs, now=t, array_collapse=collapse, **view))
            for t in (t0, t1)}
    assert r.stdout in want, (argv, r.stdout, want)


def test_squeue_prints_what_it_would_render_itself(cluster: Cluster):
    cluster.sbatch("-H", "-J", "held_one", "-o", "/dev/null", "--wrap", "true")
    cluster.sbatch("-H", "-J", "an_array", "--array", "0-4%2", "-o", "/dev/null", "--wrap", "true")
    cluster.wait_state(cluster.sbatch("-o", "/dev/null", "--wrap", "true"), "COMPLETED")
    running = cluster.sbatch("-J", "sleeper", "-o", "/dev/null", "--wrap", "sleep 300")
    cluster.wait_state(running, "RUNNING")
    try:
        queued = "?states=PENDING,RUNNING,SUSPENDED,COMPLETING,CONFIGURING"
        for _ in range(2):  # (the second time from what the controller kept)
            for argv, view in VIEWS:
                _squeue(cluster, argv, queued, **view)
        _squeue(cluster, ["-t", "all", "-u", "root", "-p", "debug"], "?partitions=debug&users=root")
        _squeue(cluster, ["-n", "sleeper,held_one", "-h"], queued + "&names=sleeper,held_one", noheader=True)
        time.sleep(1.1)  # the running job's TIME moves on with the controller's clock, kept lines or not
        _squeue(cluster, [], queued)
    finally:
        cluster.run([str(BIN / "scancel"), str(running)])


def test_squeue_j_prints_what_it_would_render_itself(cluster: Cluster):
    """squeue -j through the controller too: the jobs named (an array's id names its tasks, `A_T` one
    task), of squeue's states unless -t says otherwise; none known is Slurm's error."""
    held = cluster.sbatch("-H", "-o", "/dev/null", "--wrap", "true")
    array = cluster.sbatch("-H", "--array", "0-3", "-o", "/dev/null", "--wrap", "true")
    done = cluster.sbatch("-o", "/dev/null", "--wrap", "true")
    cluster.wait_state(done, "COMPLETED")
    queued = {"PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING"}
    cases = [([str(held)], f"?ids={held}", queued, None), ([str(array)], f"?ids={array}", queued, None),
             ([f"{array}_1,{held}"], f"?ids={array},{held}", queued, {f"{array}_1"}),
             ([f"{array}_"], f"?ids={array}", queued, {f"{array}_"}),
             ([str(done)], f"?ids={done}", queued, None), ([str(done), "-t", "all"], f"?ids={done}", None, None),
             ([str(array), "-r", "-h"], f"?ids={array}", queued, None)]
    for argv, query, states, tasks in cases:
        t0 = time.time()
        r = cluster.run([str(BIN / "squeue"), "-j", *argv])
        assert r.returncode == 0, (argv, r.stderr)
        jobs = [j for j in cluster.api("GET", "/api/v1/jobs" + query)["jobs"] if states is None or j["state"] in states]
        if tasks:
            jobs = render_squeue.named_tasks(jobs, tasks)
        want = render_squeue.squeue_lines(jobs, now=t0, noheader="-h" in argv, array_collapse="-r" not in argv)
        assert r.stdout == "".join(x + "\n" for x in want), (argv, r.stdout)
    r = cluster.run([str(BIN / "squeue"), "-j", "999999"])
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "slurm_load_jobs error: Invalid job id specified\n")


def test_squeue_unknown_column_is_slurms_error(cluster: Cluster):
    for argv, column in ((["-o", "%i %Ü"], "Ü"), (["-O", "jobid,bogus"], "bogus")):
        r = cluster.run([str(BIN / "squeue"), *argv])
        assert (r.returncode, r.stdout) == (1, "") and \
            r.stderr == f"squeue: error: Invalid job format specification: {column}\n", (argv, r.stderr)


def test_a_view_too_large_for_the_controller_is_rendered_by_squeue(cluster: Cluster):
    """A format's columns and widths multiply the controller's work by the jobs: it refuses a large
    one (anyone may send it), which squeue renders itself, as Slurm prints it."""
    job = cluster.sbatch("-H", "-o", "/dev/null", "--wrap", "true")
    r = cluster.run([str(BIN / "squeue"), "-h", "-j", str(job), "-o", "%.5000i|"])
    assert r.returncode == 0 and r.stdout == str(job).rjust(5000) + "|\n", (r.stderr, len(r.stdout))
    import httpx
    got = httpx.get(f"{cluster.url}/api/v1/squeue", params={"fmt": "%.5000i"}, timeout=30)
    assert got.status_code == 400 and "render it yourself" in got.json()["detail"]["error"], got.text
    for params in ({"fmt": "%i" * 65}, {"fmt": "%.5000i", "long_fmt": ""}, {"long_fmt": "jobid:\u00b2"},
                   {"sort": ",".join("M" * 17)}, {"fmt": "%999i" * 5}):
        got = httpx.get(f"{cluster.url}/api/v1/squeue", params=params, timeout=30)
        assert got.status_code == 400, (params, got.text)
