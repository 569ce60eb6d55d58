"""Two versions of slurmlet side by side: each one's wheel on a local cluster of its own, measured in
alternating rounds of the same run, so that the machine's drift (the floor, `python3 -c pass`, moves
by several milliseconds from one minute to the next here) falls on both alike.

    .venv/bin/python bench/compare.py OLD_TREE [NEW_TREE] [--rounds 3]

OLD_TREE and NEW_TREE are checkouts (NEW_TREE: this one), e.g. `git worktree add /tmp/old HEAD~5`.
Each is built into a wheel and installed into its own virtual environment (TREE/build/compare-venv).
Prints, for each version, the medians over the rounds of: the floor, back-to-back `sbatch --wrap
true`, submit -> script running, `srun -N1 true` and `squeue` with 1,000 held jobs queued.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loadgen


def install(tree: Path) -> Path:
    """TREE/build/compare-venv/bin, with TREE's wheel installed (built and installed anew)."""
    venv, wheels = tree / "build" / "compare-venv", tree / "build" / "compare-wheel"
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    for old in wheels.glob("*.whl"):
        old.unlink()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(tree)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                    str(next(wheels.glob("slurmlet-*.whl")))], check=True)
    return venv / "bin"


class Cluster:
    def __init__(self, bin_dir: Path):
        self.bin, self.state = bin_dir, tempfile.mkdtemp(prefix="slurmlet-compare-")
        r = subprocess.run([str(bin_dir / "slurmlet"), "up", "--nodes", "2", "--cpus-per-node", "8",
                            "--state-dir", self.state, "--port", "0"], capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"slurmlet up failed: {r.stderr}")
        self.env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        for line in r.stdout.splitlines():
            k, _, v = line.removeprefix("export ").partition("=")
            if k.startswith("SLURMLET_"):
                self.env[k] = v
        self.work = Path(self.state) / "work"
        self.work.mkdir()

    def timed(self, *argv: str) -> float:
        t = time.perf_counter()
        subprocess.run([str(self.bin / argv[0]), *argv[1:]], stdout=subprocess.DEVNULL, env=self.env, cwd=self.work)
        return time.perf_counter() - t

    def submit_to_running(self, n: int) -> list[float]:
        out = []
        for _ in range(n):
            self.stamps = getattr(self, "stamps", 0) + 1  # (a new name each time: rounds call this again)
            stamp = self.work / f"stamp{self.stamps}"
            t0 = time.time()
            subprocess.run([str(self.bin / "sbatch"), "--wrap", f"date +%s.%N > {stamp}"], stdout=subprocess.DEVNULL,
                           env=self.env, cwd=self.work)
            deadline = time.monotonic() + 30
            while not (stamp.exists() and stamp.read_text().strip()) and time.monotonic() < deadline:
                time.sleep(0.002)
            out.append(float(stamp.read_text()) - t0)
            time.sleep(0.1)  # (an idle cluster each time)
        return out

    def fill(self, held: int) -> None:
        key = Path(self.env["SLURMLET_KEY_FILE"]).read_bytes().strip()
        asyncio.run(loadgen.submit(self.env["SLURMLET_CONTROLLER"], key, loadgen.job_body(str(self.work)), held,
                                   batch=500))

    def daemons_cpu(self) -> tuple[float, float]:
        """CPU seconds (user and system) the controller and the agents have used so far."""
        import json

        import psutil
        pids = json.loads((Path(self.state) / "pids.json").read_text())
        cpu = {k: sum(psutil.Process(p).cpu_times()[:2]) for k, p in pids.items()}
        return cpu["controller"], sum(v for k, v in cpu.items() if k.startswith("agent"))

    def wait_idle(self) -> None:
        """Until no job is pending or running (those sbatch made have ended), 60 s at most."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            r = subprocess.run([str(self.bin / "squeue"), "-h", "-t", "PD,R,CG"], capture_output=True, text=True,
                               env=self.env, cwd=self.work)
            if not r.stdout.strip():
                return
            time.sleep(0.5)  # (each look costs the controller too: few of them)

    def down(self) -> None:
        subprocess.run([str(self.bin / "slurmlet"), "down", "--state-dir", self.state], capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path, nargs="?", default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    names = {"old": args.old.resolve(), "new": args.new.resolve()}
    clusters = {k: Cluster(install(tree)) for k, tree in names.items()}
    got: dict[str, dict[str, list[float]]] = {k: {} for k in names}
    ms = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    try:
        for phase in ("idle", "1,000 held"):
            if phase != "idle":
                for c in clusters.values():
                    c.fill(1000)
            for _ in range(args.rounds):
                for k, c in clusters.items():  # alternating: the same drift for both
                    row = got[k]
                    row.setdefault("floor", []).append(ms([c.timed("python", "-c", "pass") for _ in range(15)]))
                    if phase == "idle":
                        cpu = c.daemons_cpu()
                        row.setdefault("sbatch back to back", []).append(
                            ms([c.timed("sbatch", "--wrap", "true") for _ in range(15)]))
                        c.wait_idle()
                        # (CPU seconds, not wall: what the machine's other work does not move)
                        for who, before, after in zip(("controller", "agents"), cpu, c.daemons_cpu()):
                            row.setdefault(f"{who} CPU per job", []).append((after - before) / 15 * 1000)
                        row.setdefault("submit -> running", []).append(ms(c.submit_to_running(10)))
                        row.setdefault("srun -N1 true", []).append(ms([c.timed("srun", "-N1", "true") for _ in range(10)]))
                    else:
                        row.setdefault("squeue, 1,000 held", []).append(ms([c.timed("squeue") for _ in range(10)]))
    finally:
        for c in clusters.values():
            c.down()
    print(f"\nmedians over {args.rounds} alternating rounds (ms); old: {names['old']}, new: {names['new']}")
    for what in got["old"]:
        print(f"{what:<24} {statistics.median(got['old'][what]):>8.1f} {statistics.median(got['new'][what]):>8.1f}")


if __name__ == "__main__":
    main()
