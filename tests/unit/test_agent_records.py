"""The agent's records of what it started (nodeagent/records.py) and what a restarted agent does
with them (Agent.recover): resend undelivered reports, kill what is left running, report it lost."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from slurmlet.nodeagent import records
from slurmlet.nodeagent.agent import Agent
from tests.conftest import wait_until


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def session():
    """A job-like process tree in a session of its own: a shell and its child; reaped at the end."""
    p = subprocess.Popen(["/bin/sh", "-c", "sleep 300 & wait"], start_new_session=True,
                         env=dict(os.environ, SLURM_JOB_ID="7", SLURMLET_LAUNCH_ID="tok7"))
    kids = wait_until(lambda: [c.pid for c in records.psutil.Process(p.pid).children()], 5, what="the child")
    yield p, kids[0]
    for pid in (p.pid, kids[0]):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    p.wait(5)


def test_save_load_remove(tmp_path: Path):
    r = records.Records(str(tmp_path))
    r.save("job3", {"kind": "batch", "job_id": 3, "restarts": 1, "procs": []})
    (tmp_path / "state" / "job4.json.tmp").write_text("{")  # an interrupted write
    (tmp_path / "state" / "job5.json").write_text("not json")
    assert r.load() == {"job3": {"kind": "batch", "job_id": 3, "restarts": 1, "procs": []}}
    assert sorted(os.listdir(tmp_path / "state")) == ["job3.json"]
    r.remove("job3")
    r.remove("job3")
    assert r.load() == {}


def test_a_save_stopped_between_its_steps_leaves_the_old_record_or_the_new_one(tmp_path: Path):
    r = records.Records(str(tmp_path))
    state = tmp_path / "state"
    old, new = {"job_id": 6, "procs": []}, {"job_id": 6, "procs": [{"pid": 9}]}
    r.save("job6", old)
    (state / "job6.json.tmp").write_text(json.dumps(new))  # written whole, the old one not yet removed
    assert r.load() == {"job6": new}  # (the newer one: a finished report must not be lost)
    assert sorted(os.listdir(state)) == ["job6.json"]
    (state / "job6.json").unlink()
    (state / "job6.json.tmp").write_text(json.dumps(new))  # the old one removed, the new one not yet renamed
    assert r.load() == {"job6": new}
    assert sorted(os.listdir(state)) == ["job6.json"]
    assert r.load() == {"job6": new}
    r.save("job6", old)  # over a record: the new one whole, no temporary file left
    assert r.load() == {"job6": old} and sorted(os.listdir(state)) == ["job6.json"]


def test_a_record_emptied_by_a_power_loss_gives_way_to_its_whole_copy(tmp_path: Path):
    r = records.Records(str(tmp_path))
    state = tmp_path / "state"
    new = {"job_id": 8, "procs": [], "finished": {"job_id": 8, "exit_code": 0}}
    (state / "job8.json").write_text("")  # written but never on the disk
    (state / "job8.json.tmp").write_text(json.dumps(new))
    assert r.load() == {"job8": new}
    assert sorted(os.listdir(state)) == ["job8.json"] and json.loads((state / "job8.json").read_text()) == new


def test_removing_a_record_removes_a_copy_a_failed_save_left(tmp_path: Path):
    r = records.Records(str(tmp_path))
    state = tmp_path / "state"
    rec = {"job_id": 9, "procs": []}
    r.save("job9", rec)
    (state / "job9.json.tmp").write_text(json.dumps(rec))
    r.remove("job9")
    assert os.listdir(state) == [] and r.load() == {}


def test_a_record_saved_while_another_process_loads_is_not_removed(tmp_path: Path, monkeypatch):
    """The fence may save a record while a new agent loads the spool: a file gone between the
    listing and its read is left alone, whatever is there by then."""
    r = records.Records(str(tmp_path))
    state = tmp_path / "state"
    r.save("job10", {"job_id": 10, "procs": []})
    real = records._read

    def read_while_saved(path, warn=False):
        if path.endswith("job10.json"):
            os.unlink(path)  # the other process's save, between its two steps
            out = real(path, warn)
            (state / "job10.json").write_text(json.dumps({"job_id": 10, "procs": [], "fenced": 1.0}))
            return out
        return real(path, warn)

    monkeypatch.setattr(records, "_read", read_while_saved)
    assert r.load() == {}
    monkeypatch.undo()
    assert r.load() == {"job10": {"job_id": 10, "procs": [], "fenced": 1.0}}


def test_leftovers_need_the_same_pid_and_creation_time(session):
    p, child = session
    entry = records.proc_entry(p.pid)
    assert entry["pgid"] == p.pid and entry["create_time"] is not None
    found = {q.pid for q in records.leftovers({"job_id": 7, "procs": [entry]})}
    assert found == {p.pid, child}
    # the same pid with another creation time is another process (the pid was reused): left alone,
    # and so are its session's members unless they carry the job's id
    other = dict(entry, create_time=entry["create_time"] - 100)
    assert {q.pid for q in records.leftovers({"job_id": 8, "procs": [other]})} == set()
    assert {q.pid for q in records.leftovers({"job_id": 7, "procs": [other]})} == {p.pid, child}
    assert {q.pid for q in records.leftovers({"job_id": 7, "token": "tok8", "procs": [other]})} == set()


def test_the_token_finds_processes_whose_pids_were_never_written(session):
    """The agent died between saving the record and starting the job (or writing its pid)."""
    p, child = session
    assert {q.pid for q in records.leftovers({"job_id": 7, "token": "tok7", "procs": []})} == {p.pid, child}
    assert records.leftovers({"job_id": 7, "token": "tok9", "procs": []}) == []


def test_stop_kills_the_whole_tree(session):
    p, child = session
    rec = {"job_id": 7, "procs": [records.proc_entry(p.pid)]}
    # SIGTERM is enough: stop returns as soon as they are gone, long before its KillWait of an hour
    assert asyncio.run(asyncio.wait_for(records.stop([rec], kill_wait=3600), 30)) == 2
    assert p.wait(5) == -signal.SIGTERM
    wait_until(lambda: not alive(child), 5, what="the child to die")


def test_stop_sigkills_after_kill_wait(tmp_path: Path):
    p = subprocess.Popen(["/bin/sh", "-c", "trap 'echo term' TERM; echo ready; while :; do sleep 0.1; done"],
                         start_new_session=True, stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"ready\n"
    rec = {"job_id": 1, "procs": [records.proc_entry(p.pid)]}
    asyncio.run(records.stop([rec], kill_wait=0.5))
    # it was told to stop first (and would not), then killed
    assert p.wait(5) == -signal.SIGKILL and p.stdout.read() == b"term\n"


def test_the_spool_lock_keeps_a_second_agent_out(tmp_path: Path):
    fd = records.lock_spool(str(tmp_path))
    try:
        with pytest.raises(RuntimeError, match="another agent"):
            records.lock_spool(str(tmp_path), wait=0.2)
    finally:
        os.close(fd)
    os.close(records.lock_spool(str(tmp_path), wait=0.2))


def test_recover(tmp_path: Path, session):
    """A report the controller never acknowledged is sent again; a job and a step left running are
    killed and reported lost; a record already marked lost is reported again without killing."""
    p, child = session
    r = records.Records(str(tmp_path))
    done = {"job_id": 1, "exit_code": 0, "signal": 0, "end_time": 1.0, "restarts": 0}
    r.save("job1", {"kind": "batch", "job_id": 1, "restarts": 0, "procs": [], "finished": done})
    r.save("job7", {"kind": "batch", "job_id": 7, "restarts": 2, "procs": [records.proc_entry(p.pid)]})
    r.save("step9.0", {"kind": "step", "job_id": 9, "step_id": 0, "procs": []})
    r.save("job4", {"kind": "batch", "job_id": 4, "restarts": 0, "procs": [], "lost": True})
    agent = Agent(controller="http://127.0.0.1:9", name="n1", cpus=1, memory=100, gpus=0, gpu_type=None,
                  addr=None, spool=str(tmp_path), kill_wait=2)
    asyncio.run(agent.recover())
    assert agent.launcher.unacked() == [done] and (1, 0) in agent.launcher.done_ids
    assert agent.lost == {"job7": {"job_id": 7, "restarts": 2}, "step9.0": {"job_id": 9, "step_id": 0},
                          "job4": {"job_id": 4, "restarts": 0}}
    p.wait(5)
    wait_until(lambda: not alive(child), 5, what="the child to die")
    assert json.loads((tmp_path / "state" / "job7.json").read_text())["lost"] is True
    agent.launcher.ack([1])
    assert sorted(os.listdir(tmp_path / "state")) == ["job4.json", "job7.json", "step9.0.json"]
