"""Jobs run as the user who submitted them, when the agent can arrange it (it runs as root).

`spawn_kwargs(order)` gives asyncio.create_subprocess_exec the user, group and supplementary
groups of the job's uid; `open_as(path, mode, order)` opens the job's output, error and input
files with that user's rights (never root's: `-o /etc/shadow` is the user's problem, not the
system's); `own(path, order)` hands a file the agent created for the job (its script) to that user. An agent that is not root runs every job as itself, as before.
"""

from __future__ import annotations

import os
import pwd


def job_identity(order: dict) -> tuple[int, int, list[int]] | None:
    """(uid, gid, groups) to run the job as, or None to run it as the agent itself: when the agent
    is not root, when the job is root's, or when its uid is unknown on this node."""
    uid = order.get("uid")
    if os.geteuid() != 0 or not isinstance(uid, int) or uid == 0:
        return None
    try:
        pw = pwd.getpwuid(uid)
    except KeyError:
        return None
    gid = order.get("gid") if isinstance(order.get("gid"), int) else pw.pw_gid
    try:
        groups = os.getgrouplist(pw.pw_name, gid)
    except OSError:
        groups = [gid]
    return uid, gid, groups


def spawn_kwargs(order: dict) -> dict:
    ident = job_identity(order)
    if ident is None:
        return {}
    uid, gid, groups = ident
    return {"user": uid, "group": gid, "extra_groups": groups}


def open_as(path: str, mode: str, order: dict):  # noqa: ANN201 - a file object
    """`open(path, mode)` with the rights of the job's user: a job may only write (or read, for its
    stdin) what its user may, although the agent runs as root. The file is opened by a child
    process that has become the user and sent back over a socket pair (SCM_RIGHTS); a file it
    creates is the user's. Raises OSError as open() does. As the agent itself: a plain open()."""
    ident = job_identity(order)
    if ident is None:
        return open(path, mode)
    import socket
    flags = {"rb": os.O_RDONLY, "wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
             "ab": os.O_WRONLY | os.O_CREAT | os.O_APPEND}[mode]
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:  # only system calls here, then _exit: safe in a threaded parent
        code = 0
        try:
            parent.close()
            uid, gid, groups = ident
            os.setgroups(groups)
            os.setgid(gid)
            os.setuid(uid)
            fd = os.open(path, flags | os.O_CLOEXEC, 0o666)
            socket.send_fds(child, [b"ok"], [fd])
        except OSError as e:
            child.sendall(f"{e.errno or 0}".encode())
        except BaseException:  # noqa: BLE001 - never return into the parent's code
            code = 1
        finally:
            os._exit(code)
    child.close()
    try:
        msg, fds, _flags, _addr = socket.recv_fds(parent, 64, 1)
    finally:
        parent.close()
        os.waitpid(pid, 0)
    if not fds:  # the child sent the errno of its failure instead (EIO when it could not say)
        errno = int(msg) if msg.isdigit() and int(msg) else 5
        raise OSError(errno, os.strerror(errno), path)
    return os.fdopen(fds[0], mode)


def own(path: str, order: dict) -> None:
    """Give a file the agent made for the job to the job's user (no-op when it runs as the agent)."""
    ident = job_identity(order)
    if ident is not None:
        try:
            os.chown(path, ident[0], ident[1])
        except OSError:
            pass


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
