"""srun's and salloc's signals at the awkward moments: before the step exists, twice while the step is
being asked for, during the last poll of an allocation's wait. Each case runs in a process of its own
with real signals; the controller's side is a stand-in for `cli.http.request` that records the calls."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PRELUDE = textwrap.dedent("""
    import os, signal, sys
    from slurmlet.cli import http, srun
    from slurmlet.cli.salloc import Allocation
    calls = []
    def record(method, path, body=None, **kw):
        calls.append((method, path.split("?")[0]))
        return {"state": "RUNNING", "job_id": 7}
    http.request = record
""")


def _run(prog: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(prog)], capture_output=True, text=True,
                          timeout=60)


def test_a_signal_before_there_is_anything_to_cancel_cancels_it_once_it_exists():
    r = _run("""
        intr = srun._Interrupt()
        os.kill(os.getpid(), signal.SIGTERM)
        print("noted", intr.got, calls)
        intr.arm(lambda: http.request("POST", "/api/v1/jobs/7/steps/0/cancel", {}))
        intr.arm(lambda: http.request("POST", "/api/v1/jobs/7/steps/0/cancel", {}))
        print("armed", calls)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["noted True []", "armed [('POST', '/api/v1/jobs/7/steps/0/cancel')]"]
    assert r.stderr == "srun: forcing job termination\n"


def test_a_second_signal_while_the_step_is_still_being_asked_for_gives_up_at_once():
    r = _run("""
        intr = srun._Interrupt()
        os.kill(os.getpid(), signal.SIGINT)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted", calls)
    """)
    assert r.stdout.splitlines() == ["interrupted []"], r.stderr


def test_each_signal_once_armed_asks_for_the_cancel_again():
    r = _run("""
        intr = srun._Interrupt(hangup=True)
        intr.arm(lambda: http.request("POST", "/api/v1/jobs/cancel", {"ids": [7]}))
        os.kill(os.getpid(), signal.SIGHUP)
        os.kill(os.getpid(), signal.SIGTERM)
        print(calls)
    """)
    assert r.stdout.splitlines() == ["[('POST', '/api/v1/jobs/cancel'), ('POST', '/api/v1/jobs/cancel')]"], r.stderr


def test_a_signal_during_the_poll_that_finds_the_allocation_started_gives_it_back():
    """The signal lands while the last `until=start` poll is answered RUNNING: the allocation is
    revoked, not used as if nothing had come."""
    r = _run("""
        def poll(method, path, body=None, **kw):
            calls.append((method, path.split("?")[0]))
            if "until=start" in path:
                os.kill(os.getpid(), signal.SIGTERM)
            return {"state": "RUNNING", "job_id": 7}
        http.request = poll
        got = Allocation(7, lambda line: print("say", line), prog="srun").wait_granted()
        print("granted", got, calls)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "say Job allocation 7 has been revoked.",
        "granted None [('GET', '/api/v1/jobs/7'), ('POST', '/api/v1/jobs/cancel')]"]


def test_a_cancelled_step_whose_tasks_never_reported_is_a_failure():
    r = _run("""
        class IO:
            cancelled, interrupted, exits, ntasks, oom = True, False, {}, 2, set()
        print(srun._report(IO()))
        IO.exits = {0: (0, 9, "node1"), 1: (0, 9, "node1")}
        print(srun._report(IO()))
        IO.cancelled, IO.exits = False, {}
        print(srun._report(IO()))
    """)
    assert r.stdout.splitlines() == ["1", "137", "0"], r.stderr
