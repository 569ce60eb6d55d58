"""`air run` packs the code, not what runs left beside it: .git, .air and what git ignores stay out."""

from __future__ import annotations

import base64
import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from slurmlet.cli.air import pack


def names(packed: str) -> set[str]:
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(packed)), mode="r:gz") as tar:
        return {m.name for m in tar.getmembers()}


def tree(root: Path) -> None:
    for rel in ("train.py", "sub/keep.txt", "checkpoints/ckpt-20.pt", "run.log", ".air/7-node-0-a1.log"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")


@pytest.mark.skipif(not shutil.which("git"), reason="git is not installed")
def test_what_git_ignores_is_not_packed(tmp_path: Path):
    tree(tmp_path)
    (tmp_path / ".gitignore").write_text("checkpoints/\n*.log\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert names(pack(str(tmp_path))) == {".", "./.gitignore", "./train.py", "./sub", "./sub/keep.txt"}
    # a code root below the work tree's top: its paths are still its own
    assert names(pack(str(tmp_path / "sub"))) == {".", "./keep.txt"}


def test_outside_git_only_git_and_air_stay_out(tmp_path: Path):
    tree(tmp_path)
    (tmp_path / ".git").mkdir()  # not a repository: just a directory of that name
    assert names(pack(str(tmp_path))) == {".", "./train.py", "./sub", "./sub/keep.txt", "./checkpoints",
                                          "./checkpoints/ckpt-20.pt", "./run.log"}
