"""Jobs run as the user who submitted them, when the agent can arrange it (it runs as root).

`spawn_kwargs(order)` gives asyncio.create_subprocess_exec the user, group and supplementary
groups of the job's uid; `open_as(path, mode, order)` opens the job's output, error and input
files with that user's rights (never root's: `-o /etc/shadow` is the user's problem, not the
system's); `own(path, order)` hands a file the agent created for the job (its script) to that user.
An agent that is not root runs every job as itself, as before.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import signal
import stat


class IdentityError(PermissionError):
    """The job's user cannot be run as on this node: a uid unknown here, or a group not the user's.
    The job fails; it never runs as the agent (root) instead."""


def job_identity(order: dict) -> tuple[int, int, list[int]] | None:
    """(uid, gid, groups) to run the job as, or None to run it as the agent itself: when the agent
    is not root, or when the job is root's. Raises IdentityError for a uid without a passwd entry
    on this node or a gid that is neither the user's primary group nor one of their groups."""
    if os.geteuid() != 0:
        return None
    uid, gid = order.get("uid"), order.get("gid")
    if not isinstance(uid, int) or isinstance(uid, bool) or uid < 0:
        raise IdentityError(f"invalid user id {uid!r}")
    if uid == 0:
        return None
    try:
        pw = pwd.getpwuid(uid)
    except KeyError:
        raise IdentityError(f"user id {uid} is not known on this node") from None
    if gid is None:
        gid = pw.pw_gid
    if not isinstance(gid, int) or isinstance(gid, bool) or gid < 0:
        raise IdentityError(f"invalid group id {gid!r}")
    try:
        groups = os.getgrouplist(pw.pw_name, pw.pw_gid)
    except OSError:
        groups = [pw.pw_gid]
    if gid not in groups:
        raise IdentityError(f"group id {gid} is not a group of user {pw.pw_name}")
    return uid, gid, groups


def spawn_kwargs(order: dict) -> dict:
    """subprocess arguments that start a job's process as its user, with the submitter's umask."""
    ident, umask = job_identity(order), job_umask(order)
    out: dict[str, object] = {} if umask is None else {"umask": umask}
    if ident is not None:
        uid, gid, groups = ident
        out.update(user=uid, group=gid, extra_groups=groups)
    return out


def job_umask(order: dict) -> int | None:
    """The submitter's umask (SLURM_UMASK, which sbatch sends in the job's environment, as octal
    digits), or None when it is missing or malformed."""
    v = (order.get("environment") or {}).get("SLURM_UMASK")
    if not isinstance(v, str) or not 1 <= len(v) <= 4 or any(c not in "01234567" for c in v):
        return None
    return int(v, 8)


def _become(ident: tuple[int, int, list[int]] | None, umask: int | None) -> None:
    """In a forked child: drop to the job's user (groups, then gid, then uid) and take its umask."""
    if ident is not None:
        uid, gid, groups = ident
        os.setgroups(groups)
        os.setgid(gid)
        os.setuid(uid)
    if umask is not None:
        os.umask(umask)


def open_as(path: str, mode: str, order: dict):  # noqa: ANN201 - a file object
    """`open(path, mode)` with the rights of the job's user: a job may only write (or read, for its
    stdin) what its user may, although the agent runs as root. The file is opened by a child
    process that has become the user, with the submitter's umask, and sent back; a file it creates
    is the user's. Raises OSError as open() does."""
    if job_identity(order) is None and job_umask(order) is None:
        if mode in _OWN:  # (its flags as open_all_as uses them)
            return os.fdopen(os.open(path, _FLAGS[mode] | os.O_CLOEXEC, 0o666), _OWN[mode])
        return open(path, mode)
    (f,), _ = open_all_as(order, [(path, mode)], timeout=10.0)
    if isinstance(f, OSError):
        raise f
    return f


#: open_all_as's modes: open()'s; "wab": emptied, then written at its end (O_TRUNC with O_APPEND);
#: "rnb", "anb": read, append without waiting (a FIFO the user put at the name never blocks: for
#: reading it opens at once, for appending it fails with ENXIO when nobody reads it)
_NB = os.O_NONBLOCK | os.O_NOCTTY
_FLAGS = {"rb": os.O_RDONLY, "rnb": os.O_RDONLY | _NB, "wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
          "ab": os.O_WRONLY | os.O_CREAT | os.O_APPEND, "anb": os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NB,
          "wab": os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND}
#: the file object's mode for the modes of our own
_OWN = {"wab": "ab", "rnb": "rb", "anb": "ab"}


