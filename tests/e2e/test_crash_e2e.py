"""kill -9 of the controller while clients submit: no acknowledged submission is lost, none is made
twice, and the running job and its agent carry on by themselves (SQLite and PostgreSQL).

The clients are REST clients as sbatch is one: each submission carries an `Idempotency-Key` of its
own and is retried with the same key on a connection error until it is acknowledged. A retry whose
first attempt was committed before the kill (its answer lost) gets that job back, not a new one.
"""

from __future__ import annotations

import collections
import os
import pwd
import signal
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from slurmlet.common import cred
from tests.conftest import Cluster, pg_available, pg_schema_url, signed, wait_until

pytestmark = pytest.mark.e2e

CLIENTS = 8


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.pg)])
def db_url(request) -> str | None:
    if request.param == "sqlite":
        return None  # the controller's default: SQLite in its state directory
    if not pg_available():
        pytest.skip("PostgreSQL is not running at 127.0.0.1:5432")
    return pg_schema_url("slurmlet_e2e_crash")


class Submitter:
    """CLIENTS threads, each submitting held jobs (comment `crash-CLIENT-N`) in a loop, each job
    retried with its key until acknowledged; `stop()` lets each finish the job it is at."""

    def __init__(self, c: Cluster):
        self.c = c
        self.key = cred.read_key(str(c.key_file))
        self.uid = os.getuid()
        self.user = pwd.getpwuid(self.uid).pw_name
        self.body = {"script": "#!/bin/sh\ntrue\n", "name": "crash", "user": self.user, "uid": self.uid,
                     "gid": os.getgid(), "group": "root", "workdir": str(c.workdir), "hold": True}
        self.acked: list[tuple[int, str, str]] = []  #: (job id, comment, key) as acknowledged
        self.replayed = 0  #: answers that were replays of an earlier attempt's job
        self.errors = 0  #: attempts that failed with a connection error (or a 5xx)
        self.failures: list[BaseException] = []
        self.lock = threading.Lock()
        self.halt = threading.Event()
        self.deadline = time.monotonic() + 60
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(CLIENTS)]

    def post(self, h: httpx.Client, body: dict, key: str, user: str | None = None) -> httpx.Response:
        return h.post("/api/v1/jobs", json=body, headers={"Idempotency-Key": key},
                      auth=signed(self.key, self.uid, user or self.user))

    def _run(self, i: int) -> None:
        try:
            with httpx.Client(base_url=self.c.url, timeout=httpx.Timeout(10.0, connect=2.0)) as h:
                n = 0
                while not self.halt.is_set():
                    comment, key = f"crash-{i}-{n}", uuid.uuid4().hex
                    n += 1
                    while True:
                        assert time.monotonic() < self.deadline, "no acknowledgement for a minute"
                        try:
                            r = self.post(h, dict(self.body, comment=comment), key)
                        except httpx.TransportError:
                            r = None
                        if r is None or r.status_code >= 500:
                            with self.lock:
                                self.errors += 1
                            time.sleep(0.02)
                            continue
                        assert r.status_code == 201, r.text
                        with self.lock:
                            self.acked.append((r.json()["job_id"], comment, key))
                            self.replayed += r.headers.get("idempotent-replayed") == "true"
                        break
        except BaseException as e:
            self.failures.append(e)

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        self.halt.set()
        for t in self.threads:
            t.join(30)
        assert not any(t.is_alive() for t in self.threads)
        assert not self.failures, self.failures


