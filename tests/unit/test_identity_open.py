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


def test_a_root_job_with_the_agents_umask_opens_here_as_the_child_would(tmp_path):
    """Its files opened in the agent (no fork), with what opening them in a child gives: the same
    files, contents, modes and errors, in order; the working directory's errors too."""
    umask = identity._agent_umask()
    assert umask is not None
    (tmp_path / "old").write_text("previous run\n")
    (tmp_path / "a_file").write_text("")
    cases = [
        ([(os.devnull, "rb"), ("{d}/old", "wab"), ("{d}/new", "ab")], "{d}"),
        ([("{d}/missing", "rb"), ("{d}/never", "wab")], "{d}"),
        ([(os.devnull, "rb"), ("{d}/gone/out", "wab")], None),
        ([("{d}", "wab")], "{d}/gone"),
        ([("{d}/old", "rb")], "{d}/a_file"),
        ([("{d}/old", "ab")], "relative"),
        ([], None),
    ]
    for n, (files, workdir) in enumerate(cases):
        got = {}
        for way in ("here", "child"):
            d = tmp_path / f"{way}{n}"
            shutil.copytree(tmp_path, d, ignore=lambda _dir, names: [x for x in names if x[:4] in ("here", "chil")])
            fs = [(p.format(d=d), m) for p, m in files]
            wd = workdir.format(d=d) if workdir else None
            opened, bad = identity._open_here(fs, wd) if way == "here" else \
                identity._open_in_child(None, umask, fs, wd, 10.0)
            seen = []
            for f in opened:
                if isinstance(f, OSError):
                    seen.append(("error", f.errno, os.path.relpath(f.filename, d)))
                    continue
                if "w" in f.mode or "a" in f.mode:
                    f.write(b"x")
                    f.flush()
                seen.append(("file", f.mode, os.fstat(f.fileno()).st_mode & 0o777))
                f.close()
            seen.append(("workdir", bad and bad.errno))
            seen.append(sorted((str(p.relative_to(d)), p.read_text()) for p in d.rglob("*") if p.is_file()))
            got[way] = seen
        assert got["here"] == got["child"], (files, workdir)


def test_a_fifo_nobody_writes_is_given_up_after_its_time(tmp_path):
    """A root job's input that is a FIFO nobody writes: not opened in the agent (it would wait there
    for good), but in the child, killed after the timeout."""
    import threading
    fifo = tmp_path / "in"
    os.mkfifo(fifo)
    out: list = []

    def launch() -> None:
        try:
            identity.open_all_as({"uid": 0, "gid": 0, "environment": {}}, [(str(fifo), "rb")], str(tmp_path),
                                 timeout=0.5)
        except OSError as e:
            out.append(e.errno)
    t = threading.Thread(target=launch, daemon=True)
    t.start()
    t.join(60)
    assert out == [errno.ETIMEDOUT]
