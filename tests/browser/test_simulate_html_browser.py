"""The page of `slurmlet simulate --sacct ... --html FILE` in headless Chromium, opened from the file as
a person opens it: its plots are drawn at their size, its tables show, the hostile names of a crafted
dump are text, and nothing complains (no console error, no refusal of its Content-Security-Policy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmlet.controller.commands import simulate as cli_simulate
from tests.unit.sim.test_html import HOSTILE, hostile_dump
from tests.unit.sim.test_sacct import conf

pytestmark = [pytest.mark.browser]


def test_the_replay_page_draws_its_plots_and_tables(browser, tmp_path: Path):
    a, b = conf(tmp_path, "a.conf", 4), conf(tmp_path, "b.conf", 3)
    out = tmp_path / "report.html"
    assert cli_simulate.main(["--sacct", str(hostile_dump(tmp_path)), "--config", a, "--vs", b,
                              "--html", str(out)]) == 0
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(out.as_uri())
    page.wait_for_load_state("load")

    for plot in ("#plot-queue", "#plot-waits", "#plot-util"):
        box = page.locator(plot).bounding_box()
        assert box and box["width"] > 300 and box["height"] > 100, (plot, box)
    for replay in ("A", "B"):  # a line per replay over time, bars per replay by size, each drawn
        for sel in (f'#plot-queue path.series[data-replay="{replay}"]', f'#plot-util path.series[data-replay="{replay}"]',
                    f'#plot-waits g.bar[data-replay="{replay}"] rect'):
            box = page.locator(sel).first.bounding_box()
            assert box and box["width"] > 0, (sel, box)
    assert page.locator('#plot-waits g.bar[data-replay="B"] rect').count() >= 2

    assert page.is_visible("#summary") and page.inner_text("#summary tr:has-text('machine')").split() == [
        "machine", "32", "CPUs", "24", "CPUs"]
    for kind in ("all", "partition", "account", "user"):
        assert page.is_visible(f'table.groups[data-kind="{kind}"]'), kind
    assert page.locator('table.groups[data-kind="all"] tbody th').inner_text() == "all jobs"
    # the crafted names are rows of their tables, shown as they are written
    for kind, field in (("user", "User"), ("account", "Account"), ("partition", "Partition")):
        names = page.locator(f'table.groups[data-kind="{kind}"] tbody th').all_inner_texts()
        assert HOSTILE[field] in names, (kind, names)
    assert page.locator("script, img, b").count() == 0
    assert not dialogs and not errors, (dialogs, errors)
    page.screenshot(path=str(tmp_path / "simulate-html.png"), full_page=True)
    page.close()