def open_all_as(order: dict, files: list[tuple[str, str]], workdir: str | None = None,
                timeout: float | None = None) -> tuple[list, OSError | None]:
    """open_as for each (path, mode) of `files` and a change into `workdir`, all in one child that has
    become the job's user (a launch forks once, not once per file). Returns, in order, a file object
    or the OSError its open raised (after the first failure the others are not tried: ECANCELED),
    and the reason the user could not enter `workdir` (ENOENT for a relative one; None when they
    can, or when no `workdir` was given). An open that does not return within `timeout` seconds (a
    FIFO nobody writes, a hung network filesystem) has its child killed: OSError ETIMEDOUT.

    A job that runs as the agent itself (root's, or any job of an agent that is not root) with the
    agent's umask has its files opened here, without the child (a fork of the agent, milliseconds of
    each launch), where they are all regular files or /dev/null, or not there yet: the rights and the
    umask are the same, and nothing whose open can wait is opened here."""
    ident, umask = job_identity(order), job_umask(order)
    if ident is None and umask in (None, _agent_umask()):
        here = _open_here(files, workdir)
        if here is not None:
            return here
    return _open_in_child(ident, umask, files, workdir, timeout)


def _open_in_child(ident: tuple[int, int, list[int]] | None, umask: int | None, files: list[tuple[str, str]],
                   workdir: str | None, timeout: float | None) -> tuple[list, OSError | None]:
    """open_all_as's work in a forked child that has become `ident` (None: stays the agent's user)
    with `umask`."""
    import socket
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        pid = os.fork()
    except OSError:
        parent.close()
        child.close()
        raise
    if pid == 0:
        code = 0
        try:
            parent.close()
            try:
                _become(ident, umask)
            except OSError as e:  # not any one file's fault: said apart, raised in the parent
                child.sendall(f"E{e.errno or errno.EIO}".encode())
                raise
            errs: list[int] = []
            fds: list[int] = []
            for path, mode in files:
                if any(errs):  # after a failure the rest stay unopened (ECANCELED): nothing made in vain
                    errs.append(errno.ECANCELED)
                    continue
                try:
                    fds.append(os.open(path, _FLAGS[mode] | os.O_CLOEXEC, 0o666))
                    errs.append(0)
                except OSError as e:
                    errs.append(e.errno or errno.EIO)
            if workdir is not None:
                try:
                    if not workdir.startswith("/"):  # (relative to nothing the user chose)
                        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
                    os.chdir(workdir)
                    errs.append(0)
                except OSError as e:
                    errs.append(e.errno or errno.EIO)
            msg = ",".join(map(str, errs)).encode() or b"-"
            if fds:
                socket.send_fds(child, [msg], fds)
            else:
                child.sendall(msg)
        except BaseException:  # noqa: BLE001 - never return into the parent's code
            code = 1
        finally:
            os._exit(code)
    child.close()
    parent.settimeout(timeout)
    try:
        msg, fds, flags, _addr = socket.recv_fds(parent, 4096, max(1, len(files)))
    except TimeoutError:
        os.kill(pid, signal.SIGKILL)
        raise OSError(errno.ETIMEDOUT, f"no answer within {timeout:g} s opening {', '.join(p for p, _ in files)}") \
            from None
    finally:
        parent.close()
        os.waitpid(pid, 0)
    if msg.startswith(b"E") and msg[1:].isdigit():  # it could not become the user
        err = int(msg[1:]) or errno.EIO
        raise OSError(err, f"cannot act as the job's user: {os.strerror(err)}")
    try:
        errs = [int(x) for x in msg.decode().split(",")] if msg and msg != b"-" else []
    except ValueError:
        errs = []
    want = len(files) + (workdir is not None)
    if len(errs) != want or flags & socket.MSG_CTRUNC or len(fds) != errs[:len(files)].count(0):
        # the child failed before it could say, or descriptors were lost on the way (the agent at its
        # limit of open files): every one fails with EIO
        for fd in fds:
            os.close(fd)
        errs, fds = [errno.EIO] * want, []
    out: list = []
    it = iter(fds)
    for (path, mode), err in zip(files, errs):
        out.append(OSError(err, os.strerror(err), path) if err else os.fdopen(next(it), _OWN.get(mode, mode)))
    bad = None
    if workdir is not None and errs[-1]:
        bad = OSError(errs[-1], os.strerror(errs[-1]), workdir)
    return out, bad


def _agent_umask() -> int | None:
    """This process's umask, as the kernel shows it (/proc/self/status; None where it does not)."""
    global _UMASK
    if _UMASK is False:
        _UMASK = None
        with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    _UMASK = int(line.split()[1], 8)
    return _UMASK


_UMASK: int | None | bool = False  #: the agent's umask (it never changes it), read once


