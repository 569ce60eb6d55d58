"""Several real users on a node whose agent runs as root: what a user controls (identity, working
directory, environment, code archives, dependency lists, umask) runs with that user's rights only.

The users are made by the test (useradd) and removed after it; their jobs are submitted through the
REST API with credentials signed for them, as their sbatch would."""

from __future__ import annotations

import base64
import grp
import io
import os
import pwd
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path

import httpx
import pytest

from slurmlet.common import cred
from tests.conftest import Cluster, made_users, serve, signed, traversable_dir, wait_until

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd"),
                                 reason="real users and an agent running as root need root and useradd")]

USERS = ("slurmlet-u1", "slurmlet-u2")


@pytest.fixture(scope="module")
def users():
    yield from made_users(USERS)


@pytest.fixture(scope="module")
def base():
    yield from traversable_dir("slurmlet-mu-")


@pytest.fixture(scope="module")
def mu(base: Path, users):
    trace = base / "trace"
    trace.touch()
    trace.chmod(0o644)
    for kind in ("prolog", "epilog"):  # bash reads BASH_ENV; `id` is looked up on PATH
        p = base / f"{kind}.sh"
        p.write_text(f'#!/bin/bash\necho "{kind} $SLURM_JOB_ID $SLURM_JOB_USER uid=$(id -u) PATH=$PATH" >> {trace}\n')
        p.chmod(0o755)
    c = Cluster(base / "cluster", nodes=1, cpus=4,  # where the users can reach their code in the spool
                extra_conf=f"Prolog={base / 'prolog.sh'}\nEpilog={base / 'epilog.sh'}\n")
    yield from serve(c)


def home(base: Path, user: pwd.struct_passwd, mode: int = 0o755) -> Path:
    d = base / user.pw_name
    d.mkdir(exist_ok=True)
    os.chown(d, user.pw_uid, user.pw_gid)
    d.chmod(mode)
    return d


def submit(c: Cluster, user: pwd.struct_passwd | None, script: str, *, uid: int | None = None, name: str = "",
           gid: int | None = None, signer: tuple[int, str] | None = None, **kw) -> httpx.Response:
    """A job of `user` (else of `uid`/`name`), signed by them (else by `signer`: root names anyone)."""
    uid = user.pw_uid if user else uid
    name = user.pw_name if user else name
    body = {"script": script, "name": "t", "partition": "debug", "environment": {}, "workdir": "/tmp", "argv": [],
            "user": name, "uid": uid, "gid": user.pw_gid if gid is None else gid, "group": name, **kw}
    key = cred.read_key(str(c.key_file))
    return httpx.post(c.url + "/api/v1/jobs", json=body, auth=signed(key, *(signer or (uid, name))), timeout=30)


def run(c: Cluster, user: pwd.struct_passwd | None, script: str, **kw) -> dict:
    r = submit(c, user, script, **kw)
    assert r.status_code == 201, r.text
    jid = r.json()["job_id"]
    return wait_until(lambda: (j := c.job(jid))["state"] not in ("PENDING", "RUNNING", "CONFIGURING") and j,
                      timeout=60, what=f"job {jid} to end")


def test_a_group_that_is_not_the_users_is_refused(mu: Cluster, users, base: Path):
    u1 = users[0]
    out = home(base, u1)
    shadow = grp.getgrnam("shadow").gr_gid if "shadow" in {g.gr_name for g in grp.getgrall()} else 42
    # at submission: the user's own credential cannot name a group that is not the user's
    r = submit(mu, u1, "#!/bin/sh\ntrue\n", gid=shadow)
    assert (r.status_code, r.json()["detail"]["error"]) == (403, "Access/permission denied")
    assert submit(mu, u1, "#!/bin/sh\ntrue\n").status_code == 201  # (its own group)
    # and at launch, for a job an administrator submitted so (the node checks it again)
    job = run(mu, None, f"#!/bin/sh\ncat /etc/shadow > {out}/null.out\n", uid=u1.pw_uid, name=u1.pw_name,
              gid=shadow, stdout="/dev/null", signer=(0, "root"))
    assert job["state"] == "FAILED" and not (out / "null.out").exists()  # (its files opened without a child)
    job = run(mu, None, "#!/bin/sh\nid -g\ncat /etc/shadow\n", uid=u1.pw_uid, name=u1.pw_name, gid=shadow,
              stdout=str(out / "gid.out"), signer=(0, "root"))
    assert job["state"] == "FAILED"
    text = (out / "gid.out").read_text() if (out / "gid.out").exists() else ""
    assert "root:" not in text and str(shadow) not in text.split()


