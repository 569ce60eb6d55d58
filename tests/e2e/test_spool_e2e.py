"""The controller's request spool (controller/spool.py): real users of this host submit and act
without any credential, as who the kernel says they are, and nothing else can pass for them."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import BIN, Cluster, free_port, serve

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("setpriv"),
                                 reason="real users need root, useradd and setpriv")]

USER = "slurmlet-u1"


@pytest.fixture(scope="module")
def user():
    made = False
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", USER], check=True)
        made = True
    yield pwd.getpwnam(USER)
    if made:
        subprocess.run(["userdel", USER], check=False)


@pytest.fixture(scope="module")
def local():
    base = Path(tempfile.mkdtemp(prefix="slurmlet-spool-"))
    base.chmod(0o755)  # (pytest's tmp_path is 0700: the user could not reach the spool)
    c = Cluster(base / "cluster", nodes=1, cpus=4, spool=True)
    yield from serve(c)
    shutil.rmtree(base, ignore_errors=True)


def as_user(c: Cluster, u: pwd.struct_passwd, *argv: str, **env: str) -> subprocess.CompletedProcess:
    """A command run as `u`, who can read no key and has no credential service: only the spool."""
    e = {"PATH": c.env["PATH"], "HOME": "/", "SLURMLET_CONTROLLER": c.url, "SLURMLET_SPOOL": str(c.spool),
         "SLURMLET_KEY_FILE": "/nonexistent", "SLURMLET_CRED_SOCKET": "/nonexistent", **env}
    return subprocess.run(["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}", "--clear-groups", *argv],
                          capture_output=True, text=True, env=e, cwd="/tmp", timeout=60)


def test_a_user_submits_and_cancels_through_the_spool_as_who_the_kernel_says(local: Cluster, user):
    r = as_user(local, user, "sbatch", "--parsable", "-H", "-o", "/dev/null", "--wrap", "true")
    assert r.returncode == 0, r.stderr
    mine = int(r.stdout)
    job = local.job(mine)
    assert (job["user"], job["uid"]) == (USER, user.pw_uid)
    root_job = local.sbatch("-H", "-o", "/dev/null", "--wrap", "true")  # root's, through the spool too
    assert local.job(root_job)["user"] == "root"
    r = as_user(local, user, "scancel", str(root_job))
    assert r.returncode != 0 and "Access/permission denied" in r.stderr, (r.returncode, r.stderr)
    assert local.job(root_job)["state"] == "PENDING"
    r = as_user(local, user, "scancel", str(mine))
    assert r.returncode == 0, r.stderr
    assert local.job(mine)["state"] == "CANCELLED"


def test_srun_through_the_spool_runs_its_step_without_loading_json(local: Cluster):
    """The spool's answers are marshal's and the agents write the stream headers as words for an
    srun that asks so (common/streamhead.py): srun never imports json (milliseconds of its start,
    on its way to its tasks)."""
    r = local.run(["srun", "-n2", "-l", "bash", "-c", "echo hi; exit $SLURM_PROCID"],
                  env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert r.returncode == 1 and sorted(r.stdout.splitlines()) == ["0: hi", "1: hi"]
    assert "srun: error: node1: task 1: Exited with exit code 1" in r.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert "slurmlet.common.streamhead" in imported and "json" not in imported


def test_a_user_gets_a_bell_of_their_own_which_nobody_else_may_write(local: Cluster, user):
    """After a user's first request (through the shared bell) the controller makes the user's own bell:
    theirs, 0600; their next commands ring it (the spool serves them as before)."""
    r = as_user(local, user, "squeue")
    assert r.returncode == 0, r.stderr
    bell = local.spool / f"bell.{user.pw_uid}"
    st = bell.lstat()
    assert st.st_uid == user.pw_uid and oct(st.st_mode & 0o777) == "0o600"
    r = as_user(local, user, "sbatch", "--parsable", "-H", "-o", "/dev/null", "--wrap", "true")
    assert r.returncode == 0, r.stderr
    assert local.job(int(r.stdout))["user"] == USER


def test_a_spool_left_from_another_cluster_is_not_used_for_this_one(local: Cluster, user):
    """$SLURMLET_SPOOL of one cluster with $SLURMLET_CONTROLLER of another: the command goes to the
    controller it names (here none answers), never to the spool's."""
    before = len(local.api("GET", "/api/v1/jobs")["jobs"])
    r = as_user(local, user, "sbatch", "-H", "--wrap", "true", SLURMLET_CONTROLLER=f"http://127.0.0.1:{free_port()}")
    assert r.returncode != 0 and "Unable to contact slurm controller" in r.stderr, (r.returncode, r.stderr)
    assert len(local.api("GET", "/api/v1/jobs")["jobs"]) == before


