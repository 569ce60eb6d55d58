"""air: the AI Runtime's commands over slurmlet's API (a run is a job like any other).

    air run --file train.yaml [--override key.path=value ...] [--watch] [--dry-run]
    air list [runs]
    air get [run] ID [--json]
    air logs ID [--node N] [--follow]
    air cancel ID
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from slurmlet.cli import http
from slurmlet.common.oneline import Parser

PROG = "air"
STATUS = {"PENDING": "QUEUED", "RUNNING": "RUNNING", "SUSPENDED": "SUSPENDED", "COMPLETING": "RUNNING",
          "COMPLETED": "SUCCEEDED", "FAILED": "FAILED", "TIMEOUT": "FAILED", "NODE_FAIL": "FAILED",
          "OUT_OF_MEMORY": "FAILED", "BOOT_FAIL": "FAILED", "DEADLINE": "FAILED", "CANCELLED": "CANCELLED",
          "PREEMPTED": "CANCELLED"}
ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")


def _fail(msg: str, code: int = 2) -> int:
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    return code


def status(job: dict) -> str:
    return STATUS.get(job["state"], job["state"])


def _set_path(doc: dict, path: str, value: object) -> None:
    keys = path.split(".")
    for k in keys[:-1]:
        nxt = doc.get(k)
        if not isinstance(nxt, dict):
            nxt = doc[k] = {}
        doc = nxt
    doc[keys[-1]] = value


def load_workload(path: str, overrides: list[str]) -> dict:
    """The YAML file with `--override key.path=value` applied (values read as YAML scalars)."""
    import yaml
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ValueError(f"{path}: invalid YAML: {getattr(e, 'problem', None) or e}{where}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a mapping of workload fields")
    for ov in overrides:
        key, eq, raw = ov.partition("=")
        if not eq or not key or any(not p for p in key.split(".")):
            raise ValueError(f"--override {ov!r}: expected key.path=value")
        try:
            value = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError:
            value = raw
        _set_path(doc, key, value)
    return doc


def _run(args: argparse.Namespace) -> int:
    try:
        doc = load_workload(args.file, args.override or [])
    except ValueError as e:
        return _fail(str(e))
    from slurmlet.cli.common import current_user
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if uri and isinstance(doc.get("env_variables", {}), dict):  # the run is tracked where the user tracks
        doc.setdefault("env_variables", {}).setdefault("MLFLOW_TRACKING_URI", uri)
    cwd = os.getcwd()
    body = {"workload": doc, "cwd": cwd, "user": current_user(), "uid": os.getuid(), "gid": os.getgid(),
            "group": str(os.getgid()), "host": os.uname().nodename, "dry_run": args.dry_run}
    if args.dry_run:
        got = http.request("POST", "/api/v1/runs", body)
        sys.stdout.write(got["sbatch"])
        return 0
    os.makedirs(os.path.join(cwd, ".air"), exist_ok=True)  # the run's logs go there
    code = doc.get("code_source")
    if isinstance(code, dict):
        root = os.path.join(os.path.dirname(os.path.abspath(args.file)), str(code.get("root_path") or "."))
        try:
            body["code"] = http.request("POST", "/api/v1/code", {"data": pack(root), "uid": os.getuid()},
                                        timeout=300)["id"]
        except OSError as e:
            return _fail(f"code_source.root_path: cannot pack {root}: {e.strerror or e}")
    run_id = http.submit_once("/api/v1/runs", body)["job_id"]  # a retry after a lost answer: the same run
    print(run_id)
    sys.stdout.flush()
    return _watch(run_id) if args.watch else 0


def git_ignored(root: str) -> tuple[set[str], tuple[str, ...]]:
    """What git ignores under `root` (its .gitignore files, .git/info/exclude, the global excludes):
    (files, directories ending in /), relative to `root`; nothing when `root` is in no git work tree
    or git is missing."""
    import subprocess
    try:
        r = subprocess.run(["git", "-C", root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard",
                            "--directory"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return set(), ()
    if r.returncode != 0:
        return set(), ()
    paths = [p.decode("utf-8", "surrogateescape") for p in r.stdout.split(b"\0") if p]
    return {p for p in paths if not p.endswith("/")}, tuple(p for p in paths if p.endswith("/"))


def pack(root: str) -> str:
    """`root` as a .tar.gz, base64: what each node unpacks as CODE_SOURCE_PATH. Left out: `.git`,
    `.air` (the runs' logs) and whatever git ignores there (checkpoints, caches, outputs of earlier
    runs), so that a run gets the code, not what runs left beside it."""
    import base64
    import io
    import tarfile
    if not os.path.isdir(root):
        raise FileNotFoundError(2, "not a directory", root)
    files, dirs = git_ignored(root)

    def keep(ti: tarfile.TarInfo) -> tarfile.TarInfo | None:
        rel = ti.name[2:] if ti.name.startswith("./") else ""
        parts = rel.split("/")
        if ".git" in parts or parts[0] == ".air" or rel in files or (rel + "/").startswith(dirs):
            return None
        return ti

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(root, arcname=".", filter=keep)
    return base64.b64encode(buf.getvalue()).decode()


def _log_path(job: dict, node: int, attempt: int | None = None) -> str:
    """Node `node`'s log of an attempt (default: the latest)."""
    attempt = attempt or (job.get("restarts") or 0) + 1
    return os.path.join(job.get("submit_dir") or job.get("workdir") or ".", ".air",
                        f"{job['job_id']}-node-{node}-a{attempt}.log")


