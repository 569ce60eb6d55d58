"""identity.open_all_as: a launch's files and working directory, checked with the job's user's rights
in one child process (real users: runs as root, as an agent does)."""

from __future__ import annotations

import errno
import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest

from slurmlet.nodeagent import identity

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to become another user")


def nobody() -> dict:
    pw = pwd.getpwnam("nobody")
    return {"uid": pw.pw_uid, "gid": pw.pw_gid, "environment": {"SLURM_UMASK": "0077"}}


@pytest.fixture
def open_dir():
    """A directory anyone may reach (pytest's own are root's alone)."""
    d = tempfile.mkdtemp(prefix="slurmlet-identity-")
    os.chmod(d, 0o755)
    yield Path(d)
    shutil.rmtree(d)


def test_files_open_as_the_user_with_their_umask(open_dir):
    order = nobody()
    d = open_dir / "out"
    d.mkdir()
    os.chown(d, order["uid"], order["gid"])
    old = d / "old.txt"
    old.write_text("previous run\n")
    os.chown(old, order["uid"], order["gid"])
    got, bad = identity.open_all_as(order, [("/dev/null", "rb"), (str(old), "wab"), (str(d / "new.txt"), "ab")],
                                    str(d))
    assert bad is None
    stdin, out, err = got
    out.write(b"x")
    out.flush()
    assert old.read_bytes() == b"x"  # emptied, then written at its end
    os.lseek(out.fileno(), 0, os.SEEK_SET)
    out.write(b"y")  # O_APPEND: at the end whatever the offset
    out.flush()
    assert old.read_bytes() == b"xy"
    st = os.stat(d / "new.txt")
    assert (st.st_uid, st.st_mode & 0o777) == (order["uid"], 0o600)  # theirs, with their umask
    for f in got:
        f.close()


def test_a_file_they_may_not_read_stops_the_rest(open_dir):
    order = nobody()
    tmp_path = open_dir
    secret = tmp_path / "secret"
    secret.write_text("root's\n")
    secret.chmod(0o600)
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    got, bad = identity.open_all_as(order, [(str(secret), "rb"), (str(tmp_path / "made.txt"), "wab")], str(closed))
    assert isinstance(got[0], OSError) and got[0].errno == errno.EACCES and got[0].filename == str(secret)
    assert isinstance(got[1], OSError) and got[1].errno == errno.ECANCELED
    assert not (tmp_path / "made.txt").exists()  # nothing made for a job that never starts
    assert bad is not None and bad.errno == errno.EACCES  # root may enter it; they may not


def test_root_jobs_and_a_missing_directory(tmp_path):
    got, bad = identity.open_all_as({"uid": 0, "gid": 0}, [(str(tmp_path / "o"), "wab")], str(tmp_path / "gone"))
    assert not isinstance(got[0], OSError)
    got[0].close()
    assert bad is not None and bad.errno == errno.ENOENT
    got, bad = identity.open_all_as({"uid": 0, "gid": 0}, [])
    assert got == [] and bad is None