def _open_here(files: list[tuple[str, str]], workdir: str | None) -> tuple[list, OSError | None] | None:
    """open_all_as's work in this process, for a job that runs as the agent with its umask; None
    (nothing opened) where a file is something whose open can block (a FIFO, a socket), for the
    child to open within its timeout."""
    for path, _ in files:
        if path == os.devnull:
            continue
        try:
            st_mode = os.stat(path).st_mode
        except OSError:
            continue  # not there (made by the open), or its open fails as the child's would
        if not (stat.S_ISREG(st_mode) or stat.S_ISDIR(st_mode)):  # (a terminal's open may wait for its line too)
            return None
    out: list = []
    failed = False
    for path, mode in files:
        if failed:  # (as the child: after a failure the rest stay unopened, nothing made in vain)
            out.append(OSError(errno.ECANCELED, os.strerror(errno.ECANCELED), path))
            continue
        try:
            out.append(os.fdopen(os.open(path, _FLAGS[mode] | os.O_CLOEXEC, 0o666), _OWN.get(mode, mode)))
        except OSError as e:
            out.append(OSError(e.errno or errno.EIO, os.strerror(e.errno or errno.EIO), path))
            failed = True
    bad = None
    if workdir is not None:  # what chdir(workdir) would say
        err = 0
        try:
            if not workdir.startswith("/"):
                err = errno.ENOENT
            elif not stat.S_ISDIR(os.stat(workdir).st_mode):
                err = errno.ENOTDIR
            elif not os.access(workdir, os.X_OK):
                err = errno.EACCES
        except OSError as e:
            err = e.errno or errno.EIO
        if err:
            bad = OSError(err, os.strerror(err), workdir)
    return out, bad


def open_null(order: dict, files: list[tuple[str, str]]) -> list:
    """open_all_as for files that are all /dev/null (an srun's or salloc's allocation, `-o
    /dev/null`), without a child: the user's rights change nothing about them, and what a failed
    change into the working directory would say goes to /dev/null too (the job's shell then starts
    in /tmp, identity.LAUNCH). The job's identity is still checked (IdentityError)."""
    job_identity(order)
    return [os.fdopen(os.open(os.devnull, _FLAGS[mode] | os.O_CLOEXEC), _OWN.get(mode, mode)) for _, mode in files]


def run_as(order: dict, fn, *args: object) -> str:  # noqa: ANN001
    """`str(fn(*args))` from a forked child that has become the job's user (as the agent itself when
    the job is root's or the agent is not root), with the submitter's umask: whatever the job's input
    makes it do happens with the user's rights, and if it fails, even by crashing its process, the
    agent lives on. Raises RuntimeError with the child's error. Blocking: call it in an executor."""
    ident, umask = job_identity(order), job_umask(order)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(r)
            _become(ident, umask)
            result = fn(*args)
            os.write(w, b"" if result is None else str(result).encode())
        except BaseException as e:  # noqa: BLE001 - reported to the parent, never raised into its code
            code = 1
            try:
                os.write(w, f"{e}"[:2000].encode(errors="replace") or type(e).__name__.encode())
            except BaseException:  # noqa: BLE001
                pass
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        msg = f.read()
    _, status = os.waitpid(pid, 0)
    if status:
        raise RuntimeError(msg.decode(errors="replace") or f"failed (wait status {status})")
    return msg.decode(errors="replace")


#: the batch script and each step task start through this: it changes into the job's working directory
#: as the job's user (never as root: a directory the user may not enter stays closed), falling back to
#: /tmp as slurmstepd does, sets SLURM_TASK_PID to the pid that then execs the program ($0 "$@")
LAUNCH = 'cd -- "$1" 2>/dev/null || cd /tmp; shift; SLURM_TASK_PID=$$; export SLURM_TASK_PID; exec "$0" "$@"'


def own(path: str, order: dict) -> None:
    """Give a file the agent made for the job to the job's user (no-op when it runs as the agent)."""
    ident = job_identity(order)
    if ident is not None:
        try:
            os.chown(path, ident[0], ident[1])
        except OSError:
            pass


def own_fd(fd: int, order: dict) -> None:
    """`own` for a file the agent holds open (no name to be swapped under it)."""
    ident = job_identity(order)
    if ident is not None:
        os.fchown(fd, ident[0], ident[1])


def script_dir(order: dict) -> str | None:
    """Where a job run as another user keeps its batch script: a directory of that user's own under
    the system's temporary directory (the agent's spool may not be reachable to them); None when the
    job runs as the agent."""
    ident = job_identity(order)
    if ident is None:
        return None
    import tempfile
    # a new directory with an unpredictable name (no name a user could have put a link at), then theirs
    path = tempfile.mkdtemp(prefix=f"slurmlet-job{order['job_id']}-")
    os.chown(path, ident[0], ident[1])
    return path
