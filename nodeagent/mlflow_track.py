"""`slurmlet mlflow start|node|end`: MLflow tracking of air runs (optional: needs mlflow installed
and MLFLOW_TRACKING_URI set; otherwise every subcommand does nothing).

An air run's job script calls `start` (one MLflow run per attempt: the experiment is the workload's,
the parameters its compute and attempt), wraps each node's command in `node` (which samples the
node's CPU, memory and, where nvidia-smi answers, GPU use every few seconds as metrics prefixed
`nodeN.`, and logs the node's log file as an artifact when the command ends), and calls `end` with
the exit code.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import Any


def _client():  # noqa: ANN202 - an MlflowClient or None
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        return None
    if uri.startswith("file:") or "://" not in uri:
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        print("slurmlet mlflow: mlflow is not installed: no tracking", file=sys.stderr)
        return None
    return MlflowClient(tracking_uri=uri)


def start() -> int:
    c = _client()
    if c is None:
        return 0
    name = os.environ.get("AIR_EXPERIMENT") or os.environ.get("SLURM_JOB_NAME") or "slurmlet"
    exp = c.get_experiment_by_name(name)
    exp_id = exp.experiment_id if exp else c.create_experiment(name)
    attempt = int(os.environ.get("SLURM_RESTART_COUNT") or 0) + 1
    run = c.create_run(exp_id, run_name=f"{os.environ.get('SLURM_JOB_ID')}-a{attempt}",
                       tags={"slurmlet.job_id": os.environ.get("SLURM_JOB_ID", ""), "slurmlet.attempt": str(attempt)})
    for key, var in (("accelerator_type", "AIR_ACCELERATOR_TYPE"), ("num_nodes", "NUM_NODES"),
                     ("job_id", "SLURM_JOB_ID"), ("nodes", "SLURM_JOB_NODELIST")):
        if os.environ.get(var):
            c.log_param(run.info.run_id, key, os.environ[var])
    c.log_param(run.info.run_id, "attempt", attempt)
    _note_run(uri=os.environ["MLFLOW_TRACKING_URI"], experiment_id=exp_id, run_id=run.info.run_id, attempt=attempt)
    print(run.info.run_id)
    return 0


def _note_run(**run) -> None:  # noqa: ANN003
    """Where this attempt's MLflow run is, for the dashboard's Runs page (`.air/JOB-aN.mlflow`, beside
    the nodes' logs, in the run's directory: the job's working directory)."""
    import json
    try:
        with open(os.path.join(".air", f"{os.environ.get('SLURM_JOB_ID')}-a{run['attempt']}.mlflow"), "w") as f:
            json.dump(run, f)
    except OSError:
        pass


def _gpu_util() -> float | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    vals = [float(x) for x in out.stdout.split() if x.replace(".", "", 1).isdigit()]
    return sum(vals) / len(vals) if out.returncode == 0 and vals else None


def node(argv: list[str]) -> int:
    """Run `argv` (after `--`); meanwhile sample this node into the MLflow run; log file at the end."""
    log_path = None
    if argv and argv[0] == "--air-log":  # the node's log of this attempt, as the air job script names it
        attempt = int(os.environ.get("SLURM_RESTART_COUNT") or 0) + 1
        log_path = os.path.join(".air", f"{os.environ.get('SLURM_JOB_ID')}-node-{os.environ.get('SLURM_NODEID', '0')}"
                                        f"-a{attempt}.log")
        argv = argv[1:]
    if argv and argv[0] == "--":
        argv = argv[1:]
    run_id = os.environ.get("MLFLOW_RUN_ID")
    c: Any = _client() if run_id else None  # an MlflowClient (mlflow has no type information)
    proc = subprocess.Popen(argv)
    done = threading.Event()
    prefix = f"node{os.environ.get('NODE_RANK', '0')}"

    def sample() -> None:
        import psutil
        step = 0
        interval = float(os.environ.get("SLURMLET_MLFLOW_INTERVAL", "5"))
        while True:
            metrics = {f"{prefix}.cpu_percent": psutil.cpu_percent(interval=None),
                       f"{prefix}.memory_percent": psutil.virtual_memory().percent}
            gpu = _gpu_util()
            if gpu is not None:
                metrics[f"{prefix}.gpu_utilization"] = gpu
            try:
                for k, v in metrics.items():
                    c.log_metric(run_id, k, v, step=step)
            except Exception:  # noqa: BLE001 - tracking must never break the run
                return
            step += 1
            if done.wait(interval):
                return
    sampler = threading.Thread(target=sample, daemon=True) if c else None
    if sampler:
        sampler.start()
    rc = proc.wait()
    done.set()
    if sampler:
        sampler.join(10)
        if log_path and os.path.exists(log_path):
            sys.stdout.flush()
            try:
                c.log_artifact(run_id, log_path, "logs")
            except Exception:  # noqa: BLE001
                pass
    return rc if rc >= 0 else 128 - rc


def end(argv: list[str]) -> int:
    c = _client()
    run_id = os.environ.get("MLFLOW_RUN_ID")
    if c is None or not run_id:
        return 0
    code = int(argv[0]) if argv and argv[0].lstrip("-").isdigit() else 0
    c.log_metric(run_id, "exit_code", code)
    c.set_terminated(run_id, "FINISHED" if code == 0 else "FAILED")
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("start", "node", "end"):
        print("usage: slurmlet mlflow start | node [--air-log] -- CMD... | end EXIT_CODE", file=sys.stderr)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "start":
        return start()
    if cmd == "node":
        return node(rest)
    return end(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
