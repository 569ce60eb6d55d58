"""An agent that stops while it puts a job's shell in its cgroup leaves no process behind: the shell
waits stopped at its gate until it is in its cgroup, and a stopped process left so would wait for
ever (one was found after a benchmark's cluster went down)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from slurmlet.common.cgroupconf import Policy, mount_type
from slurmlet.nodeagent import cgroup
from slurmlet.nodeagent.cgroup import Hierarchy, proc_state
from slurmlet.nodeagent.launcher import Launcher
from tests.conftest import wait_until


def _layout() -> str | None:
    if os.geteuid() != 0:
        return None
    if mount_type("/sys/fs/cgroup/freezer") == "cgroup" and os.access("/sys/fs/cgroup/freezer", os.W_OK):
        return "v1"
    for v2 in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if mount_type(v2) == "cgroup2" and os.access(v2, os.W_OK):
            return "v2"
    return None


@pytest.mark.skipif(_layout() is None, reason="no writable cgroup hierarchy (not root, or a container)")
def test_an_agent_stopped_mid_launch_kills_the_gated_shell(tmp_path: Path, monkeypatch):
    spool = tmp_path / "spool"
    spool.mkdir()
    launcher = Launcher("n1", str(spool), kill_wait=1.0)
    launcher.cgroups = Hierarchy.detect("n1", str(spool), _layout())
    launcher.policy = Policy.from_conf({})
    assert launcher.cgroups is not None
    gated: list[int] = []

    async def never_adopted(self, pid: int, cpus=None, timeout: float = 10.0) -> bool:
        gated.append(pid)  # the agent is told to stop while it would move the shell
        await asyncio.Event().wait()
        return True

    monkeypatch.setattr(cgroup.Group, "adopt", never_adopted)
    marker = tmp_path / "ran"
    order = {"job_id": 7, "restarts": 0, "uid": 0, "gid": 0, "script": f"#!/bin/sh\ntouch {marker}\n",
             "stdout": str(tmp_path / "out"), "workdir": str(tmp_path)}

    async def scenario() -> None:
        task = asyncio.create_task(launcher.launch(order, {"PATH": os.environ["PATH"]}))
        while not gated:
            await asyncio.sleep(0.01)
        wait_until(lambda: proc_state(gated[0]) == "T", 10, what="the shell to stop at its gate")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    wait_until(lambda: proc_state(gated[0]) in (None, "Z"), 10, what="the gated shell to be killed")
    assert not marker.exists()  # (its script never ran)
    asyncio.run(launcher.cgroups.group(7).remove(1.0))
