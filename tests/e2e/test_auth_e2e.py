"""Authentication and permissions on a real cluster: the cluster key, credentials naming users,
REST tokens, and who may change what."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from slurmlet.common import cred
from tests.conftest import Cluster, serve, signed, wait_until

pytestmark = pytest.mark.e2e

JOB = {"script": "#!/bin/sh\nsleep 60\n", "name": "t", "partition": "debug", "environment": {}, "workdir": "/tmp",
       "argv": []}


@pytest.fixture(scope="module")
def sec(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("auth"), nodes=1, cpus=4))


def key(c: Cluster) -> bytes:
    return cred.read_key(str(c.key_file))


def as_user(c: Cluster, uid: int, user: str) -> httpx.Auth:
    """Each request signed for (uid, user), as the CLI signs."""
    return signed(key(c), uid, user)


def raw_cred(c: Cluster, method: str, path: str, body: object, uid: int, user: str, *, k: bytes | None = None,
             now: float | None = None) -> dict:
    """A credential header for exactly this request (as `call` sends it)."""
    req = httpx.Request(method, c.url + path, json=body)
    binding = cred.bind(method, req.url.raw_path.decode(), req.content)
    return {cred.HEADER: cred.sign(k or key(c), uid, user, binding, now=now)}


def call(c: Cluster, method: str, path: str, body: object = None, who: dict | httpx.Auth | None = None) -> httpx.Response:
    """`who`: headers to send as they are, or an auth that signs the request."""
    if isinstance(who, httpx.Auth):
        return httpx.request(method, c.url + path, json=body, auth=who, timeout=30)
    return httpx.request(method, c.url + path, json=body, headers=who or {}, timeout=30)


def job_body(uid: int, user: str, **kw) -> dict:
    return dict(JOB, user=user, uid=uid, gid=uid, group=user, **kw)


def submit(c: Cluster, uid: int, user: str, headers: dict | httpx.Auth | None = None, **kw) -> httpx.Response:
    return call(c, "POST", "/api/v1/jobs", job_body(uid, user, **kw),
                headers if headers is not None else as_user(c, uid, user))


def jobs(c: Cluster) -> int:
    return len(c.api("GET", "/api/v1/jobs?history=1")["jobs"])


def test_changes_need_a_valid_credential_reads_do_not(sec: Cluster):
    c = sec
    before = jobs(c)
    r = submit(c, 0, "root", headers={})
    assert r.status_code == 401 and r.json()["detail"]["error"] == "Authentication failure"
    root = job_body(0, "root")
    forged = raw_cred(c, "POST", "/api/v1/jobs", root, 0, "root", k=b"not the cluster key")
    assert submit(c, 0, "root", headers=forged).status_code == 401
    stale = raw_cred(c, "POST", "/api/v1/jobs", root, 0, "root", now=time.time() - 2 * cred.CRED_TTL)
    assert submit(c, 0, "root", headers=stale).status_code == 401
    alice = raw_cred(c, "POST", "/api/v1/jobs", root, 1000, "alice")
    tampered = {cred.HEADER: alice[cred.HEADER].replace(":1000:alice:", ":0:root:")}
    assert submit(c, 0, "root", headers=tampered).status_code == 401
    # agents too must hold the key
    assert call(c, "POST", "/api/v1/nodes/node1/sync", {"running": [], "finished": []}).status_code == 401
    # a signed sync (and submission) that does not validate: the 422 naming the field; unsigned, the 401
    for path, bad, field in (("/api/v1/nodes/node1/sync", {"running": "x"}, "running"),
                             ("/api/v1/nodes/node1/sync", {"bogus": 1}, "bogus"),
                             ("/api/v1/jobs", {**root, "nodes_min": 0}, "nodes_min")):
        r = call(c, "POST", path, bad, raw_cred(c, "POST", path, bad, 0, "root"))
        assert r.status_code == 422 and field in r.text, (path, bad, r.status_code, r.text)
        assert call(c, "POST", path, bad, {}).status_code == 401
    assert jobs(c) == before  # nothing refused was stored
    assert call(c, "GET", "/api/v1/jobs").status_code == 200 and call(c, "GET", "/api/v1/nodes").status_code == 200
    # the CLI signs with the key it finds (SLURMLET_KEY_FILE); without one, a change is refused
    r = c.run(["sbatch", "--wrap", "true"], env={"SLURMLET_KEY_FILE": "/nonexistent"})
    assert r.returncode == 1 and r.stderr.strip() == "sbatch: error: Batch job submission failed: Authentication failure"
    assert c.run(["squeue"], env={"SLURMLET_KEY_FILE": "/nonexistent"}).returncode == 0


def test_a_credential_is_good_for_one_request_once(sec: Cluster):
    """Bound to method, target and body, used once, dated at most CRED_SKEW ahead: one read off the
    wire can be neither replayed nor moved to another request."""
    c = sec
    before = jobs(c)
    held = job_body(0, "root", hold=True)
    once = raw_cred(c, "POST", "/api/v1/jobs", held, 0, "root")
    r = submit(c, 0, "root", headers=once, hold=True)
    assert r.status_code == 201, r.text
    jid = r.json()["job_id"]
    assert submit(c, 0, "root", headers=once, hold=True).status_code == 401  # replayed
    # moved: to another body, another target, another method
    fresh = raw_cred(c, "POST", "/api/v1/jobs", held, 0, "root")
    assert submit(c, 0, "root", headers=fresh, hold=True, name="other").status_code == 401
    fresh = raw_cred(c, "POST", f"/api/v1/jobs/{jid}/release", None, 0, "root")
    assert call(c, "POST", f"/api/v1/jobs/{jid}/requeue", None, fresh).status_code == 401
    assert call(c, "DELETE", f"/api/v1/jobs/{jid}/release", None, fresh).status_code in (401, 405)
    ahead = raw_cred(c, "POST", "/api/v1/jobs", held, 0, "root", now=time.time() + 60)
    assert submit(c, 0, "root", headers=ahead, hold=True).status_code == 401
    assert jobs(c) == before + 1  # only the first was stored
    assert c.job(jid)["held"] is not None
    # who cancelled comes from the credential, not from what the request says
    r = submit(c, 1000, "alice", hold=True)
    assert r.status_code == 201
    mine = r.json()["job_id"]
    res = call(c, "POST", "/api/v1/jobs/cancel", {"ids": [mine], "uid": 0}, as_user(c, 1000, "alice")).json()
    assert res["results"] == [{"job_id": mine, "ok": True}]
    assert c.job(mine)["cancelled_by"] == 1000
    c.run(["scancel", str(jid)])


def test_users_act_on_their_own_jobs_operators_on_all(sec: Cluster):
    c = sec
    root_job = c.sbatch("--wrap", "sleep 60")
    r = submit(c, 1000, "alice", hold=True, ntasks=4)  # stays pending: root's job holds a CPU
    assert r.status_code == 201
    alice_job = r.json()["job_id"]
    alice = as_user(c, 1000, "alice")
    # alice may not submit as someone else, nor touch root's job
    assert submit(c, 0, "root", headers=alice).status_code == 403
    res = call(c, "POST", "/api/v1/jobs/cancel", {"ids": [root_job]}, alice).json()["results"]
    assert res == [{"job_id": root_job, "ok": False, "error": "Access/permission denied"}]
    for path in (f"/api/v1/jobs/{root_job}/hold", f"/api/v1/jobs/{root_job}/requeue",
                 f"/api/v1/jobs/{root_job}/release"):
        assert call(c, "POST", path, None, alice).status_code == 403
    assert call(c, "PATCH", f"/api/v1/jobs/{root_job}", {"time_limit": 5}, alice).status_code == 403
    assert call(c, "POST", f"/api/v1/jobs/{root_job}/complete", {"exit_code": 0}, alice).status_code == 403
    assert call(c, "POST", f"/api/v1/jobs/{2**40}/complete", {"exit_code": 0}, alice).status_code == 422
    assert c.job(root_job)["state"] in ("PENDING", "RUNNING") and c.job(root_job)["held"] is None
    # her own: she may release it, and a hold by a user is a user hold; an administrator's she may not lift
    assert call(c, "POST", f"/api/v1/jobs/{alice_job}/release", None, alice).status_code == 200
    assert call(c, "POST", f"/api/v1/jobs/{alice_job}/hold?who=admin", None, alice).status_code == 200
    assert c.job(alice_job)["held"] == "user"
    assert c.run(["scontrol", "hold", str(alice_job)]).returncode == 0  # root: an administrator's hold
    assert c.job(alice_job)["held"] == "admin"
    assert call(c, "POST", f"/api/v1/jobs/{alice_job}/release", None, alice).status_code == 403
    assert call(c, "POST", "/api/v1/jobs/release", {"ids": [alice_job]}, alice).status_code == 403
    # only operators set what orders the queue, drain nodes, or reset statistics
    assert call(c, "PATCH", f"/api/v1/jobs/{alice_job}", {"site_factor": 100}, alice).status_code == 403
    assert call(c, "POST", "/api/v1/nodes/node1/update", {"state": "DRAIN", "reason": "x"}, alice).status_code == 403
    assert call(c, "POST", "/api/v1/diag/reset", None, alice).status_code == 403
    assert call(c, "POST", "/api/v1/accounting/qos/add", {"names": ["q"]}, alice).status_code == 403
    assert call(c, "POST", "/api/v1/nodes/node1/sync", {"running": [], "finished": []}, alice).status_code == 403
    # an Operator (sacctmgr AdminLevel) may act on anyone's job
    c.run(["sacctmgr", "-i", "add", "account", "ops"])
    assert c.run(["sacctmgr", "-i", "add", "user", "bob", "Account=ops", "AdminLevel=Operator"]).returncode == 0
    bob = as_user(c, 1001, "bob")
    res = call(c, "POST", "/api/v1/jobs/cancel", {"ids": [alice_job]}, bob).json()["results"]
    assert res == [{"job_id": alice_job, "ok": True}]
    assert call(c, "POST", "/api/v1/accounting/qos/add", {"names": ["q"]}, bob).status_code == 403  # admins only
    c.run(["scancel", str(root_job)])


def test_rest_clients_use_tokens(sec: Cluster):
    c = sec
    r = c.run(["scontrol", "token", "lifespan=600"])
    assert r.returncode == 0 and r.stdout.startswith("SLURM_JWT=")
    token = r.stdout.strip().split("=", 1)[1]
    hdr = {"X-SLURM-USER-TOKEN": token, "X-SLURM-USER-NAME": "root"}
    got = submit(c, 0, "root", headers=hdr)
    assert got.status_code == 201
    # the token names its user: another name, a changed token or an expired one are refused
    assert submit(c, 0, "root", headers=dict(hdr, **{"X-SLURM-USER-NAME": "alice"})).status_code == 401
    assert submit(c, 0, "root", headers=dict(hdr, **{"X-SLURM-USER-TOKEN": token[:-2] + "xx"})).status_code == 401
    from slurmlet.controller.auth import issue_token
    old = issue_token(key(c), "root", 10, time.time() - 60)
    assert submit(c, 0, "root", headers={"X-SLURM-USER-TOKEN": old}).status_code == 401
    # a user gets a token for themself; one for someone else takes an administrator (a name with no
    # account on this host: its token is good for that name, whatever uid the request claims)
    carol = as_user(c, 1200, "slurmlet-carol")
    assert call(c, "POST", "/api/v1/token?username=root", None, carol).status_code == 403
    mine = call(c, "POST", "/api/v1/token", None, carol).json()
    assert mine["user"] == "slurmlet-carol"
    assert submit(c, 1200, "root", headers={"X-SLURM-USER-TOKEN": mine["token"]}).status_code == 403
    r = submit(c, 1200, "slurmlet-carol", headers={"X-SLURM-USER-TOKEN": mine["token"]})
    assert r.status_code == 201
    c.run(["scancel", str(got.json()["job_id"]), str(r.json()["job_id"])])
    # (carol has no account on the node: her job fails at launch if it got there first; it never runs as root)
    wait_until(lambda: c.job(r.json()["job_id"])["state"] in ("CANCELLED", "FAILED"), what="the token's job ended")
    # neither the tokens (good, forged or expired) nor the cluster key reach the daemons' logs
    secret = [t.rsplit(".", 1)[1] for t in (token, token[:-2] + "xx", old, mine["token"])]
    secret += [key(c).hex(), c.key_file.read_text().strip()]
    logs = list(c.root.glob("*.log"))
    assert logs
    for log in logs:
        text = log.read_text(errors="replace")
        assert not [s for s in secret if s in text], log.name


@pytest.mark.skipif(os.geteuid() != 0, reason="starting jobs as their users takes an agent running as root")
def test_an_agent_running_as_root_starts_each_job_as_its_user(sec: Cluster, tmp_path):
    import pwd
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' on this host")
    t0 = time.time() - 1
    base = Path(tempfile.mkdtemp(prefix="slurmlet-auth-"))  # (pytest's tmp_path is 0700: nobody can't pass)
    base.chmod(0o755)
    out = base / "out"
    out.mkdir()
    out.chmod(0o777)
    secret = base / "secret"  # root's alone
    secret.write_text("TOPSECRET\n")
    secret.chmod(0o600)
    precious = base / "precious"  # root's, others may read it
    precious.write_text("keep\n")
    as_nobody = dict(JOB, user="nobody", uid=nobody.pw_uid, gid=nobody.pw_gid, group="nogroup", workdir=str(out))

    def run(**kw) -> dict:
        r = call(sec, "POST", "/api/v1/jobs", dict(as_nobody, **kw), as_user(sec, 0, "root"))  # root may submit for a user
        assert r.status_code == 201, r.text
        jid = r.json()["job_id"]
        return wait_until(lambda: (j := sec.job(jid))["state"] not in ("PENDING", "RUNNING") and j,
                          what=f"nobody's job {jid} to end")

    try:
        # root's file is not its stdin: the job fails at launch, as in Slurm 22.05 (nothing ran, no output)
        job = run(script="#!/bin/sh\nid -u; id -g; cat\n", stdout=str(out / "job.out"), stdin=str(secret))
        assert (job["state"], job["reason"], job["exit_signal"]) == ("FAILED", "JobLaunchFailure", 53)
        assert not (out / "job.out").exists()
        job = run(script="#!/bin/sh\nid -u; id -g; cat\n", stdout=str(out / "job.out"))
        text = (out / "job.out").read_text()
        assert job["state"] == "COMPLETED", text
        # the batch script ran as nobody, the output file is nobody's
        assert text.split() == [str(nobody.pw_uid), str(nobody.pw_gid)]
        assert (out / "job.out").stat().st_uid == nobody.pw_uid
        # an output path its user may not write is not written with the agent's rights: the job fails
        job = run(script="#!/bin/sh\necho overwritten\n", stdout=str(precious))
        assert job["state"] == "FAILED"
        assert (precious.read_text(), precious.stat().st_uid) == ("keep\n", 0)
        # nothing of the job's is left in /tmp (its script went with it)
        assert not [d for d in Path(tempfile.gettempdir()).glob(f"slurmlet-job{job['job_id']}-*")
                    if d.stat().st_uid == nobody.pw_uid and d.stat().st_mtime >= t0]
    finally:
        shutil.rmtree(base)


def test_every_mutating_endpoint_refuses_a_caller_without_credentials(sec: Cluster):
    """Each POST/PUT/PATCH/DELETE route of the OpenAPI spec, called without a credential, is 401
    and changes nothing (job list, nodes and the accounting database as they were)."""
    c = sec
    spec = httpx.get(f"{c.url}/openapi.json", timeout=10).json()
    params = {"job_id": "1", "step_id": "0", "name": "node1", "scope": "team", "key": "k", "entity": "qos",
              "action": "add", "sha": "0" * 64}

    def snapshot() -> tuple:  # (earlier tests' jobs may still be ending: their ids, not their states)
        return ([j["job_id"] for j in c.api("GET", "/api/v1/jobs?history=1")["jobs"]],
                [n["name"] for n in c.api("GET", "/api/v1/nodes")["nodes"]],
                c.api("GET", "/api/v1/accounting/qos"), c.api("GET", "/api/v1/secrets", signed=True))

    before = snapshot()
    routes = [(m.upper(), p) for p, ops in spec["paths"].items() for m in ops if m in ("post", "put", "patch", "delete")]
    assert len(routes) >= 19, routes
    for method, path in routes:
        url = path.format(**{k: v for k, v in params.items() if "{" + k + "}" in path})
        r = httpx.request(method, c.url + url, json={}, timeout=10)
        assert r.status_code == 401, (method, path, r.status_code, r.text)
    assert snapshot() == before


# what a real 22.05 prints when a user acts on root's job (tests/data/slurm-2205-permissions.md)
CAPTURED = (Path(__file__).resolve().parents[1] / "data" / "slurm-2205-permissions.md").read_text()


def captured(cmd: str) -> tuple[str, int]:
    """The stderr and exit code recorded for `nobody$ CMD` (job 2 there)."""
    block = CAPTURED.split(f"nobody$ {cmd}\n", 1)[1]
    err, rest = block.split("```\nexit code: ", 1)
    return err, int(rest.split("\n", 1)[0])


@pytest.fixture
def alice_signer(sec: Cluster):
    """A credential service that signs for alice (uid 1000): what `slurmlet credd` gives alice's
    processes, so the CLI can run as her here without a second Unix account."""
    import socketserver
    import threading
    k = key(sec)
    d = Path(tempfile.mkdtemp(prefix="slurmlet-alice-"))

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            from slurmlet.nodeagent.credd import read_binding
            self.request.sendall(cred.sign(k, 1000, "alice", read_binding(self.request)).encode() + b"\n")

    srv = socketserver.ThreadingUnixStreamServer(str(d / "cred.sock"), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield {"SLURMLET_KEY_FILE": "/nonexistent", "SLURMLET_CRED_SOCKET": str(d / "cred.sock")}
    srv.shutdown()
    srv.server_close()
    shutil.rmtree(d)


@pytest.mark.parametrize("cmd", ["scancel 2", "scancel -v 2", "scontrol hold 2", "scontrol release 2",
                                 "scontrol requeue 2", "scontrol update jobid=2 timelimit=5",
                                 "scontrol update nodename=node1 state=drain reason=x", "scontrol reconfigure"])
def test_commands_on_another_users_job_say_what_slurm_says(sec: Cluster, alice_signer: dict, cmd: str):
    c = sec
    jid = c.sbatch("--wrap", "sleep 60")  # root's
    try:
        argv = cmd.replace(" 2", f" {jid}").replace("=2 ", f"={jid} ").split()
        r = c.run(argv, env=alice_signer)
        err, code = captured(cmd)
        assert (r.stderr, r.returncode, r.stdout) == (err.replace(" 2", f" {jid}").replace(" 2:", f" {jid}:"), code, "")
        job = c.job(jid)  # untouched
        assert job["state"] in ("PENDING", "RUNNING") and (job["held"], job["time_limit"]) == (None, None)
        node = {n["name"]: n for n in c.api("GET", "/api/v1/nodes")["nodes"]}["node1"]
        assert "DRAIN" not in node["state"].upper()
    finally:
        c.run(["scancel", str(jid)])


def test_sacctmgr_add_by_a_user_shows_the_change_and_the_refusal(sec: Cluster, alice_signer: dict):
    block = CAPTURED.split("nobody$ sacctmgr -i add account xx\n", 1)[1].split("```", 1)[0]
    refusal, listing = block.split("\n", 1)
    r = sec.run(["sacctmgr", "-i", "add", "account", "xx"], env=alice_signer)
    cluster = sec.api("GET", "/api/v1/config")["cluster_name"]
    assert (r.returncode, r.stderr) == (1, refusal + "\n")
    assert r.stdout == listing.replace("C = anchor    ", f"C = {cluster:<10}")
    assert "xx" not in [a["account"] for a in sec.api("GET", "/api/v1/accounting/accounts")["accounts"]]
    r = sec.run(["sacctmgr", "-i", "delete", "account", "root"], env=alice_signer)
    assert (r.returncode, r.stderr, r.stdout) == (1, " Error with request: Access/permission denied\n", "")
