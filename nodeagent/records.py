"""What the agent started, on disk: a restarted agent finds what its predecessor left behind.

One small JSON file per batch job (`job<ID>.json`) and per step (`step<ID>.<STEP>.json`) under
`SPOOL/state/`, written atomically before its processes start and again once they exist:

    {"kind": "batch", "job_id": 12, "restarts": 0, "token": "9f0c...",
     "procs": [{"pid": 4242, "pgid": 4242, "create_time": 1718000000.12}]}

Each process is named by its pid AND its creation time (psutil's), so a pid the kernel has since
given to another process is never mistaken for it. The processes also carry the record's token in
their environment (SLURMLET_LAUNCH_ID, inherited by whatever they start), which finds them when the
agent died between starting them and writing their pids, and finds what left the job's session
(unless it cleared its environment). When the processes end, the file is rewritten
with the report sent to the controller (`"finished": {...}`) and removed once the controller has
acknowledged that report; so a file without a report is a job whose processes may still run.

An agent starting on the spool first reads these files (`Agent.recover`): a finished report is sent
again (the controller applies reports once), and for the others every process still alive (same
pid and same creation time) is killed with its whole tree (SIGTERM, SIGKILL after KillWait), and
the job is reported lost: the controller ends it NODE_FAIL and requeues it when allowed, as
slurmctld does with the jobs of a node that restarts. The spool is locked while an agent runs
(`lock_spool`), so that a second agent on it cannot kill the first one's jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import time

import psutil

log = logging.getLogger("slurmlet.agent")

#: the environment variable with which a job's (or step's) processes carry their record's token
TOKEN = "SLURMLET_LAUNCH_ID"


def new_token() -> str:
    return os.urandom(12).hex()


class Records:
    def __init__(self, spool: str):
        self.dir = os.path.join(spool, "state")
        os.makedirs(self.dir, exist_ok=True)

    def _path(self, name: str) -> str:
        return os.path.join(self.dir, f"{name}.json")

    def save(self, name: str, data: dict) -> None:
        """Write (or replace) a record: a crash leaves the old one or the new one. The new one is
        written whole to NAME.json.tmp, the old one removed, then the new one renamed into place; the
        next agent's `load` takes a whole NAME.json.tmp over NAME.json.
        (Not a rename over the old file: ext4 makes such a rename start writing the new file's data
        to the disk first, about a millisecond each time, and a job's or a step's launch writes two
        or three.) Nothing waits for the disk (no fsync: 0.5-4 ms a record here, on the way from a
        task's end to its report): after a power loss a record written in the last seconds may be
        empty, and its job is then lost with the node (NODE_FAIL, requeued where allowed), as
        slurmctld ends the jobs whose end a slurmd did not get to report."""
        path = self._path(name)
        tmp = f"{path}.tmp"
        try:
            with open(tmp, "w") as f:
                f.write(json.dumps(data))
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            os.rename(tmp, path)
        except OSError as e:  # a full disk must not stop the job: it only loses crash safety
            log.warning("cannot write %s: %s", path, e)
            if os.path.exists(path):  # the old record stands: no stale copy to outlive it
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def remove(self, name: str) -> None:
        path = self._path(name)
        for p in (f"{path}.tmp", path):  # (a copy left by a failed save must not bring it back)
            with contextlib.suppress(FileNotFoundError):
                os.remove(p)

    def load(self) -> dict[str, dict]:
        """Every record, by name; unreadable ones are dropped with a warning. A whole NAME.json.tmp is
        the record, the newer one (`save` was stopped after writing it: before removing the old one,
        or before renaming it into place), renamed into place; else NAME.json where it reads whole. A
        file that is gone by the time it is read (another process's `save` between its two steps) is
        left to that process."""
        out: dict[str, dict] = {}
        names = set(os.listdir(self.dir))
        bases = {fn[:-len(".tmp")] if fn.endswith(".tmp") else fn for fn in names}
        for base in sorted(b for b in bases if b.endswith(".json")):
            path = os.path.join(self.dir, base)
            tmp = f"{path}.tmp"
            new = _read(tmp) if f"{base}.tmp" in names else _GONE
            if isinstance(new, dict):
                with contextlib.suppress(OSError):  # (where this fails the copy is kept for later)
                    os.replace(tmp, path)
                out[base[:-len(".json")]] = new
                continue
            rec = _read(path, warn=True) if base in names else _GONE
            if isinstance(rec, dict):
                out[base[:-len(".json")]] = rec
            for p, r in ((path, rec), (tmp, new)):
                if r is None:  # unreadable (not gone meanwhile)
                    with contextlib.suppress(OSError):
                        os.remove(p)
        return out


#: what `_read` returns for a file that is not there
_GONE = object()


def _read(path: str, warn: bool = False) -> dict | object | None:
    """The record in the file at `path`; None where it cannot be read or is none, `_GONE` where
    there is no such file."""
    try:
        with open(path) as f:
            rec = json.load(f)
        if not isinstance(rec, dict) or not isinstance(rec.get("job_id"), int):
            raise ValueError("not a job record")
    except FileNotFoundError:
        return _GONE
    except (OSError, ValueError) as e:
        if warn:
            log.warning("ignoring the unreadable record %s: %s", path, e)
        return None
    return rec


def proc_entry(pid: int) -> dict:
    """A started process as a record names it: pid, process group and creation time."""
    try:
        created = psutil.Process(pid).create_time()
    except psutil.Error:
        created = None  # already gone (and reaped): nothing of it can be left behind
    try:
        pgid = os.getpgid(pid)
    except OSError:
        pgid = pid  # every job process starts a session of its own: its group is its pid
    return {"pid": pid, "pgid": pgid, "create_time": created}


def _same(p: psutil.Process, created: float | None) -> bool:
    try:
        return created is not None and abs(p.create_time() - created) < 0.01 and \
            p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _env(p: psutil.Process) -> dict[str, str]:
    try:
        return p.environ()
    except psutil.Error:
        return {}


def _has_job_env(p: psutil.Process, rec: dict) -> bool:
    env = _env(p)
    if rec.get("token"):
        return env.get(TOKEN) == rec["token"]
    return env.get("SLURM_JOB_ID") == str(rec["job_id"])


def leftovers(rec: dict) -> list[psutil.Process]:
    """The processes of a record that still run: each recorded process alive with the same pid and
    creation time, with its descendants and every process of its session and process group. When
    the recorded process itself is gone, members of its old session still count if they carry the
    record's token (its pid may have gone to an unrelated session leader since). And every process
    that carries the token, wherever it is."""
    found: dict[int, psutil.Process] = {}
    if rec.get("token"):
        for p in psutil.process_iter():
            if p.pid != os.getpid() and _env(p).get(TOKEN) == rec["token"] and _live(p):
                found[p.pid] = p
    for entry in rec.get("procs") or []:
        pid, pgid = int(entry["pid"]), int(entry.get("pgid") or entry["pid"])
        try:
            leader = psutil.Process(pid)
        except psutil.Error:
            leader = None
        alive = leader is not None and _same(leader, entry.get("create_time"))
        if alive:
            found[pid] = leader
            with contextlib.suppress(psutil.Error):
                for child in leader.children(recursive=True):
                    found[child.pid] = child
        for p in psutil.process_iter():
            if p.pid in found or p.pid == os.getpid():
                continue
            try:
                if os.getsid(p.pid) != pid and os.getpgid(p.pid) != pgid:
                    continue
                if p.status() == psutil.STATUS_ZOMBIE:
                    continue
            except (OSError, psutil.Error):
                continue
            if alive or _has_job_env(p, rec):
                found[p.pid] = p
    return list(found.values())


def _live(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _running(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            continue
    return out


def _signal(procs: list[psutil.Process], sig: int) -> None:
    for p in procs:
        with contextlib.suppress(psutil.Error, OSError):
            p.send_signal(sig)  # psutil checks it is still the same process first


async def stop(recs: list[dict], kill_wait: float) -> int:
    """Kill every process left behind by these records: SIGCONT and SIGTERM, SIGKILL to whatever
    is still there after `kill_wait` seconds. Returns how many processes there were."""
    procs = [p for rec in recs for p in leftovers(rec)]
    if not procs:
        return 0
    _signal(procs, signal.SIGCONT)
    _signal(procs, signal.SIGTERM)
    deadline = time.monotonic() + kill_wait
    while _running(procs) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    # what they forked meanwhile too
    rest = {p.pid: p for p in _running(procs)}
    for rec in recs:
        rest.update((p.pid, p) for p in leftovers(rec))
    _signal(list(rest.values()), signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while _running(list(rest.values())) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return len(procs)


def lock_spool(spool: str, wait: float = 10.0) -> int:
    """Hold an exclusive lock on the spool for the agent's lifetime (the kernel drops it when the
    agent dies, however it dies). Waits up to `wait` seconds for another agent to let go; raises
    RuntimeError when it does not. Returns the lock's file descriptor (not inherited by jobs)."""
    import fcntl
    os.makedirs(spool, exist_ok=True)
    fd = os.open(os.path.join(spool, "agent.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise RuntimeError(f"another agent uses the spool directory {spool}") from None
            time.sleep(0.1)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd
