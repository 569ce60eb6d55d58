"""cli.main.leave: a command's end without the interpreter's finalization loses no output and keeps
the exit status."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

#: stdout block-buffered, as a command's is when it writes to a pipe (unless PYTHONUNBUFFERED)
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}

SNIPPET = """if True:
    import sys
    from slurmlet.cli.main import leave
    for _ in range(1000):
        sys.stdout.write("x" * 100)  # (more than one buffer: the last of it not written yet)
    sys.stdout.write("\\n")
    sys.stderr.write("done")
    leave(CODE)
"""


@pytest.mark.parametrize("code, status", [(None, 0), (0, 0), (3, 3), (255, 255), (256, 0), (-1, 255)])
def test_the_output_comes_whole_and_the_status_is_sys_exits(code, status):
    r = subprocess.run([sys.executable, "-c", SNIPPET.replace("CODE", repr(code))], capture_output=True, text=True,
                       timeout=60, env=BUFFERED)
    assert r.stdout == "x" * 100000 + "\n" and r.stderr == "done"
    assert r.returncode == status
    ordinary = subprocess.run([sys.executable, "-c", f"import sys; sys.exit({code})"], timeout=60)
    assert ordinary.returncode == status


def test_an_output_that_cannot_be_flushed_ends_the_ordinary_way():
    """stdout closed by its reader before the command ends (`squeue | head -1`): Python's own exit
    reports it (status 120), as without `leave`."""
    snippet = "import sys\nfrom slurmlet.cli.main import leave\nsys.stdout.write('x')\nsys.stdin.readline()\nleave(0)\n"
    p = subprocess.Popen([sys.executable, "-c", snippet], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=BUFFERED)
    p.stdout.close()  # nobody reads: the flush fails with EPIPE
    p.stdin.write(b"go\n")
    p.stdin.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 120 and "BrokenPipeError" in err, (p.returncode, err)