def test_controller_killed_during_submissions(fresh_cluster, tmp_path: Path, db_url: str | None):
    c = fresh_cluster(nodes=1, db_url=db_url).start()
    pidfile, go = tmp_path / "long.pid", tmp_path / "go"
    long = c.sbatch("-o", str(tmp_path / "long.out"),
                    script=f"#!/bin/sh\necho $$ > {pidfile}\nwhile [ ! -f {go} ]; do sleep 0.05; done\n")
    c.wait_state(long, "RUNNING")
    job_pid = int(wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), 10, what="the job's pid"))
    agent = c.procs["agent-node1"]

    s = Submitter(c)
    s.start()
    try:
        wait_until(lambda: len(s.acked) >= 30, 15, 0.01, what="submissions before the kill")
        c.stop_proc("controller", signal.SIGKILL)
        before = len(s.acked)
        c.start_controller()  # the same state directory or database
        wait_until(lambda: len(s.acked) >= before + 30, 15, 0.01, what="submissions after the restart")
    finally:
        s.stop()
    print(f"{len(s.acked)} acknowledged, {s.errors} failed attempts retried, {s.replayed} answered as replays")
    assert s.errors > 0, "the kill hit no submission"

    jobs = {j["job_id"]: j for j in c.api("GET", "/api/v1/jobs?history=true")["jobs"]}
    made = collections.Counter(j["comment"] for j in jobs.values() if (j["comment"] or "").startswith("crash-"))
    assert [k for k, n in made.items() if n > 1] == [], "submissions made twice"
    ids = [jid for jid, _, _ in s.acked]
    assert len(set(ids)) == len(ids), "two acknowledgements of one job"
    for jid, comment, _ in s.acked:  # every acknowledged job is there, with its comment
        assert jid in jobs and jobs[jid]["comment"] == comment, (jid, comment, jobs.get(jid))
    assert set(made) == {comment for _, comment, _ in s.acked}  # and nothing else was made

    # a retry of a submission acknowledged before the kill (as if its answer had been lost): its job
    jid, comment, key = s.acked[0]
    with httpx.Client(base_url=c.url, timeout=10) as h:
        r = s.post(h, dict(s.body, comment=comment), key)
    assert (r.status_code, r.json(), r.headers.get("idempotent-replayed")) == (201, {"job_id": jid}, "true")
    assert len(c.api("GET", "/api/v1/jobs?history=true")["jobs"]) == len(jobs)

    # the job that ran through it all still runs, the same process, and its agent reached the new
    # controller by itself (the same agent process): it reports the job's end
    job = c.job(long)
    assert (job["state"], job["restarts"]) == ("RUNNING", 0), job
    assert pidfile.read_text().strip() == str(job_pid) and Path(f"/proc/{job_pid}").exists()
    assert c.procs["agent-node1"] is agent and agent.poll() is None
    go.touch()
    c.wait_state(long, "COMPLETED", timeout=15)
    wait_until(lambda: c.idle_nodes() == {"node1"}, 10, what="node1 idle")
    assert not c.crashed(), c.crashed()


def test_idempotency_key(fresh_cluster):
    """The same key and request again: the same job; the key with another request: 400; another
    user's same key: a job of its own; a malformed key: 400; --test-only: nothing made, nothing kept."""
    c = fresh_cluster(nodes=1).start()
    s = Submitter(c)
    body = dict(s.body, comment="k")
    with httpx.Client(base_url=c.url, timeout=10) as h:
        first = s.post(h, body, "key-1")
        again = s.post(h, body, "key-1")
        assert first.status_code == again.status_code == 201
        assert again.json() == first.json() and again.headers.get("idempotent-replayed") == "true"
        assert first.headers.get("idempotent-replayed") is None
        # the key with another request: refused, not answered with the first request's job
        other = s.post(h, dict(body, comment="other"), "key-1")
        assert other.status_code == 400, other.text
        assert other.json()["detail"]["error"] == "Idempotency-Key: already used for a different request"
        bob = s.post(h, dict(body, user="bob", uid=4242), "key-1", user="root")
        assert bob.status_code == 201 and bob.json() != first.json(), bob.text
        assert s.post(h, body, "x" * 256).status_code == 400
        assert s.post(h, body, "with space").status_code == 400
        probe = s.post(h, dict(body, test_only=True), "key-2")
        assert probe.status_code == 200, probe.text
        made = s.post(h, body, "key-2")
        assert made.status_code == 201 and made.headers.get("idempotent-replayed") is None
    jobs = c.api("GET", "/api/v1/jobs")["jobs"]
    assert sorted(j["job_id"] for j in jobs) == sorted({first.json()["job_id"], bob.json()["job_id"],
                                                        made.json()["job_id"]})
    assert c.job(first.json()["job_id"])["comment"] == "k"
