"""The samples an agent keeps of each job for the dashboard's plots: a real process sampled, a series
that keeps a long run's whole course in a bounded number of points, and the last jobs kept after
their end."""

from __future__ import annotations

import os
import subprocess
import sys

from slurmlet.nodeagent import usage
from slurmlet.nodeagent.usage import Book


def test_a_sample_records_the_trees_memory_and_cpu():
    p = subprocess.Popen([sys.executable, "-c", "x = bytearray(50 << 20); x[::4096] = b'1' * len(x[::4096]); "
                          "print('ready', flush=True); import sys; sys.stdin.read()"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"ready\n"
        u = Book().new(7, "batch")
        u.sample([p.pid])
        u.sample([p.pid])  # within the spacing: no second point
        t, rss, cpu = u.series[-1]
        assert len(u.series) == 1 and rss > 50_000 and cpu > 0 and u.max_rss >= rss
        u.spacing = 0.0
        u.sample([p.pid, os.getpid()])  # another tree's memory adds up
        assert len(u.series) == 2 and u.series[1][1] > rss and u.series[1][0] >= t
    finally:
        p.communicate(b"")


def test_a_long_run_keeps_its_whole_course_in_bounded_points(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(usage.time, "time", lambda: clock[0])
    u = usage.Usage()
    for _ in range(10 * usage.SERIES_MAX):
        u.sample([])
        clock[0] += 1.0
    assert len(u.series) < usage.SERIES_MAX
    assert u.series[0][0] == 1000.0 and u.series[-1][0] > 1000.0 + 9 * usage.SERIES_MAX  # first and latest
    gaps = {round(b[0] - a[0]) for a, b in zip(u.series, u.series[1:])}
    assert max(gaps) <= 2 * min(gaps)  # still evenly spread


def test_the_book_keeps_the_last_jobs_by_source():
    b = Book()
    b.new(1, "batch")
    b.new(1, "0.0")
    assert [s["source"] for s in b.series(1)] == ["batch", "0.0"]
    for jid in range(2, Book.JOBS + 2):
        b.new(jid, "batch")
    assert b.series(1) == [] and b.series(Book.JOBS + 1) != []
    assert b.series(999_999) == []
