"""sacct -S/-E take the time forms of Slurm's parse_time() (common/slurmtime.py), as 22.05's sacct does."""

from __future__ import annotations

import time

import pytest

from slurmlet.cli.sacct import parse_when
from slurmlet.common.grammar import OptError

NOW = time.mktime((2026, 12, 7, 10, 30, 0, 0, 0, -1))


def local(*t: int) -> float:
    return time.mktime((*t, *(0,) * (6 - len(t)), 0, 0, -1))


@pytest.mark.parametrize("value, want", [
    ("1970-01-02-00:00:01", local(1970, 1, 2, 0, 0, 1)),  # YYYY-MM-DD-HH:MM:SS (a workflow engine's form)
    ("2026-12-01T08:15:30", local(2026, 12, 1, 8, 15, 30)),
    ("2026-12-01T08:15", local(2026, 12, 1, 8, 15)),
    ("2026-12-01", local(2026, 12, 1)),
    ("now-1hour", NOW - 3600), ("now", NOW), ("midnight", local(2026, 12, 7)), ("today", local(2026, 12, 7)),
    ("09:00", local(2026, 12, 7, 9)),  # (a time without a date: the last one past)
    ("11/30", local(2026, 11, 30)), ("11/30/25", local(2025, 11, 30)),
])
def test_sacct_reads_slurms_time_forms(value: str, want: float) -> None:
    assert parse_when(value, NOW) == want


@pytest.mark.parametrize("value, pos", [("bogus", 0), ("2026-13-01", 5), ("now+", 3)])
def test_what_is_no_time_is_refused(value: str, pos: int) -> None:
    with pytest.raises(OptError) as e:
        parse_when(value, NOW)
    assert e.value.lines == [f"Invalid time specification (pos={pos}): {value}"]


def test_an_empty_time_is_none() -> None:
    assert parse_when("", NOW) == 0
