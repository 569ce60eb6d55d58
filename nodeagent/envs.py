"""Python environments for air runs (`environment.dependencies`): one virtual environment per user,
dependency set and node, built once with pip by that user and cached by the set's hash.

The environment sees the agent's own packages too (torch, say), and its own on top: it is created
with `--system-site-packages` plus a `.pth` file naming the agent's site-packages. `-r file`
entries are read relative to the run's code (`code_source.root_path`), and their contents are part
of the hash.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import site
import subprocess
import sys


class EnvError(RuntimeError):
    pass


def _requirements(deps: list[str], code_dir: str | None) -> tuple[list[str], str]:
    """pip arguments and the text that identifies the set (with the -r files' contents)."""
    args: list[str] = []
    ident: list[str] = []
    for d in deps:
        d = d.strip()
        if d.startswith("-r"):
            rel = d[2:].strip()
            path = os.path.join(code_dir or ".", rel)
            try:
                with open(path) as f:
                    ident.append(f"-r {rel}\n{f.read()}")
            except OSError as e:
                raise EnvError(f"environment.dependencies: cannot read {rel}: {e.strerror}") from None
            args += ["-r", path]
        elif d:
            ident.append(d)
            args.append(d)
    return args, json.dumps(ident)


def ensure(root: str, deps: list[str], code_dir: str | None) -> str:
    """The environment's directory under `root` (the user's cache on this node), built on first use.
    Runs as the run's user (identity.run_as): blocking, in a process of its own."""
    args, ident = _requirements(deps, code_dir)
    key = hashlib.sha256(ident.encode()).hexdigest()[:16]
    dest = os.path.join(root, key)
    with open(os.path.join(root, f"{key}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per set and node; the others wait for it
        if os.path.exists(os.path.join(dest, ".ready")):
            return dest
        tmp = f"{dest}.building"
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", tmp], check=True,
                       capture_output=True)
        py = os.path.join(tmp, "bin", "python")
        inner = subprocess.run([py, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                               text=True, check=True).stdout.strip()
        with open(os.path.join(inner, "slurmlet-agent.pth"), "w") as f:
            f.write("\n".join(site.getsitepackages()) + "\n")
        if args:
            r = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
                               capture_output=True, text=True)
            if r.returncode:
                shutil.rmtree(tmp, ignore_errors=True)
                tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-5:])
                raise EnvError(f"environment.dependencies: pip install failed:\n{tail}")
        with open(os.path.join(tmp, ".ready"), "w") as f:
            f.write(ident)
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(tmp, dest)
        return dest


def activate(env: dict[str, str], venv: str) -> None:
    env["VIRTUAL_ENV"] = venv
    env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env.get("PATH", os.defpath)
