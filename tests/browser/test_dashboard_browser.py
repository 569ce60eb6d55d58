"""The dashboard as a person uses it, in headless Chromium: sign in with the address's token, watch a
job submitted from the CLI appear, run and finish, cancel another from its page, see the GPU grid match
`scontrol show node`; a second user has no buttons on someone else's job. Screenshots of each page go
to the test's temporary directory, or to docs/ (the README shows the main one) with
SLURMLET_SCREENSHOTS=docs."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.browser.conftest import token_for
from tests.conftest import BIN, Cluster

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

DOCS = Path(__file__).resolve().parents[2] / "docs"
WAIT = 30_000  # ms: generous, every wait ends on what the page shows


def shot(page, name: str, where: Path) -> None:  # noqa: ANN001
    where = DOCS if os.environ.get("SLURMLET_SCREENSHOTS") == "docs" else where
    page.screenshot(path=str(where / f"dashboard-{name}.png"), full_page=True)


def test_follow_a_job_and_cancel_another(browser, gpu_cluster: Cluster, tmp_path: Path):  # noqa: ANN001
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
    jid = c.sbatch("-J", "watched", "--gpus=2", "--wrap", f"while [ ! -e {stop} ]; do sleep 0.1; done")
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
    page.click("nav >> text=Queue")
    page.wait_for_selector(row, timeout=WAIT)
    shot(page, "queue", tmp_path)

    # its page, then its end: the page follows it to COMPLETED
    page.click(f"{row} a")
    page.wait_for_selector('#job-fields dd[data-field="JobState"]:text-is(\"RUNNING\")', timeout=WAIT)
    shot(page, "job", tmp_path)
    stop.touch()
    page.wait_for_selector('#job-fields dd[data-field="JobState"]:text-is(\"COMPLETED\")', timeout=WAIT)
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


def test_another_user_has_no_actions_on_my_job(browser, gpu_cluster: Cluster):  # noqa: ANN001
    c = gpu_cluster
    jid = c.sbatch("-H", "--wrap", "true")  # root's, held
    page = browser.new_page()
    page.goto(f"{c.url}/?token={token_for(c, 'nobody')}#/job/{jid}")
    page.wait_for_selector("#who >> text=signed in as nobody", timeout=WAIT)
    page.wait_for_selector('#job-fields dd[data-field="JobState"]:text-is(\"PENDING\")', timeout=WAIT)
    assert page.locator(".actions button").count() == 0
    # and the API refuses them whatever the page shows
    status = page.evaluate("""async (id) => (await fetch('/api/v1/jobs/' + id + '/release', {method: 'POST',
        headers: {'X-SLURM-USER-TOKEN': sessionStorage.getItem('slurmlet.token')}})).status""", jid)
    assert status in (401, 403)
    assert c.job(jid)["held"]
    # its owner has Release
    page.goto(f"{c.url}/?token={token_for(c)}#/job/{jid}")
    page.wait_for_selector('button[data-action="release"]', timeout=WAIT)
    page.close()
