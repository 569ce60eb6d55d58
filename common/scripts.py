"""Prolog and Epilog scripts, run by the agents (Prolog/Epilog) and by the controller
(PrologSlurmctld/EpilogSlurmctld) alike: Slurm's list-and-glob syntax, each script in a session of
its own with a time limit, and the exit-code variables an epilog sees. Stdlib only."""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import signal


def session_pids(sid: int) -> list[int]:
    """Every live process whose session id is `sid` (the job's whole tree)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            if os.getsid(pid) == sid:
                out.append(pid)
        except (ProcessLookupError, PermissionError):
            continue
    return out


def signal_session(sid: int, sig: int) -> None:
    for pid in session_pids(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def exit_code_env(code: int, sig: int) -> dict[str, str]:
    """An epilog's SLURM_JOB_EXIT_CODE (the wait(2) status) and SLURM_JOB_EXIT_CODE2 (`exit:signal`)."""
    return {"SLURM_JOB_EXIT_CODE": str(sig if sig else code << 8), "SLURM_JOB_EXIT_CODE2": f"{code}:{sig}"}


def script_paths(spec: str) -> list[str]:
    """Prolog=/Epilog= as Slurm 22.05 reads them: comma-separated paths, each possibly a glob
    (`/etc/slurm/prolog.d/*`, expanded here, on the node, in sorted order)."""
    out: list[str] = []
    for item in (x.strip() for x in spec.split(",")):
        if any(ch in item for ch in "*?["):
            out += sorted(glob.glob(item))
        elif item:
            out.append(item)
    return out


async def run_scripts(spec: str, env: dict[str, str], timeout: float = 300.0) -> tuple[int, str]:
    """Each script of a Prolog/Epilog list in order; the first that fails stops the rest and is the
    result (its exit code, and its output after its path)."""
    outs = []
    for path in script_paths(spec):
        code, out = await run_script(path, env, timeout)
        if code:
            return code, f"{path}: {out}"
        outs.append(out)
    return 0, "".join(outs)


async def run_script(path: str, env: dict[str, str], timeout: float = 300.0) -> tuple[int, str]:
    """A Prolog or Epilog: its exit code (a timeout or an unreadable script counts as 1) and output."""
    try:
        proc = await asyncio.create_subprocess_exec(path, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                                                    start_new_session=True, cwd="/")
    except OSError as e:
        return 1, str(e)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        signal_session(proc.pid, signal.SIGKILL)
        return 1, "timed out"
    except BaseException:  # cancelled (a controller that stops being active): nothing of it outlives its run
        signal_session(proc.pid, signal.SIGKILL)
        raise
    rc = proc.returncode or 0  # communicate() returns once the process has exited
    return rc if rc >= 0 else 128 - rc, out.decode(errors="replace")