@pytest.mark.parametrize("output", [None, "/dev/null"])  # (/dev/null: its files are opened without a child)
def test_a_user_unknown_on_the_node_never_runs_as_root(mu: Cluster, base: Path, output: str | None):
    drop = base / "drop"
    drop.mkdir(exist_ok=True)
    drop.chmod(0o777)
    ghost = 4242
    while True:
        try:
            pwd.getpwuid(ghost)
            ghost += 1
        except KeyError:
            break
    extra = {"stdout": output} if output else {}
    job = run(mu, None, f"#!/bin/sh\nid -u > {drop}/ran\n", uid=ghost, name="ghost", gid=ghost, **extra)
    assert job["state"] == "FAILED"
    assert not (drop / "ran").exists()


def test_the_working_directory_is_entered_with_the_users_rights(mu: Cluster, users, base: Path):
    u1, u2 = users
    out = home(base, u1)
    private = home(base, u2, 0o700)
    (private / "secret").write_text("U2-SECRET\n")
    os.chown(private / "secret", u2.pw_uid, u2.pw_gid)
    job = run(mu, u1, "#!/bin/sh\ncat secret\npwd\n", workdir=str(private), stdout=str(out / "cd.out"))
    text = (out / "cd.out").read_text()
    assert "U2-SECRET" not in text
    assert f"couldn't chdir to `{private}': Permission denied: going to /tmp instead" in text
    assert text.strip().splitlines()[-1] == "/tmp" and job["state"] == "COMPLETED"  # (pwd, the last command)
    # the user's own directory works as before
    job = run(mu, u1, "#!/bin/sh\npwd\n", workdir=str(out), stdout=str(out / "cd2.out"))
    assert job["state"] == "COMPLETED" and (out / "cd2.out").read_text() == f"{out}\n"


def test_prolog_and_epilog_never_see_the_jobs_environment(mu: Cluster, users, base: Path):
    u1 = users[0]
    out = home(base, u1)
    marker = base / "owned"
    evil = out / "evil"
    evil.mkdir(exist_ok=True)
    (evil / "id").write_text(f"#!/bin/sh\ntouch {marker}\n/usr/bin/id \"$@\"\n")
    (out / "bashenv.sh").write_text(f"touch {marker}\n")
    for p in (evil, evil / "id", out / "bashenv.sh"):
        os.chown(p, u1.pw_uid, u1.pw_gid)
        p.chmod(0o755)
    env = {"BASH_ENV": str(out / "bashenv.sh"), "PATH": f"{evil}:/usr/bin:/bin", "LD_PRELOAD": "/nonexistent.so"}
    job = run(mu, u1, "#!/bin/sh\necho ran\n", environment=env, stdout=str(out / "env.out"))
    assert job["state"] == "COMPLETED"
    trace = base / "trace"
    wait_until(lambda: f"epilog {job['job_id']} " in trace.read_text(), what="the epilog")
    lines = [ln for ln in trace.read_text().splitlines() if f" {job['job_id']} " in ln]
    assert [ln.split()[0] for ln in lines] == ["prolog", "epilog"]
    for ln in lines:  # as root, with the job's facts, a fixed PATH and nothing of the user's
        assert f" {u1.pw_name} uid=0 PATH=/usr/local/sbin:" in ln and str(evil) not in ln
    assert not marker.exists()


