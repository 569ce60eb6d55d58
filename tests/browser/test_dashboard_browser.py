"""The dashboard as a person uses it, in headless Chromium: sign in with the address's token, watch a
job submitted from the CLI appear, run and finish, cancel another from its page, see the GPU grid match
`scontrol show node`; a second user has no buttons on someone else's job. Screenshots of each page go
to the test's temporary directory, or to docs/ (docs/dashboard.md shows them) with
SLURMLET_SCREENSHOTS=docs."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.browser.conftest import token_for
from tests.conftest import BIN, Cluster, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

DOCS = Path(__file__).resolve().parents[2] / "docs"
WAIT = 30_000  # ms: generous, every wait ends on what the page shows


def shot(page, name: str, where: Path) -> None:
    where = DOCS if os.environ.get("SLURMLET_SCREENSHOTS") == "docs" else where
    page.screenshot(path=str(where / f"dashboard-{name}.png"), full_page=True)


def test_follow_a_job_and_cancel_another(browser, gpu_cluster: Cluster, tmp_path: Path):
    c = gpu_cluster
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)  # (CSP refusals too)
    page.goto(f"{c.url}/?token={token_for(c)}")
    page.wait_for_selector("#who >> text=signed in as root", timeout=WAIT)
    assert "token=" not in page.url  # taken out of the address (and the history)
    page.wait_for_selector("#live.on", timeout=WAIT)  # following the event stream

    # submitted from the CLI: appears, runs and finishes on the queue page, without a reload
    page.click("nav >> text=Queue")
    stop = c.workdir / "dash-stop"
    jid = c.sbatch("-J", "watched", "--gpus=2", "--wrap",
                   f"echo started-watched; while [ ! -e {stop} ]; do sleep 0.1; done; echo finished-watched")
    row = f'#queue tr[data-job="{jid}"]'
    page.wait_for_selector(f'{row} td:text-is("R")', timeout=WAIT)  # squeue's ST
    assert page.inner_text(f"{row} td:nth-child(3)") == "watched"

    # the GPU grid: the cells the job holds carry its id, as many as scontrol says are allocated
    page.click("nav >> text=Cluster")
    page.wait_for_selector(f'.gpu[data-job="{jid}"]', timeout=WAIT)
    colours = page.eval_on_selector_all(f'.gpu[data-job="{jid}"]', "cells => cells.map(c => getComputedStyle(c).backgroundColor)")
    assert len(set(colours)) == 1 and colours[0] not in ("rgba(0, 0, 0, 0)", "transparent"), colours  # the job's own
    for node in c.node_names:
        shown = page.locator(f'#nodes tr[data-node="{node}"] .gpu.held').count()
        out = c.run([str(BIN / "scontrol"), "show", "node", node]).stdout
        alloc = re.search(r"AllocTRES=\S*gres/gpu=(\d+)", out)
        assert shown == (int(alloc.group(1)) if alloc else 0), (node, out)
    shot(page, "cluster", tmp_path)
    # an administrator's change that starts or ends no job shows too (the stream tells of API changes)
    node = c.node_names[1]
    assert c.run(f"scontrol update nodename={node} state=drain reason=dash-check").returncode == 0
    page.wait_for_selector(f'#nodes tr[data-node="{node}"] td:text-is("dash-check")', timeout=WAIT)
    assert c.run(f"scontrol update nodename={node} state=resume").returncode == 0
    page.wait_for_selector(f'#nodes tr[data-node="{node}"] td:text-is("")', timeout=WAIT)
    page.click("nav >> text=Queue")
    page.wait_for_selector(row, timeout=WAIT)
    shot(page, "queue", tmp_path)

    # its page, then its end: the page follows it to COMPLETED
    page.click(f"{row} a")
    page.wait_for_selector('#job-fields dd[data-field="JobState"]:text-is(\"RUNNING\")', timeout=WAIT)
    page.wait_for_selector("#output:has-text('started-watched')", timeout=WAIT)  # its output file, read live
    page.wait_for_selector("#plot-mem polyline", timeout=WAIT)  # its memory, from the agent's samples
    shot(page, "job", tmp_path)
    stop.touch()
    page.wait_for_selector('#job-fields dd[data-field="JobState"]:text-is(\"COMPLETED\")', timeout=WAIT)
    page.wait_for_selector("#output:has-text('finished-watched')", timeout=WAIT)  # followed to its end
    assert page.inner_text("#output").splitlines() == ["started-watched", "finished-watched"]
    assert c.job(jid)["state"] == "COMPLETED"

    # another job, cancelled from its page with the button the CLI's rules allow
    other = c.sbatch("-J", "victim", "--wrap", "sleep 300")
    c.wait_state(other, "RUNNING", timeout=60)
    page.goto(f"{c.url}/#/job/{other}")
    page.click('button[data-action="cancel"]', timeout=WAIT)
    page.wait_for_selector('#job-fields dd[data-field="JobState"]:text-is(\"CANCELLED\")', timeout=WAIT)
    assert c.job(other)["state"] == "CANCELLED"
    assert not errors, errors
    page.close()


def test_a_large_output_is_shown_from_its_end_and_followed_a_piece_at_a_time(browser, gpu_cluster: Cluster):
    """An output many pieces long (common/wire.PIECE): the page shows its last lines, says how much
    it does not show, and follows what the job writes next, several pieces at once, without a gap."""
    c = gpu_cluster
    more = c.workdir / "large-more"
    jid = c.sbatch("-J", "large", "--wrap", f"seq -f 'line %07g' 1 300000; while [ ! -e {more} ]; do sleep 0.1; done; "
                                            "seq -f 'line %07g' 300001 400000; echo the-end; sleep 300")
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{c.url}/?token={token_for(c)}#/job/{jid}")
    page.wait_for_selector("#output:has-text('line 0300000')", timeout=WAIT)
    line = len("line 0000000\n")
    assert page.inner_text("#output-head").endswith(f"{300000 * line} bytes, following")
    head, *lines = page.inner_text("#output").splitlines()  # its last lines, whole, and what is not shown
    assert head == f"[… the first {(300000 - len(lines)) * line} bytes are not shown]"
    assert lines == [f"line {n:07}" for n in range(300001 - len(lines), 300001)] and len(lines) > 10000
    more.touch()  # 1.3 MB more: several pieces
    page.wait_for_selector("#output:has-text('the-end')", timeout=WAIT)
    head, *lines, end = page.inner_text("#output").splitlines()
    assert head == f"[… the first {(400000 - len(lines)) * line} bytes are not shown]" and end == "the-end"
    assert lines == [f"line {n:07}" for n in range(400001 - len(lines), 400001)] and len(lines) > 10000
    c.api("POST", "/api/v1/jobs/cancel", {"ids": [jid]})
    assert not errors, errors
    page.close()


def test_another_user_has_no_actions_on_my_job(browser, gpu_cluster: Cluster):
    c = gpu_cluster
    jid = c.sbatch("-H", "--wrap", "true")  # root's, held
    page = browser.new_page()
    page.goto(f"{c.url}/?token={token_for(c, 'nobody')}#/job/{jid}")
    page.wait_for_selector("#who >> text=signed in as nobody", timeout=WAIT)
    page.wait_for_selector('#job-fields dd[data-field="JobState"]:text-is(\"PENDING\")', timeout=WAIT)
    assert page.locator(".actions button").count() == 0
    # nor its output or usage: the page says so, and the API refuses them
    page.wait_for_selector("text=Only the job's owner and administrators see its output.", timeout=WAIT)
    assert page.locator("#output").count() == 0 and page.locator("#usage").count() == 0
    for what in ("output", "usage"):
        status = page.evaluate("""async ([id, what]) => (await fetch('/api/v1/jobs/' + id + '/' + what, {
            headers: {'X-SLURM-USER-TOKEN': sessionStorage.getItem('slurmlet.token')}})).status""", [jid, what])
        assert status == 403, what
    # and the API refuses them whatever the page shows
    status = page.evaluate("""async (id) => (await fetch('/api/v1/jobs/' + id + '/release', {method: 'POST',
        headers: {'X-SLURM-USER-TOKEN': sessionStorage.getItem('slurmlet.token')}})).status""", jid)
    assert status in (401, 403)
    assert c.job(jid)["held"]
    # its owner has Release
    page.goto(f"{c.url}/?token={token_for(c)}#/job/{jid}")
    page.wait_for_selector('button[data-action="release"]', timeout=WAIT)
    page.close()


def test_follow_a_two_node_job_its_log_and_memory(browser, gpu_cluster: Cluster, tmp_path: Path):
    """The issue's walk-through: a 2-node job followed from submission to completion, its log and
    each node's memory on its page while it runs."""
    c = gpu_cluster
    go = c.workdir / "two-go"
    script = ("#!/bin/bash\n#SBATCH -N2 --ntasks-per-node=1 -J two\n"
              "srun bash -c 'echo rank $SLURM_PROCID on $SLURMD_NODENAME; "
              "x=$(head -c 30000000 /dev/zero | tr \"\\\\0\" a); "
              f"while [ ! -e {go} ]; do sleep 0.1; done; echo rank $SLURM_PROCID done'\n")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    jid = c.sbatch(script=script)
    page.goto(f"{c.url}/?token={token_for(c)}#/job/{jid}")
    page.wait_for_selector('#job-fields dd[data-field="JobState"]:text-is(\"RUNNING\")', timeout=WAIT)
    for rank, node in enumerate(c.node_names):
        page.wait_for_selector(f"#output:has-text('rank {rank} on {node}')", timeout=WAIT)
        # each node's curve, with its name in the legend (not colour alone)
        page.wait_for_selector(f'#plot-mem polyline[data-node="{node}"]', timeout=WAIT)
        page.wait_for_selector(f'.legend li[data-node="{node}"]', timeout=WAIT)
    page.wait_for_selector("#plot-cpu polyline", timeout=WAIT)  # two looks at least: a rate
    shot(page, "job-two-nodes", tmp_path)
    go.touch()
    page.wait_for_selector('#job-fields dd[data-field="JobState"]:text-is(\"COMPLETED\")', timeout=WAIT)
    page.wait_for_selector("#output:has-text('rank 1 done')", timeout=WAIT)
    page.wait_for_selector("#output:has-text('rank 0 done')", timeout=WAIT)
    assert not errors, errors
    page.close()


