"""`slurmlet install-commands`: plain links PREFIX/bin/NAME -> this slurmlet's installed commands, the
administrator's step for login shells; never over a file it did not make (unless --force), and
--remove takes away its own links only."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import BIN

COMMANDS = {"slurmlet", "sbatch", "srun", "salloc", "sstat", "sreport", "sattach", "squeue", "scancel", "sacct",
            "scontrol", "sinfo", "sprio", "sdiag", "sacctmgr", "sshare", "air"}


def install(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "slurmlet"), "install-commands", *argv], capture_output=True, text=True,
                          timeout=60)


def test_links_every_command_to_the_installed_one(tmp_path: Path):
    r = install("--prefix", str(tmp_path))
    assert r.returncode == 0, r.stderr
    bindir = tmp_path / "bin"
    assert {p.name for p in bindir.iterdir()} == COMMANDS
    for p in bindir.iterdir():
        assert p.is_symlink() and os.readlink(p) == str(BIN / p.name)
    assert sorted(r.stdout.splitlines()) == sorted(f"{bindir / n} -> {BIN / n}" for n in COMMANDS)
    # the link runs the command, found by name on a PATH that has only the prefix's bin
    r = subprocess.run(["sh", "-c", "command -v sinfo; sinfo --version"], capture_output=True, text=True,
                       env={"PATH": f"{bindir}:/usr/bin:/bin"}, timeout=60)
    version = subprocess.run([str(BIN / "sinfo"), "--version"], capture_output=True, text=True, timeout=60).stdout
    assert r.stdout.splitlines() == [str(bindir / "sinfo"), version.strip()], r.stderr
    again = install("--prefix", str(tmp_path))  # nothing left to do
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


def test_a_file_it_did_not_make_is_kept_unless_forced(tmp_path: Path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "srun").write_text("#!/bin/sh\necho another Slurm\n")
    (bindir / "squeue").symlink_to("/usr/bin/squeue")  # a link, but not to this slurmlet
    r = install("--prefix", str(tmp_path))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"slurmlet install-commands: error: {bindir / 'squeue'} exists and is not a link to {BIN / 'squeue'} "
        "(--force replaces it)",
        f"slurmlet install-commands: error: {bindir / 'srun'} exists and is not a link to {BIN / 'srun'} "
        "(--force replaces it)",
        "slurmlet install-commands: nothing linked"]
    assert sorted(p.name for p in bindir.iterdir()) == ["squeue", "srun"]  # nothing linked
    assert (bindir / "srun").read_text().endswith("another Slurm\n") and os.readlink(bindir / "squeue") == "/usr/bin/squeue"
    r = install("--prefix", str(tmp_path), "--force")
    assert r.returncode == 0, r.stderr
    assert os.readlink(bindir / "srun") == str(BIN / "srun") and os.readlink(bindir / "squeue") == str(BIN / "squeue")


def test_remove_takes_away_its_own_links_only(tmp_path: Path):
    assert install("--prefix", str(tmp_path)).returncode == 0
    bindir = tmp_path / "bin"
    (bindir / "srun").unlink()
    (bindir / "srun").write_text("#!/bin/sh\n")  # an administrator's own srun since
    (bindir / "sinfo").unlink()
    (bindir / "sinfo").symlink_to("/usr/bin/sinfo")
    (bindir / "other").write_text("")
    r = install("--prefix", str(tmp_path), "--remove")
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == sorted(f"removed {bindir / n}" for n in COMMANDS - {"srun", "sinfo"})
    assert sorted(p.name for p in bindir.iterdir()) == ["other", "sinfo", "srun"]
    assert install("--prefix", str(tmp_path), "--remove").stdout == ""


def test_commands_already_installed_in_the_prefix_are_left_as_they_are(tmp_path: Path):
    """slurmlet installed into the prefix itself (`pip install` into /usr/local, as the compose image
    does): its commands are already there, nothing is linked or changed."""
    before = {p.name: p.stat().st_mtime_ns for p in BIN.iterdir()}
    r = install("--prefix", str(BIN.parent))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert {p.name: p.stat().st_mtime_ns for p in BIN.iterdir()} == before
    assert not any((BIN / n).is_symlink() for n in COMMANDS)