def test_files_made_for_a_job_honour_the_submitters_umask(mu: Cluster, users, base: Path):
    u1 = users[0]
    out = home(base, u1)
    job = run(mu, u1, f"#!/bin/sh\necho \"umask=${{SLURM_UMASK:-unset}}\"\ntouch {out}/made\n",
              environment={"SLURM_UMASK": "0077"}, stdout=str(out / "umask.out"))
    assert job["state"] == "COMPLETED"
    assert (out / "umask.out").read_text() == "umask=unset\n"  # applied, then taken out as slurmstepd does
    assert stat.S_IMODE((out / "umask.out").stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "made").stat().st_mode) == 0o600
    assert (out / "made").stat().st_uid == u1.pw_uid


def _tar(entries: list[tuple[tarfile.TarInfo, bytes | None]]) -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return base64.b64encode(buf.getvalue()).decode()


def _entry(name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, data: bytes | None = None,
           link: str = "") -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.uid, info.gid, info.uname, info.gname, info.linkname = kind, mode, 0, 0, "root", "root", link
    if data is not None:
        info.size = len(data)
    return info, data


def _upload(c: Cluster, user: pwd.struct_passwd, data: str) -> str:
    key = cred.read_key(str(c.key_file))
    r = httpx.post(c.url + "/api/v1/code", json={"data": data}, timeout=30, auth=signed(key, user.pw_uid, user.pw_name))
    assert r.status_code == 200, r.text
    return r.json()["id"]


def test_code_archives_unpack_as_the_users_own_files(mu: Cluster, users, base: Path):
    u1 = users[0]
    out = home(base, u1)
    sha = _upload(mu, u1, _tar([
        _entry("bin", tarfile.DIRTYPE, 0o755),
        _entry("bin/sh", mode=0o4755, data=b"#!/bin/sh\necho setuid\n"),   # root's, setuid, in the header
        _entry("mine.txt", mode=0o600, data=b"only mine\n"),
        _entry("link", tarfile.SYMTYPE, link="mine.txt"),
        _entry("dev", tarfile.CHRTYPE), _entry("fifo", tarfile.FIFOTYPE)]))
    job = run(mu, u1, '#!/bin/sh\ncat "$CODE_SOURCE_PATH/link"\n', code=sha, stdout=str(out / "code.out"))
    assert job["state"] == "COMPLETED" and (out / "code.out").read_text() == "only mine\n"
    code = mu.root / "spool" / "node1" / "runs" / str(job["job_id"]) / "code"
    sh = (code / "bin" / "sh").stat()
    assert (sh.st_uid, stat.S_IMODE(sh.st_mode)) == (u1.pw_uid, 0o755)  # no setuid bit, not root's
    assert (code / "mine.txt").stat().st_uid == u1.pw_uid
    assert not (code / "dev").exists() and not (code / "fifo").exists()


def test_a_hostile_archive_fails_its_job_alone(mu: Cluster, users, base: Path):
    u1 = users[0]
    out = home(base, u1)
    deep = "/".join(["d"] * 2000) + "/f"
    for data in (_tar([_entry(deep, data=b"x")]), _tar([_entry("up", tarfile.SYMTYPE, link="../../etc")]),
                 _tar([_entry("../escape", data=b"x")])):
        sha = _upload(mu, u1, data)
        job = run(mu, u1, '#!/bin/sh\nls -A "$CODE_SOURCE_PATH"\n', code=sha, stdout=str(out / "hostile.out"))
        assert (out / "hostile.out").read_text() == ""  # nothing of the archive landed
        assert job["state"] == "COMPLETED"
        assert not (mu.root / "spool" / "node1" / "runs" / str(job["job_id"]) / "escape").exists()
    # the agent lived through them: the next job runs
    assert run(mu, u1, "#!/bin/sh\ntrue\n")["state"] == "COMPLETED"