def test_commands_on_the_controllers_host_load_no_socket_json_re_or_hash_library(local: Cluster):
    """What the spool, the CLI's JSON writer and the marshal answers are for: a submission and the
    commands that read jobs import none of these (each costs every command milliseconds; see
    controller/spool.py and common/wire.py), and print what they print through TCP."""
    job = local.sbatch("-H", "-o", "/dev/null", "--wrap", "true")
    runs = [["sbatch", "-H", "-o", "/dev/null", "--wrap", "true"], ["squeue"], ["scontrol", "show", "job", str(job)],
            ["sacct", "-j", str(job)]]
    for argv in runs:
        r = local.run([sys.executable, "-X", "importtime", str(BIN / argv[0]), *argv[1:]])
        assert r.returncode == 0, (argv, r.stderr[-500:])
        loaded = {line.rsplit("|", 1)[1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
        assert f"slurmlet.cli.{argv[0]}" in loaded
        assert not loaded & {"socket", "json", "re", "enum", "hashlib", "hmac", "_hashlib", "importlib"}, \
            (argv, sorted(loaded))
        if argv[0] == "sbatch":
            assert r.stdout.startswith("Submitted batch job "), r.stdout
            continue
        assert str(job) in r.stdout, (argv, r.stdout)
        # the same lines as another host's, whose answers come by TCP as JSON
        env = {k: v for k, v in local.env.items() if k != "SLURMLET_SPOOL"}
        again = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=env, timeout=60)
        assert again.returncode == 0 and again.stdout == r.stdout, (argv, again.stderr, again.stdout, r.stdout)


def test_marshal_answers_hold_the_values_json_answers_hold(local: Cluster, monkeypatch):
    """Each answer the CLI may take as marshal (routes that send it straight, and JSON converted by
    the gate) equals the JSON answer, type for type (a tuple or an int key would differ); a
    client over TCP gets JSON whatever it asks for."""
    import marshal

    from slurmlet.cli import http
    done = local.sbatch("-o", "/dev/null", "--wrap", "srun true; srun -n1 true")
    local.wait_state(done, "COMPLETED")
    held = local.sbatch("-H", "-o", "/dev/null", "--array", "1-3", "--wrap", "true")
    paths = ["/api/v1/jobs", "/api/v1/jobs?history=true", f"/api/v1/jobs/{done}", f"/api/v1/jobs/{held}",
             "/api/v1/jobs?fields=job_id,state,reason,nodes,array_job_id&nulls=false", f"/api/v1/jobs/{done}/steps",
             "/api/v1/nodes", "/api/v1/partitions", "/api/v1/jobs/999999", "/api/v1/ping"]
    for k in ("SLURMLET_CONTROLLER", "SLURMLET_SPOOL"):
        monkeypatch.setenv(k, str(local.env[k]))
    for path in paths:
        j = httpx.get(local.url + path, headers={"Accept": "application/x-marshal"}, timeout=30)
        assert j.headers["content-type"] == "application/json", path
        status, header, data = http.exchange("GET", path)  # (through the spool, as the CLI asks)
        assert status == j.status_code and "\r\ncontent-type: application/x-marshal\r\n" in header.lower(), path
        assert marshal.loads(data) == j.json(), path



#: a submission as the CLI sends it, through the spool: its status and its answer (the job's id off
#: Location and the answer for a 201, else the error the CLI shows)
PROBE = """
import json, sys
from slurmlet.cli import http
body, key = json.loads(sys.argv[1]), sys.argv[2]
status, header, data = http.exchange("POST", "/api/v1/jobs", body, headers={"Idempotency-Key": key})
try:
    print(status, http._location_id(status, header), json.dumps(http.decoded(status, header, data)))
except http.ControllerError as e:
    print(status, json.dumps(e.error))
"""


def test_submissions_through_the_spool_are_refused_and_accepted_as_over_tcp(local: Cluster, user):
    """A submission through the spool is checked and answered as one over TCP is (the same gate and
    route): the caller is who the kernel says, a body naming someone else or asking what only an
    operator may is refused, one that does not validate gets the 422 naming the field, one
    submission per key."""
    import json
    me = {"user": USER, "uid": user.pw_uid, "gid": user.pw_gid, "group": USER, "workdir": "/tmp", "hold": True,
          "script": "#!/bin/sh\ntrue\n", "stdout": "/dev/null"}

    def probe(body: object, key: str) -> tuple[int, str]:
        r = as_user(local, user, sys.executable, "-c", PROBE, json.dumps(body), key)
        assert r.returncode == 0, r.stderr
        status, _, rest = r.stdout.strip().partition(" ")
        return int(status), rest

    status, rest = probe(me, "k1")
    assert status == 201, rest
    job_id = int(rest.split()[0])
    assert rest == f'{job_id} {{"job_id": {job_id}}}'  # the id off Location; the JSON answer's value, as marshal
    job = local.job(job_id)
    assert (job["user"], job["uid"], job["state"], job["reason"]) == (USER, user.pw_uid, "PENDING", "JobHeldUser")
    assert probe(me, "k1") == (201, f'{job_id} {{"job_id": {job_id}}}')  # the same key: the same job
    refused = [({**me, "user": "root", "uid": 0}, 403, "Access/permission denied"),
               ({**me, "nice": -5}, 400, "Invalid --nice value"),
               ({**me, "partition": "nope"}, 400, "Invalid partition name specified"),
               ({**me, "nodes_min": 0}, 422, "nodes_min"), ({**me, "bogus": 1}, 422, "bogus"),
               ({**me, "key": "k1"}, 422, "key")]
    for n, (body, code, says) in enumerate(refused):
        got = probe(body, f"r{n}")
        assert got[0] == code and says in got[1], (body, got)
        # over TCP, with root's credential for the same body (root may name the user, and ask a nice):
        # the same answer
        if code != 403 and "nice" not in body:
            from slurmlet.cli import http
            with pytest.raises(http.ControllerError) as e:
                local.api("POST", "/api/v1/jobs", body)
            assert e.value.status == code and says in e.value.error, (body, e.value.status, e.value.error)
    mine = [j["job_id"] for j in local.api("GET", "/api/v1/jobs")["jobs"] if j["user"] == USER and j["job_id"] >= job_id]
    assert mine == [job_id]
