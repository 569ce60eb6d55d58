"""SWF parsing and the cleaning rules of `slurmlet simulate`."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from slurmlet.controller.sim import swf


def rec(job_id, submit, run, alloc, req_procs=-1, req_time=-1, *, wait=0, user=1) -> str:
    """One 18-field SWF line."""
    f = [job_id, submit, wait, run, alloc, -1, -1, req_procs, req_time, -1, 1, user, 1, -1, -1, -1, -1, -1]
    return " ".join(str(x) for x in f)


def trace(*lines: str, header: str = "; MaxProcs: 4\n") -> str:
    return header + "".join(line + "\n" for line in lines)


def test_header_maxprocs_and_fields():
    t = swf.parse(trace(rec(1, 0, 100, 2, 2, 200)), "t.swf")
    assert t.max_procs == 4 and t.machine_source == "MaxProcs"
    [j] = t.jobs
    assert (j.job_id, j.submit, j.run, j.procs, j.requested, j.user, j.line) == (1, 0, 100, 2, 200, 1, 2)
    assert j.occupied == 100


def test_maxnodes_with_trailing_text_when_maxprocs_is_missing():
    hdr = "; Version: 2.2\n; MaxNodes: 338 (batch partition; 512 total)\n; Note: a: b\n"
    t = swf.parse(trace(rec(1, 0, 10, 400), rec(2, 0, 10, 338), header=hdr))
    assert (t.max_procs, t.machine_source) == (338, "MaxNodes")
    assert [j.job_id for j in t.jobs] == [2]
    assert t.skipped == {swf.SKIP_TOO_WIDE: 1}


def test_no_machine_size_in_header_uses_the_largest_job():
    t = swf.parse(trace(rec(1, 0, 10, 3), rec(2, 5, 10, 7), rec(3, 6, 0, 50), header="; Version: 2\n"))
    assert (t.max_procs, t.machine_source) == (7, "largest job")
    assert [j.job_id for j in t.jobs] == [1, 2]  # job 3 (run 0) does not size the machine either
    assert t.skipped == {swf.SKIP_RUN_TIME: 1}


def test_header_only_file():
    t = swf.parse("; MaxProcs: 16\n;\n")
    assert t.max_procs == 16 and t.jobs == [] and t.records == 0


def test_size_is_max_of_allocated_and_requested():
    t = swf.parse(trace(rec(1, 0, 10, 2, 3), rec(2, 0, 10, 3, 1), rec(3, 0, 10, -1, 2), rec(4, 0, 10, 4, -1)))
    assert [j.procs for j in t.jobs] == [3, 3, 2, 4]


def test_cleaning_rules_are_counted():
    t = swf.parse(trace(
        rec(1, 0, 0, 1),  # run time 0
        rec(2, 0, -1, 1),  # run time missing
        rec(3, 0, 10, 5),  # wider than the machine
        rec(4, 0, 10, -1, -1),  # no processor count at all
        rec(5, 0, 10, 4),  # exactly the machine: kept
    ))
    assert [j.job_id for j in t.jobs] == [5]
    assert t.skipped == {swf.SKIP_RUN_TIME: 2, swf.SKIP_TOO_WIDE: 1, swf.SKIP_NO_PROCS: 1}
    assert t.skipped_total == 4 and t.records == 5


def test_missing_requested_time_means_the_run_time_and_overruns_are_killed():
    t = swf.parse(trace(rec(1, 0, 100, 1, 1, -1), rec(2, 0, 100, 1, 1, 60), rec(3, 0, 100, 1, 1, 0)))
    assert [(j.requested, j.occupied) for j in t.jobs] == [(100, 100), (60, 60), (100, 100)]


def test_limit_counts_jobs_that_survive_cleaning_and_stops_reading():
    lines = [rec(1, 0, 0, 1), rec(2, 1, 10, 9), rec(3, 2, 10, 1), rec(4, 3, 10, 1), rec(5, 4, 10, 1), "garbage"]
    t = swf.parse(trace(*lines), limit=2)
    assert [j.job_id for j in t.jobs] == [3, 4]
    assert t.skipped == {swf.SKIP_RUN_TIME: 1, swf.SKIP_TOO_WIDE: 1}
    assert swf.parse(trace(*lines[:5]), limit=0).jobs == []
    assert len(swf.parse(trace(*lines[:5]), limit=100).jobs) == 3


@pytest.mark.parametrize("bad, msg", [
    ("1 2 3", "t.swf:3: expected 18 fields, found 3"),
    (rec(2, 5, 10, 1).replace(" 10 ", " ten ", 1), "t.swf:3: field 4 (run time) is not a number: 'ten'"),
    (rec(2, 5, 10, 1) + " 7", "t.swf:3: expected 18 fields, found 19"),
    (rec(2, 5, 10, 1).replace("5", "nan", 1), "t.swf:3: field 2 (submit time) is not a number: 'nan'"),
])
def test_garbled_line_names_its_line_number(bad, msg):
    with pytest.raises(swf.SwfError) as e:
        swf.parse(trace(rec(1, 0, 10, 1), bad), "t.swf")
    assert str(e.value).startswith(msg)


def test_float_fields_and_blank_lines():
    t = swf.parse("; MaxProcs: 4\n\n" + rec(1, "0.5", "10.0", 1, 1, "20.25") + "\n\n")
    [j] = t.jobs
    assert (j.submit, j.run, j.requested) == (0.5, 10, 20.25)
    assert isinstance(j.run, int)


def test_gzip_by_suffix_and_by_magic_bytes(tmp_path):
    text = trace(rec(1, 0, 10, 1), rec(2, 3, 10, 2))
    plain = tmp_path / "a.swf"
    plain.write_text(text)
    gz = tmp_path / "a.swf.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    hidden = tmp_path / "gz-without-suffix.swf"
    hidden.write_bytes(gzip.compress(text.encode()))
    for p in (plain, gz, hidden):
        t = swf.load(str(p))
        assert [j.job_id for j in t.jobs] == [1, 2], p


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(swf.SwfError, match="cannot read .*nope.swf: No such file"):
        swf.load(str(tmp_path / "nope.swf"))
    bad = tmp_path / "bad.swf.gz"
    bad.write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(swf.SwfError, match="cannot read"):
        swf.load(str(bad))


KTH = Path("/work/shared/traces/KTH-SP2-1996-2.1-cln.swf.gz")


@pytest.mark.skipif(not KTH.exists(), reason="needs the real traces in /work/shared/traces")
def test_real_trace_header():
    t = swf.load(str(KTH), limit=10)
    assert t.max_procs == 100 and len(t.jobs) == 10 and t.jobs[0].job_id == 15
