"""`slurmlet simulate --sacct ... --html FILE`: the replays side by side as one self-contained page."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from slurmlet.controller.commands import simulate as cli_simulate
from slurmlet.controller.sim import engine, html, sacct
from slurmlet.controller.sim.swf import SwfJob, Trace
from tests.unit.sim.test_sacct import DUMP, HEADER, LINES, conf

HOSTILE = {"User": "<script>alert(1)</script>", "Account": 'acct"><img src=x onerror=alert(2)>',
           "Partition": "p&amp;<b>"}


class Page(HTMLParser):
    """What a reader sees: the elements (tag, attributes) and the text of each table's cells."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.rows: list[list[str]] = []  # header and data cells, row by row
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def count(self, tag: str) -> int:
        return sum(1 for t, _ in self.tags if t == tag)

    def row(self, first: str) -> list[str]:
        return next(r for r in self.rows if r and r[0] == first)


def hostile_dump(tmp_path: Path) -> Path:
    """The real dump with the first 20 records' partition, account and user replaced by markup."""
    out = [LINES[0]]
    for n, line in enumerate(LINES[1:]):
        vals = line.split("|")
        if n < 20:
            for field, v in HOSTILE.items():
                vals[HEADER.index(field)] = v
        out.append("|".join(vals))
    p = tmp_path / "hostile.txt"
    p.write_text("\n".join(out) + "\n")
    return p


def test_the_page_of_the_sample_dump_shows_both_replays_their_groups_and_three_plots(tmp_path, capsys):
    a, b = conf(tmp_path, "a.conf", 4), conf(tmp_path, "b.conf", 3)
    out = tmp_path / "report.html"
    assert cli_simulate.main(["--sacct", str(DUMP), "--config", a, "--vs", b, "--html", str(out)]) == 0
    assert "all jobs" in capsys.readouterr().out  # the text report still goes to stdout
    text = out.read_text()
    p = Page(text)
    assert p.count("script") == 0 and "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert [r for r in p.rows if r and r[0] == "configuration"] == [["configuration", a, b]]
    assert p.row("machine")[1:] == ["32 CPUs", "24 CPUs"]
    # one table per kind of group, each with a column per replay under every figure
    kinds = [attrs["data-kind"] for t, attrs in p.tags if t == "table" and "data-kind" in attrs]
    assert kinds == ["all", "partition", "account", "user"]
    everyone = p.row("all jobs")
    assert everyone[1] == everyone[2] == "398"  # jobs: every job that ran fits both machines
    mean_a, mean_b = (float(v.split()[0]) for v in everyone[3:5])
    assert mean_b > mean_a  # the smaller machine waits longer, as the text report says
    for group in ("debug", "high", "root"):
        assert p.row(group)
    assert sum(1 for r in p.rows if r[:1] == ["partition"] and r[1:3] == ["jobs", "mean wait"]) == 1
    # the plots: queue length and utilization with a line per replay, waits by size with bars
    svgs = [attrs["id"] for t, attrs in p.tags if t == "svg"]
    assert svgs == ["plot-queue", "plot-waits", "plot-util"]
    lines = [attrs["data-replay"] for t, attrs in p.tags if t == "path" and attrs.get("class") == "series"]
    assert lines == ["A", "B", "A", "B"]
    bars = {attrs["data-replay"] for t, attrs in p.tags if t == "g" and attrs.get("class") == "bar"}
    assert bars == {"A", "B"}
    assert {"1", "2"} <= set("".join(p.text).split())  # CPU ranges on the size axis


def test_names_from_the_dump_are_text_not_markup(tmp_path):
    t = sacct.load(str(hostile_dump(tmp_path)), 32)
    res = engine.simulate(t, engine.policy("easy", t.jobs))
    text = html.page({"A": res, "<i>B</i>": res}, sources={"A": "<a.conf>"}, trace="<dump>")
    assert "<script" not in text and "<img" not in text and "<b>" not in text and "<i>" not in text
    p = Page(text)
    assert p.count("script") == p.count("img") == p.count("b") == p.count("i") == 0
    for name in HOSTILE.values():  # each shown as itself, in its own row
        assert p.row(name)
    assert p.row("configuration")[1] == "<a.conf>"
    assert "<i>B</i>" in [attrs.get("data-replay") for t, attrs in p.tags if t == "path"]
    assert "<dump>" in "".join(p.text)


def test_queue_length_and_utilization_follow_the_schedule():
    # 2 CPUs: job 1 (2 CPUs, 10 s) at 0; job 2 (1 CPU, 5 s) arrives at 2 and waits to 10; job 3
    # (1 CPU, 20 s) arrives at 3, waits to 10
    jobs = [SwfJob(1, 0, 10, 2, 10), SwfJob(2, 2, 5, 1, 5), SwfJob(3, 3, 20, 1, 20)]
    res = engine.simulate(Trace(path="-", max_procs=2, machine_source="-", jobs=jobs), engine.policy("fcfs"))
    assert res.start == [0, 10, 10]
    assert html.queue_length(res) == [(0, 0), (2, 1), (3, 2), (10, 0)]
    assert html.utilization(res) == [(0, 1.0), (10, 1.0), (15, 0.5), (30, 0.0)]
    # averaged over 3 intervals of 10 s: the same CPU-seconds
    assert html.binned(html.utilization(res), 30, 3) == [(0, 1.0), (10, pytest.approx(0.75)), (20, 0.5)]
    assert html.size_buckets(5) == [(1, 1), (2, 2), (3, 4), (5, 8)]


def test_cli_html_needs_sacct_and_a_writable_file(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli_simulate.main([str(DUMP), "--policy", "fcfs", "--html", str(tmp_path / "x.html")])
    assert e.value.code == 2 and "--html needs --sacct" in capsys.readouterr().err
    a = conf(tmp_path, "a.conf", 4)
    missing = tmp_path / "no" / "such" / "dir" / "x.html"
    assert cli_simulate.main(["--sacct", str(DUMP), "--config", a, "--jobs", "20", "--html", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot write {missing}" in err


def test_one_configuration_is_a_page_of_one_column_and_json_still_prints(tmp_path, capsys):
    a = conf(tmp_path, "a.conf", 4)
    out = tmp_path / "one.html"
    assert cli_simulate.main(["--sacct", str(DUMP), "--config", a, "--jobs", "50", "--json", "--html", str(out)]) == 0
    assert capsys.readouterr().out.startswith('{"replays"')
    p = Page(out.read_text())
    assert p.row("configuration") == ["configuration", a] and p.row("all jobs")[1] == "50"
    assert [attrs["data-replay"] for t, attrs in p.tags if t == "path" and attrs.get("class") == "series"] == ["A", "A"]