def _watch(run_id: int) -> int:
    """Status changes, and node 0's log as it grows, until the run ends; exit 0 if it succeeded."""
    last = None
    pos = 0
    attempt = 1
    while True:
        job = http.request("GET", f"/api/v1/jobs/{run_id}?wait=0.5", timeout=60)
        st = status(job)
        if (job.get("restarts") or 0) + 1 != attempt:  # a retry: finish the last attempt's log first
            _copy_from(_log_path(job, 0, attempt), pos)
            attempt, pos = (job.get("restarts") or 0) + 1, 0
        if st != last:
            attempt = (job.get("restarts") or 0) + 1
            print(f"[air] run {run_id}: {st}" + (f" (attempt {attempt})" if attempt > 1 else ""), file=sys.stderr)
            last = st
        pos = _copy_from(_log_path(job, 0), pos)
        if st in ENDED:
            _copy_from(_log_path(job, 0), pos)
            return 0 if st == "SUCCEEDED" else 1


def _copy_from(path: str, pos: int) -> int:
    try:
        with open(path, "rb") as f:
            f.seek(pos)
            data = f.read()
    except OSError:
        return pos
    if data:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return pos + len(data)


def _duration(job: dict, now: float) -> str:
    start = job.get("start_time")
    if not start or job["state"] == "PENDING":
        return "-"
    secs = int((job.get("end_time") or now) - start)
    return f"{secs // 3600}:{secs // 60 % 60:02d}:{secs % 60:02d}"


def accelerators(job: dict) -> str:
    comment = job.get("comment") or ""
    if comment.startswith("air: "):
        return comment.split()[1]
    gpus = (job.get("gpus_per_node") or 0) * (job.get("num_nodes") or 1)
    return str(gpus) if gpus else "-"


