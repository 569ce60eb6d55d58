"""Dependency rules: each type against each way a target can end, `,` and `?`, what squeue shows."""

from __future__ import annotations

import pytest

from slurmlet.controller.store.deps import Target, parse
from slurmlet.controller.store.deps import evaluate as _evaluate

NOW = 1000.0


def evaluate(dep, targets: dict, singleton_blocked: bool, now: float):
    """Jobs by id; a list value is an array's tasks."""
    def lookup(it):
        got = targets.get(it.target)
        if isinstance(got, dict):
            return [got[it.task]] if it.task is not None else list(got.values())
        return [got] if got is not None else []
    return _evaluate(dep, lookup, singleton_blocked, now)
RUN = Target("RUNNING", 900.0, None, 0)
DONE = Target("COMPLETED", 900.0, 950.0, 0)
EXIT3 = Target("FAILED", 900.0, 950.0, 3)
CANCELLED_PENDING = Target("CANCELLED", 960.0, 960.0, 0)
PEND = Target("PENDING", None, None, 0)


@pytest.mark.parametrize("spec, target, verdict, shown", [
    ("afterok:7", PEND, "wait", "afterok:7(unfulfilled)"),
    ("afterok:7", RUN, "wait", "afterok:7(unfulfilled)"),
    ("afterok:7", DONE, "ok", None),
    ("afterok:7", EXIT3, "never", "afterok:7(failed)"),
    ("afternotok:7", DONE, "never", "afternotok:7(failed)"),
    ("afternotok:7", EXIT3, "ok", None),
    ("afternotok:7", CANCELLED_PENDING, "ok", None),
    ("afterany:7", EXIT3, "ok", None),
    ("afterany:7", RUN, "wait", "afterany:7(unfulfilled)"),
    ("7", DONE, "ok", None),  # a bare id is afterany
    ("after:7", PEND, "wait", "after:7(unfulfilled)"),
    ("after:7", RUN, "ok", None),
    ("after:7", CANCELLED_PENDING, "ok", None),
    ("after:7+1", RUN, "ok", None),  # started 100 s ago
    ("after:7+2", RUN, "wait", "after:7+2(unfulfilled)"),
])
def test_each_type(spec, target, verdict, shown):
    got = evaluate(parse(spec), {7: target}, False, NOW)
    assert got[:2] == (verdict, shown)


def test_all_of_and_any_of_and_the_wake_time_of_after_plus_minutes():
    both = parse("afterok:7,afterany:8")
    assert evaluate(both, {7: DONE, 8: RUN}, False, NOW)[:2] == ("wait", "afterany:8(unfulfilled)")
    assert evaluate(both, {7: EXIT3, 8: RUN}, False, NOW)[0] == "never"
    either = parse("afterok:7?afterok:8")
    assert evaluate(either, {7: EXIT3, 8: RUN}, False, NOW)[:2] == \
        ("wait", "afterok:7(failed)?afterok:8(unfulfilled)")
    assert evaluate(either, {7: EXIT3, 8: DONE}, False, NOW)[0] == "ok"
    assert evaluate(either, {7: EXIT3, 8: EXIT3}, False, NOW)[0] == "never"
    assert evaluate(parse("after:7+2"), {7: RUN}, False, NOW)[2] == 900.0 + 120
    assert evaluate(parse("singleton"), {}, True, NOW)[:2] == ("wait", "singleton(unfulfilled)")
    assert evaluate(parse("singleton"), {}, False, NOW)[0] == "ok"


@pytest.mark.parametrize("spec", ["afterok", "afterok:", "afterok:x", "bogus:1", "afterok:1,afterok:2?afterok:3",
                                  "singletonx"])
def test_malformed_dependencies_are_refused(spec):
    with pytest.raises(ValueError, match="Job dependency problem"):
        parse(spec)


def test_an_array_id_stands_for_every_task_and_id_task_for_one():
    tasks = {0: DONE, 1: RUN}
    assert evaluate(parse("afterok:7"), {7: tasks}, False, NOW)[0] == "wait"
    assert evaluate(parse("afterok:7_0"), {7: tasks}, False, NOW)[0] == "ok"
    assert evaluate(parse("afterok:7"), {7: {0: DONE, 1: EXIT3}}, False, NOW)[0] == "never"
    assert evaluate(parse("afterany:7"), {7: {0: DONE, 1: EXIT3}}, False, NOW)[0] == "ok"
