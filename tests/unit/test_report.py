"""core/report.py: sreport's arithmetic over allocations and a window."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from slurmlet.controller.core.report import Used, top_users, utilization


def test_allocations_count_their_cpus_for_their_time_in_the_window() -> None:
    used = [Used("alice", "ml", 4, 100, 200), Used("bob", "ml", 2, 50, 150), Used("alice", "ml", 1, 250, None),
            Used("carol", "x", 8, 0, 100)]  # ends at the window's start: nothing
    u = utilization(used, cpus=16, created=0, start=100, end=400, now=300)
    assert u.allocated == 4 * 100 + 2 * 50 + 1 * 50  # the running one up to now
    assert u.reported == 16 * 200 and u.total == 16 * 300  # the cluster reported until now
    assert u.idle == u.reported - u.allocated
    assert top_users(u) == [("alice", "ml", 450.0), ("bob", "ml", 100.0)]
    assert top_users(u, 1) == [("alice", "ml", 450.0)]


def test_a_cluster_made_inside_the_window_reports_from_then() -> None:
    u = utilization([], cpus=4, created=150, start=100, end=200, now=1000)
    assert u.reported == 4 * 50 and u.idle == 200


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000), st.integers(1, 8)), max_size=20))
def test_nothing_is_counted_twice_or_outside(jobs: list[tuple[int, int, int]]) -> None:
    used = [Used("u", "a", c, min(s, e), max(s, e)) for s, e, c in jobs]
    u = utilization(used, cpus=8, created=0, start=200, end=700, now=10_000)
    by_user = sum(secs for *_, secs in top_users(u, 100))
    assert by_user == sum(c * max(0, min(e, 700) - max(s, 200)) for s, e, c in
                          ((min(a, b), max(a, b), c) for a, b, c in jobs))
    assert u.allocated == min(by_user, u.reported)  # (more CPUs than the cluster has cannot be used)
    assert u.idle >= 0 and u.allocated <= u.reported <= u.total


def test_gpu_hours_count_the_allocations_gpus() -> None:
    used = [Used("alice", "ml", 4, 100, 200, gpus=2), Used("bob", "ml", 8, 100, 200)]  # bob: CPUs only
    u = utilization(used, cpus=4, created=0, start=0, end=400, now=400, tres="gres/gpu")  # (4 GPUs)
    assert (u.allocated, u.reported) == (2 * 100, 4 * 400)
    assert top_users(u) == [("alice", "ml", 200.0)]


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000), st.integers(1, 8)), max_size=20),
       st.integers(1, 24))
def test_a_windows_buckets_add_up_to_it(jobs: list[tuple[int, int, int]], n: int) -> None:
    """The dashboard's plot: the window cut in n buckets counts what the whole window counts (while
    nothing is capped at what the cluster reported)."""
    used = [Used("u", "a", c, min(s, e), max(s, e)) for s, e, c in jobs]
    whole = utilization(used, cpus=1000, created=0, start=0, end=1200, now=1200)
    parts = [utilization(used, cpus=1000, created=0, start=1200 * i / n, end=1200 * (i + 1) / n, now=1200)
             for i in range(n)]
    assert abs(sum(p.allocated for p in parts) - whole.allocated) < 1e-6 * max(1.0, whole.allocated)
    assert abs(sum(p.reported for p in parts) - whole.reported) < 1e-6 * max(1.0, whole.reported)