def test_dependency_lists_are_read_with_the_users_rights(mu: Cluster, users, base: Path):
    u1 = users[0]
    out = home(base, u1)
    job = run(mu, u1, "#!/bin/sh\necho ran\n", py_deps=["-r /etc/shadow"], stdout=str(out / "deps.out"))
    text = (out / "deps.out").read_text()
    assert job["state"] == "FAILED"
    assert "cannot read /etc/shadow: Permission denied" in text and "root:" not in text and "ran" not in text


def _patch(c: Cluster, user: pwd.struct_passwd | None, job_id: int, changes: dict) -> httpx.Response:
    uid, name = (user.pw_uid, user.pw_name) if user else (0, "root")
    key = cred.read_key(str(c.key_file))
    return httpx.patch(f"{c.url}/api/v1/jobs/{job_id}", json=changes, timeout=30, auth=signed(key, uid, name))


def test_users_may_not_raise_their_priority_nor_a_running_jobs_time_limit(mu: Cluster, users, base: Path):
    """As a real 22.05 answers an ordinary user (tests/data/slurm-2205-permissions.md): a negative
    nice is refused at submission and in an update, a running job's time limit may go down only;
    a pending job's may go up. An administrator may do all of it."""
    u1 = users[0]
    out = home(base, u1)
    r = submit(mu, u1, "#!/bin/sh\ntrue\n", nice=-10)
    assert r.status_code == 400 and r.json()["detail"]["error"] == "Invalid --nice value"
    r = submit(mu, u1, "#!/bin/sh\nsleep 300\n", time_limit=10, stdout=str(out / "long.out"))
    assert r.status_code == 201, r.text
    job = r.json()["job_id"]
    mu.wait_state(job, "RUNNING")
    for changes in ({"nice": -5}, {"time_limit": 20}, {"time_limit": None}):
        r = _patch(mu, u1, job, changes)
        assert (r.status_code, r.json()["detail"]["error"]) == (403, "Access/permission denied"), changes
    assert mu.job(job)["time_limit"] == 10
    assert _patch(mu, u1, job, {"time_limit": 5, "nice": 5}).status_code == 200
    assert (mu.job(job)["time_limit"], mu.job(job)["nice"]) == (5, 5)
    assert _patch(mu, None, job, {"time_limit": 30, "nice": -5}).status_code == 200  # root may
    r = submit(mu, u1, "#!/bin/sh\ntrue\n", time_limit=10, hold=True)
    held = r.json()["job_id"]
    assert _patch(mu, u1, held, {"time_limit": 20}).status_code == 200  # pending: it may go up
    assert mu.job(held)["time_limit"] == 20
    mu.run(["scancel", str(job), str(held)])


def _as(c: Cluster, user: pwd.struct_passwd) -> httpx.Auth:
    return signed(cred.read_key(str(c.key_file)), user.pw_uid, user.pw_name)


