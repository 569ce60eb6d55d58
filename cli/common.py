"""Helpers shared by the query commands: users, job-state names, id lists."""

from __future__ import annotations

import os

JOB_STATES = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
              "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "COMPLETING", "CONFIGURING", "RESIZING",
              "RESV_DEL_HOLD", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "REVOKED", "SIGNALING",
              "SPECIAL_EXIT", "STAGE_OUT", "STOPPED")
STATE_ABBREV = {"PD": "PENDING", "R": "RUNNING", "S": "SUSPENDED", "CD": "COMPLETED", "CA": "CANCELLED",
                "F": "FAILED", "TO": "TIMEOUT", "NF": "NODE_FAIL", "PR": "PREEMPTED", "BF": "BOOT_FAIL",
                "DL": "DEADLINE", "OOM": "OUT_OF_MEMORY", "CG": "COMPLETING", "CF": "CONFIGURING",
                "RQ": "REQUEUED", "RH": "REQUEUE_HOLD", "RS": "RESIZING", "RV": "REVOKED", "SI": "SIGNALING",
                "SE": "SPECIAL_EXIT", "SO": "STAGE_OUT", "ST": "STOPPED"}
DEFAULT_QUEUE_STATES = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING")


def parse_states(value: str) -> list[str] | None:
    """`-t` values (names or abbreviations, comma-separated; `all`) -> names; None for all.

    Raises ValueError(bad_token) for an unknown state.
    """
    out: list[str] = []
    for tok in value.split(","):
        t = tok.strip().upper()
        if not t:
            continue
        if t == "ALL":
            return None
        name = STATE_ABBREV.get(t, t)
        if name not in JOB_STATES:
            raise ValueError(tok)
        out.append(name)
    return out


def current_user() -> str:
    import pwd
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return os.environ.get("USER") or str(os.getuid())


def user_name(user: str) -> str | None:
    """A user named by name or uid, as its name; None for a user this host does not know."""
    import pwd
    try:
        return pwd.getpwuid(int(user)).pw_name if user.isdigit() else pwd.getpwnam(user).pw_name
    except (KeyError, OverflowError):
        return None


def known_users(given: list[str], prog: str, message: str, end: str = "\n") -> list[str] | None:
    """The users of -u by name, each one this host does not know said as `PROG: error: MESSAGE: USER`
    on stderr; None when it knew none of them (22.05's squeue then lists no job, scancel refuses)."""
    import sys
    out = []
    for u in given:
        name = user_name(u)
        if name is None:
            print(f"{prog}: error: {message}: {u}", file=sys.stderr, end=end)
        else:
            out.append(name)
    return out if out or not given else None


def split_list(values: list[str]) -> list[str]:
    return [x for v in values for x in v.split(",") if x]


def command_options(prog: str, argv: list[str], table: list, usage: str,
                    help_hint: bool = True) -> tuple[dict[str, list], list[str]] | int:
    """Parse a query command's options into {key: [values in order]} and positionals.

    Answers --version and --help/--usage itself, and prints getopt's errors: an int return is
    the exit status to return at once.
    """
    import sys

    from slurmlet.cli.argv import UsageError, parse
    try:
        pairs, pos = parse(prog, argv, table, help_hint=help_hint)
    except UsageError as e:
        sys.stderr.write("\n".join(e.lines) + "\n")
        return e.code
    o: dict[str, list] = {}
    for k, v in pairs:
        o.setdefault(k, []).append(v)
    if "version" in o:
        print("slurm-wlm 22.05.8")
        return 0
    if "help" in o or "usage" in o:  # 22.05's own text (cli/help/); `usage` where it has none
        from slurmlet.cli.helptext import text
        try:
            sys.stdout.write(text(prog, "help" if "help" in o else "usage"))
        except OSError:
            print(usage)
        return 0
    return o, pos


def start_thread(target, *args: object):  # noqa: ANN001, ANN201 - a threading.Thread
    """Start a daemon thread that never takes the process's signals. Linux hands a signal sent to
    the process to any thread not blocking it, and it passes over a main thread that already has one
    pending (a Ctrl-C then a SIGTERM): Python runs its handlers in the main thread only, and one
    blocked in a system call (waitpid, read) is woken only by a signal delivered to itself. So the
    thread starts with the signals blocked (a new thread inherits its creator's mask)."""
    import signal
    import threading
    every = signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, every)
    t = threading.Thread(target=target, args=args, daemon=True)
    try:
        t.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return t