def test_queue_collapses_a_pending_array_and_a_job_shows_its_priority(browser, gpu_cluster: Cluster):
    c = gpu_cluster
    blocker = c.sbatch("-N2", "--exclusive", "--wrap", "sleep 300")
    c.wait_state(blocker, "RUNNING", timeout=60)
    jid = c.sbatch("--array=0-3,7%2", "-J", "wide", "--wrap", "true")  # pends for resources
    page = browser.new_page()
    page.goto(f"{c.url}/?token={token_for(c)}#/queue")
    row = f'#queue tr[data-array="{jid}"]'
    page.wait_for_selector(row, timeout=WAIT)
    assert page.locator(f'#queue tr[data-job]:has-text("{jid}_")').count() == 1  # one row, as squeue's
    out = c.run([str(BIN / "squeue"), "-h", "-j", str(jid), "-o", "%i"]).stdout.split()
    assert out == [f"{jid}_[0-3,7%2]"] == [page.inner_text(f"{row} td:first-child")]
    # a pending job's page: sprio's factors
    page.goto(f"{c.url}/#/job/{jid}")
    page.wait_for_selector("#sprio td[data-factor=priority]", timeout=WAIT)
    sprio = c.run([str(BIN / "sprio"), "-h", "-j", str(jid), "-o", "%Y %A"]).stdout.split()
    assert page.inner_text("#sprio td[data-factor=priority]") == sprio[0]
    assert page.inner_text("#sprio td[data-factor=age]") == sprio[1]
    c.run(f"scancel {jid} {blocker}")
    page.close()


