"""`slurmlet install-commands [--prefix DIR] [--force] [--remove]`: the administrator's step that puts
slurmlet's commands on the system's search path.

    slurmlet install-commands --prefix /usr/local           PREFIX/bin/NAME -> this slurmlet's NAME
    slurmlet install-commands --prefix /usr/local --remove  those links removed, nothing else

A login shell (`#!/bin/bash -l`) starts over with the PATH of /etc/profile, and a shell started with
`env -i` has the default one: neither keeps the directory of slurmlet's commands that a job's PATH
carries when slurmlet lives in a virtual environment. This makes plain symbolic links under a
directory on that path, as installers do; no daemon writes there. The commands are those this
slurmlet's installation recorded (its launchers: srun, sbatch, ..., slurmlet). A file of that name
that is not such a link (another Slurm's `srun`, a link to another slurmlet) is left alone and
nothing is linked, unless --force replaces it; --remove takes away only links to this slurmlet's
commands. Where a command already is the installed one (slurmlet installed into PREFIX itself),
there is nothing to link.
"""

from __future__ import annotations

import os
import sys
from importlib import metadata

from slurmlet.common.oneline import Parser

PROG = "slurmlet install-commands"


def installed_commands() -> list[str]:
    """The absolute paths of this slurmlet's commands, as its installation recorded them: the
    launchers, the files it put outside its package directory."""
    try:
        files = metadata.distribution("slurmlet").files or []
    except metadata.PackageNotFoundError:
        return []
    paths = (os.path.normpath(str(f.locate())) for f in files if f.parts and f.parts[0] == "..")
    return sorted(p for p in paths if os.path.isfile(p) and os.access(p, os.X_OK))


def _ours(link: str, target: str) -> bool:
    return os.path.islink(link) and os.readlink(link) == target


def _is_the_command(link: str, target: str) -> bool:
    """`link` is the command itself (slurmlet installed into this prefix): nothing to link."""
    try:
        return not os.path.islink(link) and os.path.samefile(link, target)
    except OSError:
        return False


def install(commands: list[str], bindir: str, *, force: bool) -> tuple[list[str], list[str]]:
    """Link bindir/NAME to each command. Returns (links made, refusals); with a refusal (a file there
    that is not ours, and no `force`; a directory, even with it) nothing is linked."""
    todo, refused = [], []
    for target in commands:
        link = os.path.join(bindir, os.path.basename(target))
        if _ours(link, target) or _is_the_command(link, target):
            continue
        if os.path.isdir(link) and not os.path.islink(link):
            refused.append(f"{link} is a directory")
        elif os.path.lexists(link) and not force:
            refused.append(f"{link} exists and is not a link to {target} (--force replaces it)")
        else:
            todo.append((link, target))
    if refused:
        return [], refused
    os.makedirs(bindir, mode=0o755, exist_ok=True)
    for link, target in todo:
        tmp = f"{link}.slurmlet-{os.getpid()}"
        os.symlink(target, tmp)
        try:
            os.replace(tmp, link)  # (a file replaced under --force is never missing meanwhile)
        except OSError:
            os.remove(tmp)
            raise
    return [link for link, _ in todo], []


def remove(commands: list[str], bindir: str) -> list[str]:
    """Remove bindir's links to these commands; any other file is left. Returns the links removed."""
    gone = []
    for target in commands:
        link = os.path.join(bindir, os.path.basename(target))
        if _ours(link, target):
            os.remove(link)
            gone.append(link)
    return gone


def main(argv: list[str]) -> int:
    ap = Parser(prog=PROG, description="Link slurmlet's commands (srun, sbatch, ...) into PREFIX/bin, on the "
                "search path that login shells and `env -i` shells get; --remove takes the links away.")
    ap.add_argument("--prefix", default="/usr/local", help="the links go to PREFIX/bin (default /usr/local)")
    ap.add_argument("--force", action="store_true", help="replace files of those names that are not links made here")
    ap.add_argument("--remove", action="store_true", help="remove the links to this slurmlet's commands")
    args = ap.parse_args(argv)
    commands = installed_commands()
    if not commands:
        print(f"{PROG}: error: slurmlet's installation records no commands (it is not installed with pip)",
              file=sys.stderr)
        return 1
    bindir = os.path.join(os.path.abspath(args.prefix), "bin")
    try:
        if args.remove:
            for link in remove(commands, bindir):
                print(f"removed {link}")
            return 0
        made, refused = install(commands, bindir, force=args.force)
    except OSError as e:
        print(f"{PROG}: error: {e.filename or bindir}: {e.strerror or e}", file=sys.stderr)
        return 1
    for why in refused:
        print(f"{PROG}: error: {why}", file=sys.stderr)
    if refused:
        print(f"{PROG}: nothing linked", file=sys.stderr)
        return 1
    for link in made:
        print(f"{link} -> {os.readlink(link)}")
    return 0
