"""`air`: workload YAML runs on a real 2-node cluster; watch, list, get, logs, cancel, retries, errors."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import ROOT, Cluster, serve, wait_until

pytestmark = pytest.mark.e2e

YAML = """experiment_name: hello-air
compute: {num_accelerators: 4, accelerator_type: GPU_2xH100}
code_source: {root_path: .}
command: |
  echo "node $NODE_RANK of $NUM_NODES lws=$LOCAL_WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT code=$CODE_SOURCE_PATH $GREETING"
env_variables: {GREETING: hi}
timeout_minutes: 5
"""


@pytest.fixture(scope="module")
def air_cluster(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("air"), nodes=2, cpus=4, gpus=2))


def air(c: Cluster, *args: str, timeout: float = 120):  # a CompletedProcess
    return c.run(["air", *args], timeout=timeout)


def test_run_watch_list_get_logs(air_cluster: Cluster):
    c = air_cluster
    (c.workdir / "hello.yaml").write_text(YAML)
    r = air(c, "run", "--file", "hello.yaml", "--watch")
    assert r.returncode == 0, r.stderr
    run_id = int(r.stdout.splitlines()[0])
    addr_port = r.stdout.splitlines()[1].split("master=")[1].split()[0]
    code = [c.root / "spool" / f"node{n}" / "runs" / str(run_id) / "code" for n in (1, 2)]  # unpacked per node
    assert r.stdout.splitlines()[1:] == [f"node 0 of 2 lws=2 master={addr_port} code={code[0]} hi"]
    assert f"[air] run {run_id}: SUCCEEDED" in r.stderr
    logs = air(c, "logs", str(run_id), "--node", "1")
    assert logs.stdout == f"node 1 of 2 lws=2 master={addr_port} code={code[1]} hi\n"
    got = json.loads(air(c, "get", "run", str(run_id), "--json").stdout)
    assert (got["status"], got["attempts"], got["nodes"], got["accelerators"]) == \
        ("SUCCEEDED", 1, ["node1", "node2"], "4xH100")
    line = next(x for x in air(c, "list", "runs").stdout.splitlines() if x.startswith(f"{run_id} "))
    assert line.split()[:4] == [str(run_id), "hello-air", "SUCCEEDED", "4xH100"]
    # an air run is a job like any other
    r = c.run(f"sacct -j {run_id} -X -n -P -o JobID,JobName,State,NNodes")
    assert r.stdout.strip() == f"{run_id}|hello-air|COMPLETED|2"


def test_overrides_retries_and_cancel(air_cluster: Cluster):
    c = air_cluster
    (c.workdir / "fail.yaml").write_text(YAML.replace('echo "node', 'exit 3; echo "node') + "max_retries: 1\n")
    r = air(c, "run", "-f", "fail.yaml", "--watch", "--override", "experiment_name=failing")
    assert r.returncode == 1
    run_id = int(r.stdout.splitlines()[0])
    got = json.loads(air(c, "get", str(run_id), "--json").stdout)
    assert (got["experiment"], got["status"], got["attempts"]) == ("failing", "FAILED", 2)
    (c.workdir / "long.yaml").write_text(YAML.replace('echo "node', 'sleep 300; echo "node'))
    run_id = int(air(c, "run", "-f", "long.yaml").stdout)
    wait_until(lambda: json.loads(air(c, "get", str(run_id), "--json").stdout)["status"] == "RUNNING",
               what="the run to start")
    assert air(c, "cancel", str(run_id)).stdout == f"run {run_id} cancelled\n"
    wait_until(lambda: json.loads(air(c, "get", str(run_id), "--json").stdout)["status"] == "CANCELLED",
               what="the run to be cancelled")


@pytest.mark.parametrize("text, override, message", [
    ("experiment_name: x\ncompute: {num_accelerators: 3, accelerator_type: GPU_2xH100}\ncommand: 'true'\n", None,
     "compute.num_accelerators: 3 is not a multiple of the 2 accelerators per node of GPU_2xH100"),
    (YAML + "colour: blue\n", None, "colour: unknown field"),
    (YAML, "compute.accelerator_type=H100", "compute.accelerator_type: String should match pattern"),
    (YAML, "timeout_minutes=-5", "timeout_minutes: Input should be greater than or equal to 1"),
    ("experiment_name: x\ncompute: {num_accelerators: 2, accelerator_type: GPU_2xH100}\n", None, "command: Field required"),
])
def test_bad_workloads_name_the_field_and_submit_nothing(air_cluster: Cluster, text, override, message):
    c = air_cluster
    (c.workdir / "bad.yaml").write_text(text)
    def ids() -> set[int]:
        return {j["job_id"] for j in c.api("GET", "/api/v1/jobs?history=1")["jobs"]}
    before = ids()
    args = ["run", "-f", "bad.yaml"] + (["--override", override] if override else [])
    r = air(c, *args)
    assert r.returncode == 1 and r.stderr.startswith("air: error: invalid workload: ") and message in r.stderr, r.stderr
    assert ids() == before  # nothing submitted


def test_unreadable_files_and_bad_yaml(air_cluster: Cluster):
    c = air_cluster
    r = air(c, "run", "-f", "missing.yaml")
    assert (r.returncode, r.stderr) == (2, "air: error: cannot read missing.yaml: No such file or directory\n")
    (c.workdir / "broken.yaml").write_text("experiment_name: [unclosed\n")
    r = air(c, "run", "-f", "broken.yaml")
    assert r.returncode == 2 and r.stderr.startswith("air: error: broken.yaml: invalid YAML: ") and "line 2" in r.stderr
    r = air(c, "run", "-f", "broken.yaml", "--override", "novalue")
    assert r.returncode == 2


def test_dry_run_shows_the_job(air_cluster: Cluster):
    c = air_cluster
    (c.workdir / "hello.yaml").write_text(YAML)
    r = air(c, "run", "-f", "hello.yaml", "--dry-run")
    assert r.returncode == 0
    assert r.stdout.splitlines()[:5] == ["#!/bin/bash", "#SBATCH --job-name=hello-air", "#SBATCH --nodes=2",
                                         "#SBATCH --ntasks-per-node=1", "#SBATCH --gpus-per-node=2"]


def test_the_guides_train_yaml_runs_with_real_torch(air_cluster: Cluster):
    pytest.importorskip("torch")
    c = air_cluster
    work = c.workdir / "sft"
    shutil.copytree(ROOT / "examples" / "llama-sft", work)
    r = c.run(["air", "run", "-f", "train.yaml", "--watch", "--override", "compute.accelerator_type=GPU_2xH100",
               "--override", "compute.num_accelerators=4", "--override", "env_variables.STEPS=30",
               # the guide's transformers and datasets are not needed by this train.py: no download here
               "--override", "environment.dependencies=[]"],
              cwd=work, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "process group: backend gloo, world size 4, all_reduce(sum of ranks) = 6 (expected 6)" in r.stdout
    assert "done" in r.stdout.splitlines()


def test_an_accelerator_model_no_node_has_is_refused(air_cluster: Cluster):
    c = air_cluster
    (c.workdir / "a100.yaml").write_text(YAML.replace("GPU_2xH100", "GPU_2xA100"))
    r = air(c, "run", "-f", "a100.yaml")
    assert (r.returncode, r.stderr) == (1, "air: error: Requested node configuration is not available\n")
    r = c.run(["sbatch", "--gres=gpu:a100:1", "--wrap", "true"])
    assert (r.returncode, r.stderr) == (1, "sbatch: error: Batch job submission failed: "
                                           "Requested node configuration is not available\n")


def test_secrets_reach_the_command_and_nowhere_else(air_cluster: Cluster):
    c = air_cluster
    value = "s3cr3t-value-42"
    r = c.run(["slurmlet", "secrets", "put", "team", "hf"], input=value + "\n")
    assert (r.returncode, r.stdout) == (0, "stored team/hf\n")
    assert c.run(["slurmlet", "secrets", "list"]).stdout == "team/hf\n"
    (c.workdir / "sec.yaml").write_text(YAML.replace('echo "node', 'echo "token=$TOKEN"; echo "node')
                                        + "secrets: {TOKEN: team/hf}\n")
    r = air(c, "run", "-f", "sec.yaml", "--watch")
    assert r.returncode == 0, r.stderr
    run_id = int(r.stdout.splitlines()[0])
    assert f"token={value}" in r.stdout.splitlines()
    assert value not in air(c, "get", str(run_id), "--json").stdout
    assert value not in json.dumps(c.api("GET", f"/api/v1/jobs/{run_id}"))
    assert value not in json.dumps(c.api("GET", "/api/v1/jobs?history=1")) + json.dumps(c.api("GET", "/api/v1/secrets", signed=True))
    for log in c.root.glob("*.log"):
        assert value not in log.read_text(errors="replace"), log.name
    # the run's steps carried it to the nodes; once they ended, the database keeps it only as the secret
    import sqlite3
    db = sqlite3.connect(c.root / "state" / "slurmlet.db")
    try:
        steps = db.execute("SELECT request FROM steps WHERE job_id = ?", (run_id,)).fetchall()
    finally:
        db.close()
    assert steps and not any(value in r[0] for r in steps)
    # a reference to a secret that is not there is refused, naming the field
    (c.workdir / "nosec.yaml").write_text(YAML + "secrets: {TOKEN: team/none}\n")
    r = air(c, "run", "-f", "nosec.yaml")
    assert r.returncode == 1 and "secrets.TOKEN: no secret team/none" in r.stderr
    assert c.run(["slurmlet", "secrets", "delete", "team", "hf"]).stdout == "deleted team/hf\n"
    r = c.run(["slurmlet", "secrets", "delete", "team", "hf"])
    assert (r.returncode, r.stderr) == (1, "slurmlet: error: no secret team/hf\n")


def test_code_source_is_packed_uploaded_and_unpacked_on_each_node(air_cluster: Cluster):
    c = air_cluster
    proj = c.workdir / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg" / "data.txt").write_text("payload\n")
    (proj / ".git").mkdir()
    (proj / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (proj / "run.yaml").write_text(YAML.replace('echo "node $NODE_RANK', 'cd "$CODE_SOURCE_PATH"; cat pkg/data.txt; '
                                                'ls -a | tr "\\n" " "; echo; echo "node $NODE_RANK'))
    r = c.run(["air", "run", "-f", "proj/run.yaml", "--watch"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1] == "payload" and ".git" not in lines[2].split() and "pkg" in lines[2].split()


def test_environment_dependencies_become_a_cached_virtual_environment_on_each_node(air_cluster: Cluster):
    c = air_cluster
    proj = c.workdir / "envproj"
    proj.mkdir()
    (proj / "requirements.txt").write_text("tabulate\n")
    (proj / "check.py").write_text('import sys\nimport six, tabulate  # noqa: F401\nprint("/envs/" in sys.prefix)\n')
    script = 'python "$CODE_SOURCE_PATH/check.py"; echo "node $NODE_RANK"'
    (proj / "env.yaml").write_text(YAML.replace('echo "node $NODE_RANK of $NUM_NODES lws=$LOCAL_WORLD_SIZE '
                                                'master=$MASTER_ADDR:$MASTER_PORT code=$CODE_SOURCE_PATH $GREETING"',
                                                script)
                                   + "environment: {version: '4', dependencies: [six, -r requirements.txt]}\n")
    before = set((c.root / "spool").glob("node*/envs/*/*/.ready"))
    r = c.run(["air", "run", "-f", "envproj/env.yaml", "--watch"], timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout
    assert r.stdout.splitlines()[1:] == ["True", "node 0"]  # python is the environment's (.../envs/...)
    built = sorted(set((c.root / "spool").glob("node*/envs/*/*/.ready")) - before)
    assert len(built) == 2  # one environment per node (under its user's envs/u<uid>/), cached for the next run
    r = c.run(["air", "run", "-f", "envproj/env.yaml", "--watch"], timeout=300)
    assert r.returncode == 0 and sorted(set((c.root / "spool").glob("node*/envs/*/*/.ready")) - before) == built
    (proj / "bad.yaml").write_text(YAML + "environment: {dependencies: [no-such-package-slurmlet-xyz]}\n")
    r = c.run(["air", "run", "-f", "envproj/bad.yaml", "--watch"], timeout=300)
    assert r.returncode == 1


def test_a_failed_first_attempt_is_retried_and_each_attempt_has_its_log(air_cluster: Cluster):
    c = air_cluster
    cmd = 'echo "attempt ${SLURM_RESTART_COUNT:-0}"; [ -n "$SLURM_RESTART_COUNT" ] || exit 7; echo recovered'
    (c.workdir / "retry.yaml").write_text(YAML.replace('echo "node $NODE_RANK of $NUM_NODES lws=$LOCAL_WORLD_SIZE '
                                                       'master=$MASTER_ADDR:$MASTER_PORT code=$CODE_SOURCE_PATH '
                                                       '$GREETING"', cmd) + "max_retries: 2\n")
    r = air(c, "run", "-f", "retry.yaml", "--watch")
    assert r.returncode == 0, r.stderr
    run_id = int(r.stdout.splitlines()[0])
    assert r.stdout.splitlines()[1:] == ["attempt 0", "attempt 1", "recovered"]
    assert "(attempt 2)" in r.stderr and f"[air] run {run_id}: SUCCEEDED" in r.stderr
    got = json.loads(air(c, "get", str(run_id), "--json").stdout)
    assert (got["status"], got["attempts"]) == ("SUCCEEDED", 2)
    assert air(c, "logs", str(run_id), "--node", "1", "--attempt", "1").stdout == "attempt 0\n"
    assert air(c, "logs", str(run_id), "--node", "1").stdout == "attempt 1\nrecovered\n"
    r = air(c, "logs", str(run_id), "--attempt", "3")
    assert (r.returncode, r.stderr) == (1, f"air: error: run {run_id} has 2 attempt(s), not 3\n")


def test_mlflow_tracks_parameters_status_node_metrics_and_logs(air_cluster: Cluster, tmp_path):
    mlflow = pytest.importorskip("mlflow")
    c = air_cluster
    uri = f"file://{tmp_path}/mlruns"
    (c.workdir / "ml.yaml").write_text(YAML.replace("experiment_name: hello-air", "experiment_name: tracked")
                                       .replace('echo "node', 'sleep 1; echo "node')
                                       .replace("env_variables: {GREETING: hi}",
                                                "env_variables: {GREETING: hi, SLURMLET_MLFLOW_INTERVAL: '0.2'}"))
    r = c.run(["air", "run", "-f", "ml.yaml", "--watch"], env={"MLFLOW_TRACKING_URI": uri}, timeout=180)
    assert r.returncode == 0, r.stderr
    run_id = r.stdout.splitlines()[0]
    import os
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("tracked")
    (run,) = client.search_runs([exp.experiment_id])
    assert run.info.status == "FINISHED" and run.data.tags["slurmlet.job_id"] == run_id
    assert run.data.params["accelerator_type"] == "GPU_2xH100" and run.data.params["attempt"] == "1"
    assert {"node0.cpu_percent", "node1.cpu_percent", "node0.memory_percent", "exit_code"} <= set(run.data.metrics)
    logs = sorted(a.path for a in client.list_artifacts(run.info.run_id, "logs"))
    assert logs == [f"logs/{run_id}-node-0-a1.log", f"logs/{run_id}-node-1-a1.log"]
    # the dashboard's Runs page: where the attempt's MLflow run is, and each node's log
    import base64
    import json
    got = c.api("GET", f"/api/v1/jobs/{run_id}/output?which=mlflow", signed=True)
    assert json.loads(base64.b64decode(got["data"])) == {"uri": uri, "experiment_id": exp.experiment_id,
                                                         "run_id": run.info.run_id, "attempt": 1}
    log1 = c.api("GET", f"/api/v1/jobs/{run_id}/output?air_node=1&attempt=1", signed=True)
    assert log1["node"] == c.job(int(run_id))["node_list"][1] and log1["path"].endswith(f".air/{run_id}-node-1-a1.log")
    assert "node" in base64.b64decode(log1["data"]).decode()


def test_a_retried_air_run_is_the_same_run(air_cluster: Cluster, monkeypatch: pytest.MonkeyPatch):
    """air run sends an Idempotency-Key (and retries once on a lost connection): the same key and
    workload again is the same run; the key with another workload is refused."""
    import os

    import yaml

    from slurmlet.cli import http
    c = air_cluster
    monkeypatch.setenv("SLURMLET_KEY_FILE", str(c.key_file))  # signed as the CLI signs
    body = {"workload": dict(yaml.safe_load(YAML), experiment_name="retried"), "cwd": str(c.workdir),
            "user": "root", "uid": os.getuid(), "gid": os.getgid(), "group": "0", "host": "h"}
    key = {"Idempotency-Key": "air-retry-1"}
    first = http.request("POST", "/api/v1/runs", body, url=c.url, headers=key)["job_id"]
    again = http.request("POST", "/api/v1/runs", body, url=c.url, headers=key)["job_id"]
    assert again == first
    assert [r[0] for r in c.api("GET", "/api/v1/runs")["runs"] if r[1] == "retried"] == [first]  # rows: id, name, ...
    other = dict(body, workload=dict(body["workload"], experiment_name="other"))
    with pytest.raises(http.ControllerError, match="Idempotency-Key: already used for a different request"):
        http.request("POST", "/api/v1/runs", other, url=c.url, headers=key)
    c.run(["scancel", str(first)])