RUN_YAML = """experiment_name: dash-run
compute: {num_accelerators: 4, accelerator_type: GPU_2xH100}
command: |
  echo "node $NODE_RANK of $NUM_NODES says hi"
timeout_minutes: 5
"""


def test_runs_page_shows_an_air_run_its_nodes_logs_and_mlflow_link(browser, gpu_cluster: Cluster):
    c = gpu_cluster
    (c.workdir / "dash-run.yaml").write_text(RUN_YAML)
    r = c.run(["air", "run", "-f", "dash-run.yaml", "--watch"], timeout=180)
    assert r.returncode == 0, r.stderr
    run_id = int(r.stdout.splitlines()[0])
    # where `slurmlet mlflow start` notes the attempt's MLflow run (a tracking server's address: a link)
    (c.workdir / ".air" / f"{run_id}-a1.mlflow").write_text(
        '{"uri": "http://mlflow.example:5000", "experiment_id": "3", "run_id": "abc123", "attempt": 1}')
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{c.url}/?token={token_for(c)}#/runs")
    row = f'#runs-list tr[data-run="{run_id}"]'
    page.wait_for_selector(f'{row} td:text-is("SUCCEEDED")', timeout=WAIT)
    assert page.inner_text(f"{row} td:nth-child(2)") == "dash-run"
    assert page.inner_text("#runs-list + .count") == "1 run"  # this module's only run
    page.click(f"{row} a")
    page.wait_for_selector("#output:has-text('node 0 of 2 says hi')", timeout=WAIT)
    page.click('button[data-node="1"]')
    page.wait_for_selector("#output:has-text('node 1 of 2 says hi')", timeout=WAIT)
    link = page.wait_for_selector("a#mlflow", timeout=WAIT)
    assert link.get_attribute("href") == "http://mlflow.example:5000/#/experiments/3/runs/abc123"
    assert link.get_attribute("rel") == "noopener noreferrer"
    air = c.run(["air", "get", str(run_id)]).stdout
    assert "attempts:" in air and page.inner_text('dd[data-field="Attempts"]') == "1"
    assert not errors, errors
    page.close()