def _list(args: argparse.Namespace) -> int:
    runs = http.request("GET", "/api/v1/runs")["runs"]
    now = time.time()
    rows = [("ID", "EXPERIMENT", "STATUS", "ACCELERATORS", "CREATED", "DURATION")]
    for jid, name, state, gpus, submit, start, end in runs:
        j = {"state": state, "start_time": start, "end_time": end}
        rows.append((str(jid), name, STATUS.get(state, state), gpus,
                     time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(submit)), _duration(j, now)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    return 0


def _job(run_id: str) -> dict:
    if not run_id.isdigit():
        raise http.ControllerError(400, f"invalid run id {run_id}", code=2)
    return http.request("GET", f"/api/v1/jobs/{int(run_id)}")


def _get(args: argparse.Namespace) -> int:
    job = _job(args.id)
    view = {"id": job["job_id"], "experiment": job["name"], "status": status(job), "state": job["state"],
            "reason": job.get("reason"), "accelerators": accelerators(job), "attempts": (job.get("restarts") or 0) + 1,
            "nodes": job.get("node_list") or [], "created": job.get("submit_time"), "started": job.get("start_time"),
            "ended": job.get("end_time"), "duration": _duration(job, time.time()),
            "exit_code": f"{job.get('exit_code', 0)}:{job.get('exit_signal', 0)}",
            "logs": [_log_path(job, i) for i in range(len(job.get("node_list") or []))]}
    if args.json:
        print(json.dumps(view, indent=2))
        return 0
    width = max(len(k) for k in view)
    for k, v in view.items():
        if isinstance(v, float):
            v = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(v))
        elif isinstance(v, list):
            v = ", ".join(map(str, v)) or "-"
        print(f"{k + ':':<{width + 1}} {'-' if v is None else v}")
    return 0


def _logs(args: argparse.Namespace) -> int:
    job = _job(args.id)
    attempts = (job.get("restarts") or 0) + 1
    if args.attempt is not None and not 1 <= args.attempt <= attempts:
        return _fail(f"run {job['job_id']} has {attempts} attempt(s), not {args.attempt}", 1)
    path = _log_path(job, args.node, args.attempt)
    if not args.follow:
        if not os.path.exists(path):
            return _fail(f"run {job['job_id']} has no log for node {args.node} (yet)", 1)
        _copy_from(path, 0)
        return 0
    pos = 0
    while True:
        pos = _copy_from(path, pos)
        if status(job) in ENDED:
            _copy_from(path, pos)
            return 0
        job = http.request("GET", f"/api/v1/jobs/{job['job_id']}?wait=0.5", timeout=60)


def _cancel(args: argparse.Namespace) -> int:
    job = _job(args.id)
    res = http.request("POST", "/api/v1/jobs/cancel", {"ids": [job["job_id"]], "uid": os.getuid()})
    bad = [r for r in res["results"] if not r["ok"]]
    if bad:
        return _fail(f"run {job['job_id']}: {bad[0]['error']}", 1)
    print(f"run {job['job_id']} cancelled")
    return 0


def parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="AI Runtime commands on slurmlet")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    r = sub.add_parser("run", help="submit a workload YAML")
    r.add_argument("--file", "-f", required=True)
    r.add_argument("--override", action="append", metavar="KEY.PATH=VALUE")
    r.add_argument("--watch", action="store_true", help="follow the run until it ends; exit with its result")
    r.add_argument("--dry-run", action="store_true", help="validate and show the job, submit nothing")
    ls = sub.add_parser("list", help="runs (and every other job)")
    ls.add_argument("what", nargs="?", choices=["runs"], default="runs")
    g = sub.add_parser("get", help="one run")
    g.add_argument("args", nargs="+", metavar="[run] ID")
    g.add_argument("--json", action="store_true")
    lg = sub.add_parser("logs", help="a node's log")
    lg.add_argument("id")
    lg.add_argument("--node", type=int, default=0)
    lg.add_argument("--follow", "-f", action="store_true")
    lg.add_argument("--attempt", type=int, help="which attempt (default: the latest; the first is 1)")
    c = sub.add_parser("cancel", help="cancel a run")
    c.add_argument("id")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.cmd == "run":
        return _run(args)
    if args.cmd == "list":
        return _list(args)
    if args.cmd == "get":
        words = args.args
        if words[0] == "run" and len(words) == 2:
            words = words[1:]
        if len(words) != 1:
            return _fail("usage: air get [run] ID [--json]")
        args.id = words[0]
        return _get(args)
    if args.cmd == "logs":
        return _logs(args)
    return _cancel(args)
