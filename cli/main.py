"""Console-script entry points. Each imports only its own command module, lazily."""

from __future__ import annotations

import os
import sys


def leave(code: int | None) -> None:
    """A command's end: its output flushed, then the process ended at once (`os._exit`), without
    the interpreter's finalization (freeing every object of every module: 2-3 ms of each command,
    a sixth of `scontrol show job`). Nothing of a command needs it: the CLI closes the files it
    writes (`with`), starts daemon threads only, and registers no atexit hook. An output that cannot
    be flushed (a closed pipe) ends the ordinary way, which reports it as Python does."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - reported by the ordinary exit
        sys.exit(code)
    os._exit(0 if code is None else code & 0xFF if isinstance(code, int) else 1)


def _run(module: str, prog: str) -> int:
    mod = __import__(f"slurmlet.cli.{module}", fromlist=["main"])  # (importlib costs a millisecond)
    try:
        return mod.main(sys.argv[1:]) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def _cli(module: str, prog: str) -> int:
    from slurmlet.cli.http import ControllerError, Unreachable
    try:
        return _run(module, prog)
    except Unreachable as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except ControllerError as e:
        for line in e.pre:
            print(f"{prog}: error: {line}", file=sys.stderr)
        print(f"{prog}: error: {e.error}", file=sys.stderr)
        return e.code or 1


def sbatch() -> int:
    return _cli("sbatch", "sbatch")


def srun() -> int:
    return _cli("srun", "srun")


def salloc() -> int:
    return _cli("salloc", "salloc")


def sstat() -> int:
    return _cli("sstat", "sstat")


def sreport() -> int:
    return _cli("sreport", "sreport")


def sattach() -> int:
    return _cli("sattach", "sattach")


def squeue() -> int:
    return _cli("squeue", "squeue")


def scancel() -> int:
    return _cli("scancel", "scancel")


def sacct() -> int:
    return _cli("sacct", "sacct")


def scontrol() -> int:
    return _cli("scontrol", "scontrol")


def sinfo() -> int:
    return _cli("sinfo", "sinfo")


def sprio() -> int:
    return _cli("sprio", "sprio")


def air() -> int:
    return _cli("air", "air")


def sdiag() -> int:
    return _cli("sdiag", "sdiag")


def sacctmgr() -> int:
    return _cli("sacctmgr", "sacctmgr")


def sshare() -> int:
    return _cli("sshare", "sshare")


def _cli_main(fn, argv: list[str]) -> int:  # noqa: ANN001 - a command's main
    """A slurmlet subcommand that talks to the controller: its errors as one line, exit 1."""
    from slurmlet.cli.http import ControllerError, Unreachable
    try:
        return fn(argv) or 0
    except (Unreachable, ControllerError) as e:
        print(f"slurmlet: error: {getattr(e, 'error', e)}", file=sys.stderr)
        return 1


def slurmlet() -> int:
    """`slurmlet controller|agent|credd|up|down|simulate|translate|secrets|db|install-commands ...`"""
    argv = sys.argv[1:]
    usage = ("usage: slurmlet {up,down,status,controller,agent,credd,simulate,translate,secrets,db,install-commands}"
             " [options]\n\n"
             "  up          start a local cluster (a controller and N agents) and wait until its nodes are idle\n"
             "  down        stop the local cluster started by `up` (its state is kept)\n"
             "  status      name the local cluster and its daemons, or say it is not running\n"
             "  controller  run the controller (the slurmctld): REST API, scheduler, accounting\n"
             "  agent       run a node agent (the slurmd): registers the node, runs jobs and steps\n"
             "  credd       serve credentials to users who may not read the cluster key (munged's role)\n"
             "  simulate    replay a workload trace (SWF) or sacct history through the scheduler, running no jobs\n"
             "  translate   convert between an sbatch script and an AI Runtime workload YAML\n"
             "  secrets     store, list and remove secrets for air runs\n"
             "  db          database schema: upgrade, current, history\n"
             "  install-commands  link the commands (srun, sbatch, ...) into PREFIX/bin, for login shells\n\n"
             "Each takes --help for its options.\n")
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(usage)
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):  # (sbatch --version keeps Slurm's form, which tools parse)
        from importlib.metadata import version
        print(f"slurmlet {version('slurmlet')} (Slurm 22.05 compatible)")
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "controller":
        from slurmlet.controller.daemon import main
        return main(rest)
    if cmd == "agent":
        from slurmlet.nodeagent.agent import main
        return main(rest)
    if cmd == "mlflow":
        from slurmlet.nodeagent import mlflow_track
        return mlflow_track.main(rest)
    if cmd == "credd":
        from slurmlet.nodeagent import credd
        return credd.main(rest)
    if cmd == "secrets":
        from slurmlet.cli import secrets
        return _cli_main(secrets.main, rest)
    if cmd == "translate":  # the script side is the CLI's grammar, the workload side the controller's schema
        from slurmlet.cli import translate
        from slurmlet.controller.commands.translate import workload_to_sbatch
        return translate.main(rest, to_sbatch=workload_to_sbatch)
    if cmd == "simulate":
        from slurmlet.controller.commands import simulate
        return simulate.main(rest)
    if cmd == "db":
        from slurmlet.controller.commands import db
        return db.main(rest)
    if cmd == "install-commands":
        from slurmlet.cli import install_commands
        return install_commands.main(rest)
    if cmd in ("up", "down", "status"):
        from slurmlet.controller.commands import local
        return getattr(local, cmd)(rest)
    sys.stderr.write(f"slurmlet: unknown command '{cmd}'\n{usage}")
    return 2