def test_accounting_and_scheduler_pages(browser, gpu_cluster: Cluster):
    c = gpu_cluster
    jid = c.sbatch("--gpus=1", "--wrap", "sleep 2")  # allocated time in the window, and a pass that started it
    c.wait_state(jid, "COMPLETED", timeout=60)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{c.url}/?token={token_for(c)}#/accounting")
    page.wait_for_selector("#plot-util polyline", state="attached", timeout=WAIT)  # (a flat line has no height)
    page.wait_for_selector("#plot-gpu polyline", state="attached", timeout=WAIT)
    shown = page.inner_text("#utilization-gpu")  # GPU hours as sreport -T gres/gpu counts them: the job's
    assert shown.startswith("GPU hours") and not re.search(r"allocated [0-9.]+ \(0\.00%\)", shown), shown
    page.wait_for_selector('#top-users tr[data-user="root"]', timeout=WAIT)  # this module's jobs are root's
    page.wait_for_selector('#top-accounts tr[data-account="root"]', timeout=WAIT)
    # the fair-share tree: sshare's rows, in its order
    want = [ln.split("|")[:2] for ln in c.run([str(BIN / "sshare"), "-a", "-P", "-n", "-o", "Account,User"]).stdout.split()]
    shown = page.eval_on_selector_all("#shares tbody tr", "rows => rows.map(r => [r.dataset.account, r.dataset.user])")
    assert [[a.strip(), u] for a, u in want] == shown
    shot(page, "accounting", Path(c.workdir))
    page.click("nav >> text=Scheduler")
    page.wait_for_selector('#sdiag tr[data-pass="main"]', timeout=WAIT)
    # each pass a mark of its own, no line across the minutes between passes
    page.wait_for_selector("#plot-cycle .marks circle", timeout=WAIT)
    assert page.locator("#plot-cycle polyline").count() == 0
    heading = page.inner_text("h3:has-text('The last')")
    passes = 1 if heading == "The last pass" else int(heading.split()[2])
    marks = page.locator("#plot-cycle .marks circle").count() + page.locator("#plot-cycle .marks rect").count()
    assert marks == passes, (heading, marks)
    cycles = int(page.inner_text('#sdiag tr[data-pass="main"] td:nth-child(2)'))
    sdiag = c.run([str(BIN / "sdiag")]).stdout
    assert cycles >= 1 and "Main schedule statistics" in sdiag
    shot(page, "scheduler", Path(c.workdir))
    assert not errors, errors
    page.close()


