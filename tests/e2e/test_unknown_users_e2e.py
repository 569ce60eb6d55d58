"""Users this host does not know in -u, as 22.05 answers them (tests/data/slurm-2205-users.md):
squeue says so for each and lists the known users' jobs (none: its header alone, exit 0), sacct and
scancel refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import BIN, Cluster

pytestmark = pytest.mark.e2e

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm-2205-users.md"


def captured(command: str) -> tuple[str, int]:
    """The capture's output (stdout, then stderr) of `command` and its exit status."""
    text = DATA.read_text()
    block = text[text.index(f"$ {command}\n") + len(command) + 3:]
    block = block[:block.index("```")]
    body, _, code = block.rpartition("[exit ")
    return body, int(code.split("]")[0])


@pytest.mark.parametrize("command", ["squeue -u nosuchuser", "squeue -u 424242 -h", "sacct -u nosuchuser -X -n",
                                     "scancel -u nosuchuser"])
def test_an_unknown_user_is_answered_as_2205_answers_it(cluster: Cluster, command: str):
    r = cluster.run([str(BIN / command.split()[0]), *command.split()[1:]])
    assert (r.stdout + r.stderr, r.returncode) == captured(command)


def test_the_known_users_jobs_are_listed_beside_an_unknown_one(cluster: Cluster):
    c = cluster
    jid = c.sbatch("-H", "-J", "known", "--wrap", "true")
    try:
        r = c.run([str(BIN / "squeue"), "-h", "-u", "root,nosuchuser", "-o", "%i %j"])
        assert (r.returncode, r.stdout.split("\n")[0], r.stderr) == \
            (0, f"{jid} known", "squeue: error: Invalid user: nosuchuser\n\n")
    finally:
        c.run([str(BIN / "scancel"), str(jid)])
