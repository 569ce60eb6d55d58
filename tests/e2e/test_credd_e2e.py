"""slurmlet credd: users who may not read the cluster key get credentials for themselves, and only
for themselves, from a local Unix socket (munged's role)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from slurmlet.common import cred
from tests.conftest import BIN, Cluster, serve, wait_until


@pytest.fixture(scope="module")
def cc(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("credd"), nodes=1, cpus=2))


@pytest.fixture
def credd(cc: Cluster):
    # a directory every user may pass through, as /run/slurmlet is (pytest's tmp_path is 0700)
    d = Path(tempfile.mkdtemp(prefix="slurmlet-credd-"))
    d.chmod(0o755)
    sock = d / "cred.sock"
    proc = subprocess.Popen([str(BIN / "slurmlet"), "credd", "--socket", str(sock), "--key-file", str(cc.key_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_until(lambda: cred.from_credd(ANY, str(sock)) is not None or proc.poll() is not None, what="credd answering")
    assert proc.poll() is None, proc.stdout.read()
    yield sock
    proc.terminate()
    assert proc.wait(10) == 0
    assert not sock.exists()  # it removes its socket when it stops
    d.rmdir()


#: the binding of some request, for credentials asked for here and not sent
ANY = cred.bind("POST", "/api/v1/jobs", b"{}")


def without_key(sock: Path | None) -> dict:
    """The environment of a user who cannot read the key (and maybe has a credd socket)."""
    return {"SLURMLET_KEY_FILE": "/nonexistent/slurmlet.key", "SLURMLET_CRED_SOCKET": str(sock or "/nonexistent.sock")}


def test_credd_signs_for_its_caller(cc: Cluster, credd: Path):
    got = cred.from_credd(ANY, str(credd))
    assert got is not None
    assert cred.verify(cred.read_key(str(cc.key_file)), got, ANY)[:2] == cred.current_user()
    assert cred.verify(cred.read_key(str(cc.key_file)), got, cred.bind("GET", "/")) is None  # for that request only
    assert oct(credd.stat().st_mode & 0o777) == "0o666"  # anyone may ask: the kernel says who asks
    # a caller that sends no binding, or something else, gets an error line, and credd goes on
    import socket
    for line in (b"\n", b"x" * 200 + b"\n", b"GET /\n"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(str(credd))
            s.sendall(line)
            assert s.recv(512).startswith(b"error: ")
    assert cred.from_credd(ANY, str(credd)) is not None


def test_a_user_without_the_key_submits_through_credd(cc: Cluster, credd: Path):
    r = cc.run(["sbatch", "--parsable", "--wrap", "true"], env=without_key(None))
    assert r.returncode == 1 and "Authentication failure" in r.stderr, r.stderr
    r = cc.run(["sbatch", "--parsable", "--wrap", "true"], env=without_key(credd))
    assert r.returncode == 0, r.stderr
    job = cc.job(int(r.stdout.strip()))
    assert (job["uid"], job["user"]) == cred.current_user()
    r = cc.run(["scancel", str(job["job_id"])], env=without_key(credd))
    assert r.returncode == 0, r.stderr


def test_a_stale_socket_is_replaced_and_a_live_one_kept(cc: Cluster, credd: Path, tmp_path: Path):
    r = subprocess.run([str(BIN / "slurmlet"), "credd", "--socket", str(credd), "--key-file", str(cc.key_file)],
                       capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stderr) == (1, f"slurmlet credd: error: {credd}: another credd answers there\n")
    stale = tmp_path / "stale.sock"
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(stale))
    s.close()  # a socket file nobody listens on: what a killed credd leaves
    proc = subprocess.Popen([str(BIN / "slurmlet"), "credd", "--socket", str(stale), "--key-file", str(cc.key_file)])
    try:
        wait_until(lambda: cred.from_credd(ANY, str(stale)) is not None, what="credd on the stale socket")
    finally:
        proc.terminate()
        proc.wait(10)
    r = subprocess.run([str(BIN / "slurmlet"), "credd", "--socket", str(tmp_path / "x.sock"), "--key-file",
                        str(tmp_path / "none.key")], capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stderr) == (1, f"slurmlet credd: error: --key-file: cannot read {tmp_path / 'none.key'}\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as another uid takes root")
def test_another_user_gets_a_credential_for_themself_only(cc: Cluster, credd: Path):
    """A process of uid 65534 (nobody), which cannot read the key, gets a credential naming 65534,
    whatever it claims; the job it submits with it is nobody's and root's scancel rights are not its."""
    import pwd

    import httpx
    nobody = pwd.getpwuid(65534).pw_name
    as_nobody = httpx.Request("POST", f"{cc.url}/api/v1/jobs", json={
        "script": "#!/bin/sh\nsleep 30\n", "workdir": "/tmp", "uid": 65534, "user": nobody, "gid": 65534,
        "group": "nogroup", "hold": True})
    as_root = httpx.Request("POST", f"{cc.url}/api/v1/jobs", json={
        "script": "#!/bin/sh\ntrue\n", "workdir": "/tmp", "uid": 0, "user": "root", "gid": 0, "group": "root"})
    bindings = [cred.bind("POST", "/api/v1/jobs", r.content) for r in (as_nobody, as_root)]
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody without exec (this interpreter may live where nobody can't read)
        try:
            os.close(rd)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.environ["USER"] = "root"  # a lie credd does not believe
            readable = cred.read_key(str(cc.key_file)) is not None
            got = [cred.from_credd(b, str(credd)) or "" for b in bindings]
            os.write(wr, f"{readable}\n{got[0]}\n{got[1]}\n".encode())
        finally:
            os._exit(0)
    os.close(wr)
    with os.fdopen(rd) as f:
        readable, got, got_root = f.read().splitlines()
    os.waitpid(pid, 0)
    assert readable == "False"
    assert cred.verify(cred.read_key(str(cc.key_file)), got, bindings[0])[:2] == (65534, nobody)
    as_nobody.headers[cred.HEADER] = got
    r = httpx.Client().send(as_nobody)
    assert r.status_code == 201, r.text
    jid = r.json()["job_id"]
    assert cc.job(jid)["user"] == nobody
    # claiming to be root with nobody's credential is refused
    as_root.headers[cred.HEADER] = got_root
    r = httpx.Client().send(as_root)
    assert r.status_code == 403, r.text
    cc.run(["scancel", str(jid)])