def test_a_long_queue_is_drawn_a_window_at_a_time(browser, gpu_cluster: Cluster):
    """1,000 jobs would be 12,000 cells to lay out: the page draws the rows in sight (and some
    around them), and scrolling brings the others."""
    c = gpu_cluster
    one = {"script": "#!/bin/sh\ntrue\n", "partition": "debug", "environment": {}, "workdir": str(c.workdir),
           "argv": [], "user": "root", "uid": 0, "gid": 0, "group": "root", "hold": True}
    ids = c.api("POST", "/api/v1/jobs/batch", {"jobs": [dict(one, name=f"long{i}") for i in range(400)]})["job_ids"]
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{c.url}/?token={token_for(c)}#/queue")
    page.wait_for_selector(f'#queue tr[data-job="{ids[0]}"]', timeout=WAIT)
    drawn = page.locator("#queue tbody tr[data-job]").count()
    assert 10 < drawn < 150, drawn
    before = int(page.inner_text(".count").split()[0])  # (with any other module test's jobs still queued)
    assert before >= len(ids)
    assert page.locator(f'#queue tr[data-job="{ids[-1]}"]').count() == 0
    page.evaluate("() => { const b = document.getElementById('queue-box'); b.scrollTop = b.scrollHeight; }")
    page.wait_for_selector(f'#queue tr[data-job="{ids[-1]}"]', timeout=WAIT)
    assert page.locator(f'#queue tr[data-job="{ids[0]}"]').count() == 0
    # the scroll position outlives the next redraw (a change in the queue)
    c.run(f"scancel {ids[0]}")
    page.wait_for_selector(f".count:text-matches('^{before - 1} jobs')", timeout=WAIT)
    assert page.locator(f'#queue tr[data-job="{ids[-1]}"]').count() == 1
    # scrolled far down, a filter leaves a few: they show
    page.fill('input[data-filter="name"]', "long39")  # long39, long390..long399
    page.wait_for_selector(f'#queue tr[data-job="{ids[39]}"]', timeout=WAIT)
    assert page.locator("#queue tbody tr[data-job]").count() == 11
    c.run(["scancel", *map(str, ids)])
    assert not errors, errors
    page.close()


def scontrol_field(c: Cluster, jid: int, key: str) -> str:
    out = c.run([str(BIN / "scontrol"), "show", "job", str(jid)]).stdout
    return re.search(rf"\b{key}=(\S+)", out).group(1)


def test_a_step_does_not_multiply_the_batch_hosts_cpu(browser, gpu_cluster: Cluster):
    """The batch script and its step are sampled apart (each its own process tree): the CPU curve of
    their node is their rates added, not the growth of one divided by the gap to the other's sample.
    One busy loop uses at most one core."""
    c = gpu_cluster
    stop = c.workdir / "busy-stop"
    jid = c.sbatch("-J", "busy", "-c2", "--wrap", f"srun -n1 bash -c 'while [ ! -e {stop} ]; do :; done'")
    c.wait_state(jid, "RUNNING", timeout=60)
    page = browser.new_page()
    page.goto(f"{c.url}/?token={token_for(c)}#/job/{jid}")
    # a few looks at the node (one each USAGE_EVERY), the step's tree sampled a few times in each
    line = page.locator("#plot-cpu polyline")
    wait_until(lambda: line.count() and len(line.get_attribute("points").split()) >= 8, 90, 0.5, "CPU samples")
    peak = float(page.text_content("#plot-cpu text"))  # the axis' top: the highest value plotted
    stop.touch()
    c.wait_state(jid, "COMPLETED", timeout=60)
    assert 0.3 < peak < 1.3, peak
    page.close()


def test_gpu_cells_say_free_or_their_job_without_colour(browser, gpu_cluster: Cluster):
    c = gpu_cluster
    jid = c.sbatch("-J", "onegpu", "-w", c.node_names[0], "--gpus=1", "--wrap", "sleep 300")
    page = browser.new_page()
    page.goto(f"{c.url}/?token={token_for(c)}#/cluster")
    page.wait_for_selector(f'.gpu[data-job="{jid}"]', timeout=WAIT)
    cells = page.eval_on_selector_all(f'#nodes tr[data-node="{c.node_names[0]}"] .gpu',
                                      "cells => cells.map(c => [c.classList.contains('held'), c.innerText])")
    assert sorted(text for _, text in cells) == [str(jid), "free", "free", "free"], cells
    assert all(text == (str(jid) if held else "free") for held, text in cells), cells
    c.run(f"scancel {jid}")
    page.close()