def test_secrets_belong_to_their_user_or_account(mu: Cluster, users, base: Path):
    u1, u2 = users
    out1, out2 = home(base, u1), home(base, u2)
    url = mu.url + "/api/v1/secrets/team/tok"

    def names(user: pwd.struct_passwd) -> list[tuple[str, str]]:
        r = httpx.get(mu.url + "/api/v1/secrets", auth=_as(mu, user), timeout=30)
        assert r.status_code == 200, r.text
        return [(f"{s['scope']}/{s['key']}", s["owner"]) for s in r.json()["secrets"]]

    assert httpx.put(url, json={"value": "one-s3cret"}, auth=_as(mu, u1), timeout=30).status_code == 200
    assert names(u1) == [("team/tok", f"user:{u1.pw_name}")]
    # another user neither lists, deletes nor replaces it; the same name is a secret of their own
    assert names(u2) == [] and httpx.get(mu.url + "/api/v1/secrets", timeout=30).status_code == 401
    assert httpx.delete(url, auth=_as(mu, u2), timeout=30).status_code == 404
    assert httpx.put(url, json={"value": "two-s3cret"}, auth=_as(mu, u2), timeout=30).status_code == 200
    assert names(u2) == [("team/tok", f"user:{u2.pw_name}")]
    show = '#!/bin/sh\necho "tok=$TOK"\n'
    assert run(mu, u1, show, secrets={"TOK": "team/tok"}, stdout=str(out1 / "sec.out"))["state"] == "COMPLETED"
    assert run(mu, u2, show, secrets={"TOK": "team/tok"}, stdout=str(out2 / "sec.out"))["state"] == "COMPLETED"
    assert (out1 / "sec.out").read_text() == "tok=one-s3cret\n" and (out2 / "sec.out").read_text() == "tok=two-s3cret\n"
    # an account's secret: stored by a member, used by its members' runs, out of others' reach
    assert mu.run(["sacctmgr", "-i", "add", "account", "mlteam"]).returncode == 0
    assert mu.run(["sacctmgr", "-i", "add", "user", u1.pw_name, "Account=mlteam"]).returncode == 0
    shared = mu.url + "/api/v1/secrets/team/shared?account=mlteam"
    assert httpx.put(shared, json={"value": "team-s3cret"}, auth=_as(mu, u2), timeout=30).status_code == 403
    assert httpx.put(shared, json={"value": "team-s3cret"}, auth=_as(mu, u1), timeout=30).status_code == 200
    assert ("team/shared", "account:mlteam") in names(u1) and ("team/shared", "account:mlteam") not in names(u2)
    job = run(mu, u1, '#!/bin/sh\necho "shared=$S"\n', secrets={"S": "team/shared"}, account="mlteam",
              stdout=str(out1 / "shared.out"))
    assert job["state"] == "COMPLETED" and (out1 / "shared.out").read_text() == "shared=team-s3cret\n"
    job = run(mu, u2, '#!/bin/sh\necho "shared=$S"\n', secrets={"S": "team/shared"}, stdout=str(out2 / "shared.out"))
    assert (out2 / "shared.out").read_text() == "shared=\n"
    assert httpx.delete(shared, auth=_as(mu, u2), timeout=30).status_code == 403


def test_uploaded_code_is_its_uploaders_only(mu: Cluster, users, base: Path):
    u1, u2 = users
    sha = _upload(mu, u1, _tar([_entry("mine.txt", mode=0o644, data=b"u1's code\n")]))
    assert httpx.get(f"{mu.url}/api/v1/code/{sha}", timeout=30).status_code == 401
    assert httpx.get(f"{mu.url}/api/v1/code/{sha}", auth=_as(mu, u2), timeout=30).status_code == 404
    assert httpx.get(f"{mu.url}/api/v1/code/{sha}", auth=_as(mu, u1), timeout=30).status_code == 200
    # nor may another user's job name it (its agent would unpack it for them)
    r = submit(mu, u2, '#!/bin/sh\ncat "$CODE_SOURCE_PATH/mine.txt"\n', code=sha)
    assert r.status_code == 400 and "code_source: the packed code was not uploaded" in r.text
    r = httpx.post(mu.url + "/api/v1/runs", auth=_as(mu, u2), timeout=30, json={
        "workload": {"command": "cat mine.txt"}, "code": sha, "user": u2.pw_name, "uid": u2.pw_uid, "gid": u2.pw_gid,
        "group": u2.pw_name, "cwd": "/tmp"})
    assert r.status_code == 400 and "code_source: the packed code was not uploaded" in r.text