def test_a_pending_jobs_page_shows_its_expected_start_and_that_it_has_not_started(browser, gpu_cluster: Cluster):
    """StartTime and EndTime as scontrol shows them (tests/data/slurm-2205-dashboard-times.md): a
    pending job's expected start (and its end a time limit later), a running job's end at its start
    plus its limit. Before it starts a job has no output, usage or steps: its page says so."""
    c = gpu_cluster
    blocker = c.sbatch("-J", "blocker", "-N2", "--exclusive", "-t", "10", "--wrap", "sleep 300")
    c.wait_state(blocker, "RUNNING", timeout=60)
    jid = c.sbatch("-J", "next", "-t", "3", "--wrap", "true")
    wait_until(lambda: scontrol_field(c, jid, "StartTime") != "Unknown", 60, 0.5, "an expected start")
    page = browser.new_page()
    page.goto(f"{c.url}/?token={token_for(c)}#/job/{jid}")
    page.wait_for_selector('#job-fields dd[data-field="JobState"]:text-is("PENDING")', timeout=WAIT)
    for key in ("StartTime", "EndTime"):
        assert page.inner_text(f'#job-fields dd[data-field="{key}"]') == scontrol_field(c, jid, key), key
    page.wait_for_selector("text=No steps: the job has not started.", timeout=WAIT)
    assert page.locator("#steps").count() == 0 and page.locator("#output").count() == 0
    assert page.locator('p:text-is("The job has not started.")').count() == 2  # its usage and its output
    assert page.locator("text=Asking the nodes").count() == 0
    # the running one: its end a time limit after its start
    page.goto(f"{c.url}/#/job/{blocker}")
    page.wait_for_selector('#job-fields dd[data-field="JobState"]:text-is("RUNNING")', timeout=WAIT)
    for key in ("StartTime", "EndTime"):
        assert page.inner_text(f'#job-fields dd[data-field="{key}"]') == scontrol_field(c, blocker, key), key
    assert scontrol_field(c, blocker, "EndTime") != "Unknown"
    c.run(f"scancel {jid} {blocker}")
    page.close()


def test_the_queue_is_in_squeues_order(browser, gpu_cluster: Cluster):
    """squeue's default order (-S P,t,-p): by partition, then state, then priority from the highest,
    not by job id. One job shown is "1 job"."""
    c = gpu_cluster
    ids = [c.sbatch("-J", "order-a", "-p", "short", "-H", "--wrap", "true"),
           c.sbatch("-J", "order-b", "-H", "--wrap", "true"),
           c.sbatch("-J", "order-c", "--begin=now+1hour", "--nice=100", "--wrap", "true"),
           c.sbatch("-J", "order-d", "--begin=now+1hour", "--wrap", "true")]
    out = c.run([str(BIN / "squeue"), "-h", "-o", "%i"]).stdout.split()
    want = [i for i in out if int(i) in ids]
    assert want != sorted(want), want  # (else the test says nothing)
    page = browser.new_page()
    page.goto(f"{c.url}/?token={token_for(c)}#/queue")
    page.fill('input[data-filter="name"]', "order-")
    page.wait_for_selector(f'#queue tr[data-job="{ids[-1]}"]', timeout=WAIT)
    shown = page.eval_on_selector_all("#queue tbody tr[data-job]", "rows => rows.map(r => r.dataset.job)")
    assert shown == want
    page.fill('input[data-filter="name"]', "order-a")
    page.wait_for_selector(".count:text-is('1 job')", timeout=WAIT)
    c.run(["scancel", *map(str, ids)])
    page.close()


def chrome_idle(browser, url: str) -> None:
    """Open `url` as tools that wait for the network to go idle do: Playwright's networkidle, and
    Chromium's own lifecycle event (no request open for 500 ms: what Puppeteer's networkidle0 waits
    for). The live stream is followed meanwhile."""
    page = browser.new_page()
    cdp = page.context.new_cdp_session(page)
    events: list[str] = []
    cdp.on("Page.lifecycleEvent", lambda e: events.append(e["name"]))
    cdp.send("Page.enable")
    cdp.send("Page.setLifecycleEventsEnabled", {"enabled": True})
    page.goto(url, wait_until="networkidle", timeout=WAIT)
    page.wait_for_selector("#live.on", timeout=WAIT)
    # (the events before "init" are the blank page's, before the dashboard's document; Playwright hands
    # over the session's events while it is called: the wait for a moment lets them in)
    wait_until(lambda: page.wait_for_timeout(100) or ("init" in events and "networkIdle" in events[events.index("init"):]),
               30, 0, f"Chromium's networkIdle on {url}")
    page.close()


def test_every_page_goes_idle_on_the_network(browser, gpu_cluster: Cluster):
    c = gpu_cluster
    jid = c.sbatch("-J", "idle", "--wrap", "sleep 300")
    c.wait_state(jid, "RUNNING", timeout=60)
    chrome_idle(browser, f"{c.url}/?token={token_for(c)}#/cluster")
    for where in ("queue", f"job/{jid}", "runs", "accounting", "scheduler"):
        chrome_idle(browser, f"{c.url}/?token={token_for(c)}#/{where}")
    c.run(f"scancel {jid}")