def test_sbatch_sends_the_submitters_umask(mu: Cluster, base: Path):
    """sbatch sends its umask (SLURM_UMASK); the job's files are made under it, and the batch
    script does not see the variable, as under slurmstepd; srun's tasks do."""
    d = base / "umask-sbatch"
    d.mkdir()
    script = d / "job.sh"
    script.write_text('#!/bin/sh\necho "batch=${SLURM_UMASK:-unset}"\ntouch made\nsrun sh -c \'echo "step=$SLURM_UMASK"\'\n')
    r = mu.run(["sh", "-c", f"umask 027; exec sbatch --parsable --wait -o {d}/out -D {d} {script}"])
    assert r.returncode == 0, r.stderr
    assert (d / "out").read_text() == "batch=unset\nstep=0027\n", (mu.root / "agent-node1.log").read_text()[-1500:]
    assert stat.S_IMODE((d / "out").stat().st_mode) == 0o640
    assert stat.S_IMODE((d / "made").stat().st_mode) == 0o640


def test_the_state_directory_and_database_are_the_controllers_only(mu: Cluster, users):
    """Another local user can neither list the state directory nor read the database (secrets,
    scripts and environments are in it); a database made with wider modes is narrowed at start."""
    u1 = users[0]
    state = mu.root / "state"
    assert stat.S_IMODE(state.stat().st_mode) == 0o711
    files = list(state.glob("slurmlet.db*"))
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files), files
    for argv in (["ls", str(state)], ["cat", str(state / "slurmlet.db")]):
        r = subprocess.run(["setpriv", f"--reuid={u1.pw_uid}", f"--regid={u1.pw_gid}", "--clear-groups", *argv],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "Permission denied" in r.stderr, (argv, r.stdout[:200], r.stderr)
    # a state directory from before (0755, a 0644 database): narrowed by the next start
    mu.stop_proc("controller")
    state.chmod(0o755)
    (state / "slurmlet.db").chmod(0o644)
    mu.start_controller()
    wait_until(mu.ping, 30, what="the controller back")
    assert stat.S_IMODE(state.stat().st_mode) == 0o711
    assert stat.S_IMODE((state / "slurmlet.db").stat().st_mode) == 0o600


def test_an_input_file_the_user_cannot_read_fails_the_job_at_launch(mu: Cluster, users, base: Path):
    """As a real 22.05 does (tests/data/slurm-2205-permissions.md): the job never starts, FAILED with
    JobLaunchFailure and ExitCode 0:53, its output file not made; the input is never read as root."""
    u1 = users[0]
    out = home(base, u1)
    secret = base / "root-only.txt"
    secret.write_text("root's\n")
    secret.chmod(0o600)
    job = run(mu, u1, "#!/bin/sh\necho start\ncat\n", stdin=str(secret), stdout=str(out / "stdin.out"))
    assert (job["state"], job["reason"], job["exit_code"], job["exit_signal"]) == ("FAILED", "JobLaunchFailure", 0, 53)
    assert [s["state"] for s in job["steps"] if s["step"] == "batch"] == ["CANCELLED"]
    assert not (out / "stdin.out").exists()
    # readable, it is the job's input
    mine = out / "mine.txt"
    mine.write_text("mine\n")
    os.chown(mine, u1.pw_uid, u1.pw_gid)
    mine.chmod(0o600)
    job = run(mu, u1, "#!/bin/sh\ncat\n", stdin=str(mine), stdout=str(out / "stdin.out"))
    assert job["state"] == "COMPLETED" and (out / "stdin.out").read_text() == "mine\n"


def _get(c: Cluster, user: pwd.struct_passwd, path: str) -> httpx.Response:
    return httpx.get(c.url + path, auth=_as(c, user), timeout=60)


def test_the_dashboard_reads_a_jobs_output_and_usage_for_its_owner_only(mu: Cluster, users, base: Path):
    """The job page's live output and plots: read on the node with the job's user's rights, for its
    owner; another user gets 403 (as for sstat), and a link the job puts at its output's name reads
    only what the user could."""
    u1, u2 = users
    out = home(base, u1)
    stop = out / "usage-stop"
    script = ("#!/bin/bash\nfor i in $(seq 1 200); do echo line $i; done\n"
              "x=$(head -c 40000000 /dev/zero | tr '\\0' a)\n"  # ~40 MB held by bash while it waits
              f"while [ ! -e {stop} ]; do sleep 0.1; done\necho ${{#x}}\n")
    r = submit(mu, u1, script, stdout=str(out / "usage.out"), workdir=str(out))
    assert r.status_code == 201, r.text
    jid = r.json()["job_id"]

    def tail(**q) -> dict:
        r = _get(mu, u1, f"/api/v1/jobs/{jid}/output?" + "&".join(f"{k}={v}" for k, v in q.items()) if q
                 else f"/api/v1/jobs/{jid}/output")
        assert r.status_code == 200, r.text
        return r.json()
    got = wait_until(lambda: (t := tail(limit=100)).get("size", 0) >= 1600 and t, timeout=60, what="the output")
    assert got["error"] is None and got["path"] == str(out / "usage.out") and got["node"] == mu.node_names[0]
    text = base64.b64decode(got["data"]).decode()
    assert len(base64.b64decode(got["data"])) == 100 and text.endswith("line 200\n")  # the last 100 bytes
    assert got["offset"] == got["size"] - 100
    whole = tail(offset=0, limit=1 << 20)
    assert base64.b64decode(whole["data"]).decode().splitlines() == [f"line {i}" for i in range(1, 201)]
    assert tail(offset=whole["size"])["data"] == ""  # followed to the end: nothing new yet
    assert _get(mu, u2, f"/api/v1/jobs/{jid}/output").status_code == 403

    # the plot's samples: the batch script's tree holds its ~40 MB (in KB)
    def usage() -> dict:
        r = _get(mu, u1, f"/api/v1/jobs/{jid}/usage")
        assert r.status_code == 200, r.text
        return r.json()
    u = wait_until(lambda: (x := usage())["nodes"].get(mu.node_names[0]) and
                   max(p[1] for s in x["nodes"][mu.node_names[0]] for p in s["points"]) > 30_000 and x,
                   timeout=60, what="a sample with the job's memory")
    series = u["nodes"][mu.node_names[0]]
    assert [(s["source"], s["live"]) for s in series] == [("batch", True)] and u["silent"] == []
    times = [p[0] for p in series[0]["points"]]
    assert times == sorted(times)
    assert _get(mu, u2, f"/api/v1/jobs/{jid}/usage").status_code == 403
    stop.touch()
    wait_until(lambda: mu.job(jid)["state"] == "COMPLETED", timeout=60, what="the job to end")
    after = usage()["nodes"][mu.node_names[0]]  # kept after its end
    assert len(after[0]["points"]) >= len(series[0]["points"]) and not after[0]["live"]
    assert base64.b64decode(tail()["data"]).decode().endswith("line 200\n40000000\n")

    # the output's name made a link to a file only root may read: the job's user reads it, so nothing comes
    secret = base / "root-secret.txt"
    secret.write_text("root's secret\n")
    secret.chmod(0o600)
    r = submit(mu, u1, f"#!/bin/sh\nrm -f {out}/linked.out\nln -s {secret} {out}/linked.out\ntouch {stop}2\nsleep 300\n",
               stdout=str(out / "linked.out"), workdir=str(out))
    jid = r.json()["job_id"]
    wait_until(lambda: Path(f"{stop}2").exists(), timeout=60, what="the link")
    got = _get(mu, u1, f"/api/v1/jobs/{jid}/output").json()
    assert got["data"] == "" and "Permission denied" in got["error"], got
    assert _get(mu, u1, f"/api/v1/jobs/{jid}/output?which=stderr&limit=-1").status_code == 422
    mu.api("POST", "/api/v1/jobs/cancel", {"ids": [jid]})
